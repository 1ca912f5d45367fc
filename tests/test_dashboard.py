"""`torchpulse dashboard`, the main job: which commits it measures, the re-measure passes, the
roll-back of an interrupted run, publishing, and the exit code. asv's `run` is scripted here
(the e2e test of `torchpulse init` runs the whole job with the real asv)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from asvproject import tree_bytes

from torchpulse import dashboard
from torchpulse.analysis import remeasure
from torchpulse.analysis.model import OK, TOO_FEW
from torchpulse.analysis.settings import Settings
from torchpulse.cli import main
from torchpulse.evaluation import synthetic
from torchpulse.results.project import Project

COMMITS = 12


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A synthetic project whose planted steps sit at its newest commits (built once)."""
    path = tmp_path_factory.mktemp("dashboard") / "project"
    truths = synthetic.build(path, commits=COMMITS, per_cell=1, noise_series=2, seed=3,
                             distances=(1,))
    return path, truths


@pytest.fixture
def project(built, tmp_path):
    """A fresh copy of the built project for each test, which may change it."""
    path = tmp_path / "project"
    shutil.copytree(built[0], path)
    return Project.load(path / "asv.conf.json")


class FakeAsv:
    """asv, scripted: every call is logged; a `run` of commits not yet stored in full (no
    --skip-existing-successful) draws those commits' benchmarks again, as a re-measurement
    stores a new run; `run` exits ``rc``."""

    def __init__(self, truths, rc=0):
        self.calls, self.truths, self.rc = [], truths, rc

    def __call__(self, args, env):
        self.calls.append((list(args), dict(env)))
        if args[0] == "run" and "--skip-existing-successful" not in args:
            path = next(a[len("HASHFILE:"):] for a in args if a.startswith("HASHFILE:"))
            commits = open(path).read().split()
            bench = args[args.index("--bench") + 1]
            names = {t.benchmark for t in self.truths if re.match(bench, t.benchmark)}
            synthetic.remeasure(self.project_path, self.truths, commits, names, seed=7)
        return self.rc if args[0] == "run" else 0

    def runs(self):
        return [args for args, _ in self.calls if args[0] == "run"]


def fake_asv(project, truths, rc=0):
    fake = FakeAsv(truths, rc)
    fake.project_path = project.root
    return fake


def lines():
    said = []
    return said, said.append


def test_the_newest_commits_are_measured_then_steps_seen_once_again_then_judged(project, built):
    asv = fake_asv(project, built[1])
    said, say = lines()
    outcome = dashboard.run(project, dashboard.Options(preset="smoke", publish=False),
                            asv=asv, say=say)
    history = synthetic.history(project.root)
    machine, first, *again = asv.calls
    assert machine[0][:2] == ["machine", "--yes"]
    assert first[1]["TORCHPULSE_PRESET"] == "smoke"
    assert "--skip-existing-successful" in first[0] and "--record-samples" in first[0]
    assert (project.root / dashboard.COMMITS_FILE).read_text().split() == history[-5:]
    assert outcome.measured == tuple(history[-5:])
    # the planted steps at the newest commit rest on one run: measured once more, once
    assert len(again) == 1, said
    assert (project.root / dashboard.REMEASURE_FILE).read_text().split() == history[-1:]
    assert "synthetic\\.Step" in again[0][0][again[0][0].index("--bench") + 1]
    assert any("pass 1 of 2" in line for line in said)
    ledger = (project.root / ".asv" / "confirmed.txt").read_text().splitlines()
    assert ledger and all(line.startswith(history[-1]) for line in ledger)
    # they were measured again and still stand: regressions, measured twice
    assert outcome.exit_code == 1
    at_newest = [a for a in outcome.report.alerts if a.commit == history[-1]]
    assert at_newest and all(a.confirmed for a in at_newest)
    assert "== regression alerts" in said and "measured twice" in "\n".join(said)


def test_steps_are_measured_again_only_when_the_users_threshold_would_report_them(project,
                                                                                   built):
    """The re-measure planning judges with the dashboard's settings: with --threshold 0.9
    the planted steps (+6 % and up) are not worth an alert, so none is confirmed; at the
    default 5 % they were (the plan ignored the user's threshold)."""
    asv = fake_asv(project, built[1])
    said, say = lines()
    outcome = dashboard.run(project, dashboard.Options(
        publish=False, settings=Settings(threshold=0.9)), asv=asv, say=say)
    _machine, _first, *again = asv.calls
    assert again == [], said
    assert not (project.root / ".asv" / "confirmed.txt").exists()
    assert outcome.report.alerts == [] and outcome.exit_code == 0


def test_what_each_instruction_count_did_is_said_after_asv_and_nothing_else_from_its_file(
        project, built):
    """asv keeps a count's output to itself: the suite appends a line per count to the file
    the dashboard names, and the dashboard says them once asv is done. A line the suite did
    not write (a commit that is markup, an escape sequence, another shape) is not said."""
    from torchpulse.instructions import summary

    asv, seen = fake_asv(project, built[1]), []

    def writing(args, env):
        if args[0] == "run" and "--skip-existing-successful" in args:
            path = env[summary.ENV]
            seen.append(path)
            summary.write(summary.Summary("ab" * 20, 72, 0, 1, 187.4), env)
            summary.write(summary.Summary("cd" * 20, 0, 72, 0, 2.0), env)
            summary.write(summary.Summary("", 0, 0, 0, 0.5, True), env)
            with open(path, "a") as log:
                log.write('{"commit": "<script>alert(1)</script>", "counted": 1, "reused": 0,'
                          ' "failed": 0, "seconds": 1, "unavailable": false}\n'
                          '{"commit": "ef", "counted": "\u001b[31m", "reused": 0}\nnot json\n'
                          '{"commit": "abcdef12", "counted": true, "reused": 0, "failed": 0,'
                          ' "seconds": 1, "unavailable": false}\n')
        return asv(args, env)

    said, say = lines()
    dashboard.run(project, dashboard.Options(publish=False), asv=writing, say=say)
    counts = [line for line in said if "instructions at" in line]
    assert counts == [
        "   instructions at abababab: 72 counted in 3 min 07 s, 1 failed (the site shows them)",
        "   instructions at cdcdcdcd: 72 reused (nothing they are made of changed since an "
        "earlier count)",
        "   instructions at this commit: not counted (counting is unavailable on this run: "
        "docs/instructions.md says what it needs)"]
    assert not any("<" in line or "\x1b" in line for line in said)
    assert seen and not any(os.path.exists(path) for path in seen)  # made, then removed


@pytest.mark.parametrize("device, runs, skips", [
    ("cpu", ["bench_rnns.LSTM.time_forward", "bench_autograd.FunctionalAutograd.time_task",
             "bench_instructions.Instructions.track_instructions", "_canary.MachineCanary",
             "bench_compile.CompiledModel.track_step_time"],
     ["bench_gpu.Workloads.track_kernels", "bench_gpu.MachineCanary",
      "external.bench_fastrnns.Fastrnns.time_forward"]),
    ("cuda", ["bench_gpu.Workloads.track_kernels", "bench_gpu.MachineCanary",
              "_canary.MachineCanary", "bench_compile.CompiledModel.track_step_time"],
     ["bench_rnns.LSTM.time_forward", "bench_cnns.MachineCanary",
      "bench_autograd.FunctionalAutograd.time_task",
      "bench_instructions.Instructions.track_instructions",
      "external.bench_fastrnns.Fastrnns.time_forward"]),
])
def test_the_main_job_runs_the_suites_that_measure_on_its_device(project, built, monkeypatch,
                                                               device, runs, skips):
    """A suite that would only skip on this device is left out: a skip costs asv a process
    a benchmark (on CUDA bench_gpu measures every workload, on the CPU it skips)."""
    import re

    monkeypatch.setenv("TORCHPULSE_DEVICE", device)
    asv = fake_asv(project, built[1])
    dashboard.run(project, dashboard.Options(publish=False), asv=asv, say=lambda _: None)
    first = asv.runs()[0]
    regex = first[first.index("--bench") + 1]
    assert [n for n in runs if not re.search(regex, n)] == []
    assert [n for n in skips if re.search(regex, n)] == []


def test_ranges_name_the_commits_and_bad_ones_are_refused(project):
    history = synthetic.history(project.root)
    options = dashboard.Options(ranges=(f"{history[2]}^!", f"{history[6]}..{history[8]}"))
    assert dashboard.commits_to_measure(project, options) == [history[2], *history[7:9]]
    assert dashboard.commits_to_measure(project, dashboard.Options(newest=100)) == history
    for bad in ("nosuchrev..HEAD", "--all", f"{history[3]}..{history[3]}"):
        with pytest.raises(dashboard.DashboardError):
            dashboard.commits_to_measure(project, dashboard.Options(ranges=(bad,)))


@pytest.mark.parametrize("planned, passes", [(0, 0), (1, 1), (5, 2)])
def test_re_measurement_takes_two_passes_at_most(project, built, monkeypatch, planned, passes):
    """What the canary marks disturbed is measured again; what is disturbed after that once
    more; then the alert, whatever is left."""
    calls = []
    commit = synthetic.history(project.root)[-1]

    def plan(proj, **kwargs):
        calls.append(kwargs)
        left = len(calls) <= planned
        return remeasure.Plan(remeasure.Remeasure((commit,) if left else (), ("synthetic.Noise",)),
                              ("disturbed",) if left else (), kwargs["done"], False)

    monkeypatch.setattr(remeasure, "plan", plan)
    asv = fake_asv(project, built[1])
    dashboard.run(project, dashboard.Options(publish=False), asv=asv, say=lambda _: None)
    assert len(asv.runs()) == 1 + passes
    assert len(calls) == min(planned + 1, 2)
    assert all(c["window"] == set(synthetic.history(project.root)[-5:]) for c in calls)


def test_a_failed_benchmark_still_publishes_and_alerts_then_exits_3(project, built):
    asv = fake_asv(project, built[1], rc=2)
    said, say = lines()
    outcome = dashboard.run(project, dashboard.Options(publish=True), asv=asv, say=say)
    assert (project.html_dir / "torchpulse.html").is_file()
    assert outcome.failed and "== regression alerts" in said
    assert outcome.exit_code == 1  # a regression outranks a failed benchmark
    quiet = dataclass_replace(outcome)
    assert quiet.exit_code == dashboard.EXIT_BENCHMARK_FAILED


def test_the_site_judges_with_the_settings_of_the_alert_beside_it(project, built):
    """Every place says the same thing: a dashboard run with its own thresholds publishes
    the verdicts its printed alert gives, not the defaults'."""
    import json

    asv = fake_asv(project, built[1])
    outcome = dashboard.run(project, dashboard.Options(
                                publish=True, settings=Settings(threshold=0.9,
                                                                count_threshold=0.5)),
                            asv=asv, say=lambda _: None)
    site = json.loads((project.html_dir / "torchpulse-alerts.json").read_text())
    assert site["thresholds"]["time"] == 0.9 and site["thresholds"]["count"] == 0.5
    assert [(a["benchmark"], a["commit"]) for a in site["alerts"]] == [
        (a.key.benchmark, a.commit) for a in outcome.report.alerts]
    assert "threshold 90%" in (project.html_dir / "torchpulse.html").read_text()


def test_the_verdicts_after_the_last_measurement_are_judged_once_for_site_and_alert(
        project, built, monkeypatch):
    """After its measurements the dashboard judges every series once and hands that report
    to the site; narrowed to a machine, the site (every machine) is judged on its own."""
    from torchpulse.site import summary

    calls, sites = [], []
    # the plans of what to measure again judge on their own (the measurements change)
    monkeypatch.setattr(remeasure, "plan", lambda proj, **k: remeasure.Plan(
        remeasure.Remeasure((), ()), (), k["done"], False))
    real_run, real_build = dashboard.pipeline.run, summary.build
    monkeypatch.setattr(dashboard.pipeline, "run",
                        lambda *a, **k: calls.append(k) or real_run(*a, **k))
    monkeypatch.setattr(summary, "build",
                        lambda *a, **k: sites.append(k.get("report")) or real_build(*a, **k))
    asv = fake_asv(project, built[1])
    outcome = dashboard.run(project, dashboard.Options(publish=True, newest=1), asv=asv,
                            say=lambda _: None)
    assert len(calls) == 1 and sites == [outcome.report]
    calls.clear(), sites.clear()
    dashboard.run(project, dashboard.Options(publish=True, newest=1, machine="synthetic"),
                  asv=asv, say=lambda _: None)
    assert [k["machine"] for k in calls] == ["synthetic"] and sites == [None]


def dataclass_replace(outcome):
    import dataclasses

    report = dataclasses.replace(outcome.report, alerts=[])
    return dataclasses.replace(outcome, report=report)


@pytest.mark.parametrize("stop", ["interrupt", "killed"])
def test_an_interrupted_run_leaves_the_results_as_they_were(project, built, stop):
    """Ctrl-C (or a killed asv) in the middle of a run: the files it wrote are rolled back,
    a new one removed, a changed one restored; nothing else is touched."""
    before = tree_bytes(project.results_dir)
    newest = synthetic.history(project.root)[-1]
    stored = next(project.results_dir.glob(f"*/{newest[:8]}-*.json"))
    unrelated = project.results_dir / "notes.txt"  # not asv's: never touched
    unrelated.write_text("mine")
    before["notes.txt"] = b"mine"

    def asv(args, env):
        if args[0] != "run":
            return 0
        stored.write_text("{half a fi")
        (stored.parent / "0123abcd-new.json").write_text("{}")
        if stop == "interrupt":
            raise KeyboardInterrupt
        return -9

    said, say = lines()
    expected = KeyboardInterrupt if stop == "interrupt" else dashboard.DashboardError
    with pytest.raises(expected):
        dashboard.run(project, dashboard.Options(publish=False), asv=asv, say=say)
    assert tree_bytes(project.results_dir) == before
    assert any("rolled back (1 file(s) restored, 1 removed)" in line for line in said), said
    # rolled back, the commits are whole as before: nothing for the next dashboard to redo
    assert not (project.root / dashboard.IN_FLIGHT_FILE).exists()


def test_series_left_without_a_verdict_are_counted_with_their_commits():
    history = SimpleNamespace(position={"a": 0, "b": 1, "c": 2})

    def checked(status, disturbed, newest):
        return SimpleNamespace(status=status, disturbed=disturbed, newest_disturbed=newest)

    report = SimpleNamespace(history=history, checked=[
        checked(TOO_FEW, ("c", "a"), True),  # lost its verdict
        checked(OK, ("b",), False),  # judged without its disturbed point
        checked(OK, ("c",), True),  # judged, but not at its newest commit
        checked(TOO_FEW, (), False),  # simply young
    ])
    assert dashboard._unjudged(report, {"a", "b", "c"}) == (2, ("a", "c"))
    assert dashboard._unjudged(report, {"b"}) == (0, ())


def test_cli_bad_range_is_one_line_and_nothing_is_measured(project, capsys):
    before = tree_bytes(project.results_dir)
    code = main(["dashboard", "--config", str(project.config), "--no-publish",
                 "nosuchrev..HEAD"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nosuchrev" in err
    assert tree_bytes(project.results_dir) == before


@pytest.mark.parametrize("args, words", [
    (["--bench", "("], ("--bench", "not a regular expression")),
    (["--since", "garbage"], ("--since", "garbage")),
])
def test_cli_bad_bench_or_since_is_one_line_before_anything_is_measured(project, capsys,
                                                                        monkeypatch, args,
                                                                        words):
    asv_calls = []
    monkeypatch.setitem(dashboard.run.__kwdefaults__, "asv",
                        lambda *a: asv_calls.append(a) or 0)
    before = tree_bytes(project.results_dir)
    code = main(["dashboard", "--config", str(project.config), "--no-publish", *args,
                 "HEAD^!"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and all(w in err for w in words), err
    assert asv_calls == [] and tree_bytes(project.results_dir) == before


def test_a_second_dashboard_on_the_project_waits_for_the_first(project, built):
    """Two CI jobs on one runner: the second waits, saying so, and measures nothing until
    the first has finished (they shared the commit lists and rolled back each other's
    results); the lock goes with the process that held it."""
    import fcntl
    import threading

    (project.root / dashboard.LOCK_FILE).parent.mkdir(exist_ok=True)
    holder = os.open(project.root / dashboard.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)  # the first dashboard, mid-run
    asv = fake_asv(project, built[1])
    said, waiting = [], threading.Event()

    def say(line):
        said.append(line)
        if line.startswith("== waiting"):
            waiting.set()

    done = []
    second = threading.Thread(target=lambda: done.append(dashboard.run(
        project, dashboard.Options(publish=True), asv=asv, say=say)))
    second.start()
    try:
        assert waiting.wait(timeout=300), said
        assert asv.calls == [] and not done  # waiting: nothing measured
    finally:
        os.close(holder)  # the first one ends
    second.join(timeout=600)
    assert not second.is_alive() and done and asv.calls
    assert "another dashboard is running" in said[0]



def test_a_dashboard_killed_while_holding_the_lock_does_not_block_the_next(project, built):
    """A holder killed with SIGKILL (an OOM kill, a runner reaping the job) never released
    anything itself: the next dashboard runs, without waiting."""
    path = project.root / dashboard.LOCK_FILE
    path.parent.mkdir(exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; "
         f"fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
    finally:
        holder.kill()
        holder.wait()
    asv, said = fake_asv(project, built[1]), []
    dashboard.run(project, dashboard.Options(publish=True), asv=asv, say=said.append)
    assert asv.calls and not any(line.startswith("== waiting") for line in said)


FAKE_ASV = """
import os, subprocess, sys, time
args = sys.argv[1:]
if args[0] != "run":
    sys.exit(0)
hashfile = next(a[len("HASHFILE:"):] for a in args if a.startswith("HASHFILE:"))
commit = open(hashfile).read().split()[0]
os.makedirs(os.environ["FAKE_RESULTS"], exist_ok=True)
with open(os.path.join(os.environ["FAKE_RESULTS"], commit[:8] + "-fake.json"), "w") as f:
    f.write("{}")  # a results file of this run, half done
late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["FAKE_STARTED"], "w") as f:
    f.write(str(late.pid))
time.sleep(600)
"""


def _dashboard_in_asv(project, tmp_path):
    """A `torchpulse dashboard` process whose asv (FAKE_ASV) has begun writing this run's
    results and waits: the process, the fake asv's script, and the file holding the pid of
    the process that asv started."""
    fake = tmp_path / "fake_asv.py"
    fake.write_text(FAKE_ASV)
    started = tmp_path / "started"
    env = {**os.environ, "TORCHPULSE_ASV": f"{sys.executable} {fake}",
           "FAKE_RESULTS": str(project.results_dir / "fakemachine"),
           "FAKE_STARTED": str(started)}
    proc = subprocess.Popen([sys.executable, "-m", "torchpulse.cli", "dashboard", "--config",
                             str(project.config), "--no-publish", "HEAD^!"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # generous: only for a dashboard that hangs
        while not started.exists() or not started.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.1)
    except BaseException:
        proc.kill()
        raise
    return proc, fake, started


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_cancelled_dashboard_stops_asv_and_everything_it_started_and_rolls_back(
        project, tmp_path, sig):
    """A CI runner cancelling the job (SIGTERM) or a closed terminal (SIGHUP) stops the
    dashboard as Ctrl-C does: asv's whole process group stopped (no benchmark process left
    to write results later), this run's results rolled back, exit 130."""
    before = tree_bytes(project.results_dir)
    proc, _, started = _dashboard_in_asv(project, tmp_path)
    try:
        late = int(started.read_text())
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "rolled back" in out
    assert tree_bytes(project.results_dir) == before  # the half-done file is gone
    # the process asv started is gone too (killed; at most a zombie until it is reaped)
    deadline = time.monotonic() + 60
    while _alive(late):
        assert time.monotonic() < deadline, f"process {late} outlived the dashboard"
        time.sleep(0.1)


def test_asv_machines_questions_are_shown_only_when_it_fails(tmp_path, capfd):
    """`asv machine --yes` prints thirty lines of questions and answers that ran into the
    dashboard's first line; they are kept, and shown when it fails. `asv run` streams."""
    fake = tmp_path / "fake_asv.py"
    fake.write_text("import os, sys\nprint('machine [vm]: os [Linux]: ram [1]:', sys.argv[1:])\n"
                    "sys.exit(int(os.environ['FAKE_RC']))\n")
    env = {**os.environ, "TORCHPULSE_ASV": f"{sys.executable} {fake}", "FAKE_RC": "0"}
    assert dashboard.run_asv(["machine", "--yes"], env) == 0
    assert "machine [vm]" not in "".join(capfd.readouterr())
    assert dashboard.run_asv(["machine", "--yes"], {**env, "FAKE_RC": "3"}) == 3
    assert "machine [vm]: os [Linux]: ram [1]: ['machine', '--yes']" in capfd.readouterr().err
    assert dashboard.run_asv(["run", "HEAD^!"], env) == 0
    assert "['run', 'HEAD^!']" in capfd.readouterr().out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_cli_refuses_an_output_inside_the_results(project, capsys):
    target = next(project.results_dir.glob("*/*-*.json"))
    before = target.read_bytes()
    code = main(["dashboard", "--config", str(project.config), "--output", str(target)])
    assert code == 2 and capsys.readouterr().err.count("\n") == 1
    assert target.read_bytes() == before
    assert json.loads(before)  # still asv's file


def test_an_import_while_the_dashboard_measures_waits_and_survives_its_roll_back(
        project, tmp_path):
    """`import` during a dashboard's asv run waits for the results lock (saying so) instead
    of writing between asv's files; the dashboard stopped (SIGTERM) rolls back its own
    writes only, and the import then stores its file and its benchmarks.json entry."""
    from paths import IMPORT_DATA

    dash, _, _ = _dashboard_in_asv(project, tmp_path)
    imp = None
    try:
        imp = subprocess.Popen([sys.executable, "-m", "torchpulse.cli", "import", "oss",
                                str(IMPORT_DATA / "oss.json"), "--unit", "ms", "--config",
                                str(project.config), "--commit", "HEAD", "--machine", "gpu1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waiting = imp.stderr.readline()  # said before it waits: the lock is the dashboard's
        assert "waiting for another command writing" in waiting
        assert imp.poll() is None
        dash.send_signal(signal.SIGTERM)
        out, _ = dash.communicate(timeout=300)
        _, err = imp.communicate(timeout=300)
    finally:
        for proc in (dash, imp):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert dash.returncode == 130 and "rolled back" in out
    assert imp.returncode == 0, err
    head = synthetic.history(project.root)[-1]
    (imported,) = project.results_dir.glob(f"gpu1/{head[:8]}-*.json")
    assert json.loads(imported.read_text())["commit_hash"] == head
    declared = json.loads((project.results_dir / "benchmarks.json").read_text())
    assert any(name.startswith("external.") for name in declared)
    assert not list((project.results_dir / "fakemachine").glob("*"))  # the run's own: gone


def test_commits_a_killed_dashboard_left_half_measured_are_measured_again_in_full(
        project, tmp_path):
    """kill -9 of a dashboard and its asv: no roll-back can run, and the results file asv
    had begun holds some rounds only. The next dashboard measures that commit again in
    full (no --skip-existing-successful) before the rest, and says why."""
    dash, fake, started = _dashboard_in_asv(project, tmp_path)
    dash.kill()  # then what it started, which holds its output open
    for pid in _processes_running(str(fake)) + [int(started.read_text() or 0)]:
        if pid:
            os.kill(pid, signal.SIGKILL)
    dash.communicate()
    head = synthetic.history(project.root)[-1]
    assert list((project.results_dir / "fakemachine").glob(f"{head[:8]}-*"))  # half written
    in_flight = project.root / ".asv" / "dashboard-in-flight.json"  # what names it
    marker = json.loads(in_flight.read_text()) if in_flight.is_file() else None
    recorder, measured = fake_asv(project, []), []

    def asv(args, env):  # the commits of each run, read while it runs
        if args[0] == "run":
            hashfile = next(a[len("HASHFILE:"):] for a in args if a.startswith("HASHFILE:"))
            measured.append((Path(hashfile).read_text().split(),
                             "--skip-existing-successful" in args))
        return recorder(args, env)

    said, say = lines()
    dashboard.run(project, dashboard.Options(publish=False), asv=asv, say=say)
    assert measured[0] == ([head], False)
    assert marker == {"machine": None, "commits": [head]}
    assert measured[1][1] and len(measured[1][0]) > 1
    assert any("measuring 1 commit(s) again in full" in line for line in said), said
    # measured in full now: a third dashboard does not measure it again
    recorder = fake_asv(project, [])
    dashboard.run(project, dashboard.Options(publish=False), asv=recorder, say=say)
    assert all("--skip-existing-successful" in args
               for args, _ in recorder.calls if args[0] == "run")


def _processes_running(text: str) -> list[int]:
    """The processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
