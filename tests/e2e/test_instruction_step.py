"""The instruction family's end-to-end proof: a commit that adds a little work to two models
(a finiteness check of the py LSTM's final state, about +3 % instructions; a multiplication, a
shape check and a forward-only op in the robust regression's loss, about +1.25 % of its vjp:
the default threshold's size).

Both versions of torchpulse are counted for real under callgrind (the changed one from a
patched copy of the package) and timed for real, alternating; their numbers fill a
33-commit history whose commit 20 is the change. The alert names that commit on the
instruction series, with the functions that grew; the same workload's wall time, measured
one call a commit as a quick CI run would, cannot resolve a step that size; bisect finds
the commit in at most 7 runs, on either series.

The unchanged version is counted twice, side by side with the changed one on one core: from
this checkout and from a clone at a longer path with another working directory and
environment. The two must agree within 0.1 %, and the first, counted again from the same
inputs, is taken back instead of counted."""

import concurrent.futures
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys

import pytest

from torchpulse import sizes
from torchpulse.autograd import choices as autograd_choices
from torchpulse.cli import main
from torchpulse.culprit.bisect import bisect
from torchpulse.culprit.runs import Run
from torchpulse.evaluation import project as evaluation_project
from torchpulse.fastrnns import choices as fastrnns_choices
from torchpulse.files import write_json_atomically
from torchpulse.instructions import count, profiles, windows
from torchpulse.results import asv_results
from torchpulse.workloads import registry

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("valgrind") is None,
                                 reason="needs valgrind (callgrind)")]

WORKLOAD = "rnns/py/forward"
AUTOGRAD = "autograd/ppl_robust_reg/vjp"
COUNTED = "bench_instructions.Instructions.track_instructions"
TIMED = "bench_rnns.LSTM.time_forward"
COMMITS, STEP = 33, 20
ORIGINAL = """        hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
        outputs += [hy]
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))
"""
CHANGED = """        hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
        outputs += [hy]
    for state in (hy, cy):  # the planted extra work
        if not torch.isfinite(state).all():
            raise ValueError("the LSTM's state is not finite")
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))
"""
# an elementwise op on the regression's mean (forward and backward), a shape check and one
# forward-only op: about +1.25 % of the vjp's 5.8 M instructions, a quarter of a percent
# clear of the default count threshold on either side of the test's bounds, so that a
# layout shift from an unrelated change (0.06 % on this ratio,
# experiments/diary/instructions.md) cannot carry it across (a multiplication alone:
# +0.98 %; with the shape check: +1.05 %)
AUTOGRAD_ORIGINAL = "        mu = x.mm(beta_v)\n"
AUTOGRAD_CHANGED = """        mu = x.mm(beta_v) * 1.0
        if mu.shape != (x.shape[0], 1):
            raise ValueError("the regression's mean has the wrong shape")
        torch.relu(beta_v.detach())
"""
# the wall time of one forward call of each version, the two versions alternating call by
# call in one process (the changed layer loaded from the patched file beside the original),
# so that whatever else loads the machine (the other test worker) weighs on both alike
TIMING = """
import dataclasses, functools, importlib.util, json, sys, time
import torch
from torchpulse import sizes
from torchpulse.fastrnns.runners import RUNNERS, Workload, functional_lstm_creator
from torchpulse.presets import Preset
spec = importlib.util.spec_from_file_location("changed_lstm", sys.argv[1])
changed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(changed)
torch.set_num_threads(1)
preset = Preset.from_sizes("instructions", sizes.INSTRUCTIONS["fastrnns"])
runner = RUNNERS["py"]
other = dataclasses.replace(runner, creator=functools.partial(
    functional_lstm_creator, layer_fn=changed.lstm_layer, script=False))
workloads = [Workload(runner, preset, "cpu"), Workload(other, preset, "cpu")]
for _ in range(20):
    for w in workloads:
        w.forward()
times = [[], []]
for i in range(max(int(sys.argv[2]), int(sys.argv[3]))):
    for k in (0, 1) if i % 2 else (1, 0):
        start = time.perf_counter()
        workloads[k].forward()
        times[k].append(time.perf_counter() - start)
print(json.dumps([times[0][:int(sys.argv[2])], times[1][:int(sys.argv[3])]]))
"""


def _copy_package(dest):
    """The installed torchpulse's sources into ``dest``/torchpulse, without the byte-code the
    suite's processes write beside them meanwhile."""
    import torchpulse

    shutil.copytree(os.path.dirname(torchpulse.__file__), dest / "torchpulse",
                    ignore=shutil.ignore_patterns("__pycache__"))


def _changed_package(root):
    """A copy of the installed torchpulse with the planted change, importable first."""
    copy = root / "changed"
    _copy_package(copy)
    lstm = copy / "torchpulse" / "models" / "lstm.py"
    source = lstm.read_text()
    assert source.count(ORIGINAL) == 1, "models/lstm.py changed: update the planted change"
    lstm.write_text(source.replace(ORIGINAL, CHANGED))
    ppl = copy / "torchpulse" / "autograd" / "ppl.py"
    source = ppl.read_text()
    assert source.count(AUTOGRAD_ORIGINAL) == 1, "autograd/ppl.py changed: update the change"
    ppl.write_text(source.replace(AUTOGRAD_ORIGINAL, AUTOGRAD_CHANGED))
    return copy


def _environment(pythonpath):
    return dict(os.environ, PYTHONPATH=str(pythonpath)) if pythonpath else dict(os.environ)


# Both measurements run at the lowest priority: the other test worker's timed end-to-end
# tests read the machine canary, and a full-priority neighbour that starts and stops reads
# as a busy machine there (counts do not depend on priority; the wall times here only get
# noisier, which is what they are asserted to be).
LOWEST = ["nice", "-n", "19"]
# one version's count, on one core (the first this process may use: under make test, its
# worker's own), so that the three counts of the fixture run side by side, each beside two
# busy processes, wherever the test runs. argv: the workloads as JSON, the folder to reuse
# counts from ("" for none)
COUNT = """
import json, os, sys
from pathlib import Path
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import torchpulse
from torchpulse import sizes
from torchpulse.instructions import count
counted, failed = count.count(json.loads(sys.argv[1]), sizes.INSTRUCTIONS,
                              reuse_in=Path(sys.argv[2]) if sys.argv[2] else None)
print(json.dumps({"from": torchpulse.__file__, "failed": sorted(failed), "counted": {
    name: [c.instructions, c.counts, c.functions, c.seconds] for name, c in counted.items()}}))
"""
# besides the step's two, for the determinism test: the smallest workload, and one this
# torchpulse lacks. A count counts each workload with the rest of its group (registry.groups),
# so the determinism test asks for whole groups and compares all of them: the two LSTMs'
# forwards and backwards, and the robust regression's vjp, jvp, vhp and hvp (allocation-heavy
# autograd, each counted after those before it in its group)
OTHERS = ["rnns/cudnn/forward"]
MISSING = "rnns/nope/forward"
GROUPS = [name for group in registry.groups(registry.workloads(fastrnns_choices, autograd_choices),
                                          [WORKLOAD, AUTOGRAD, *OTHERS]) for name in group]


def _count(workloads, pythonpath=None, *, cwd=None, env=None, reuse_in=None):
    """The counts of one version: {"from": its torchpulse, "failed": [...],
    "counted": {name: Counted}}."""
    out = subprocess.run([*LOWEST, sys.executable, "-c", COUNT, json.dumps(workloads),
                          str(reuse_in or "")], cwd=cwd,
                         env={**_environment(pythonpath), **(env or {})},
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    got["counted"] = {name: count.Counted(name, *c) for name, c in got["counted"].items()}
    return got


def _clone(root):
    """The installed torchpulse copied to a much longer path: (its PYTHONPATH entry)."""
    clone = root / "a-clone-at-a-much-longer-path-than-the-first" / "src"
    _copy_package(clone)
    return clone


def _times(changed, before, after):
    """``before`` and ``after`` single-call wall times of the two versions, alternating."""
    out = subprocess.run([*LOWEST, sys.executable, "-c", TIMING,
                          str(changed / "torchpulse" / "models" / "lstm.py"), str(before),
                          str(after)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """The three counts, side by side: this checkout's (kept for reuse), the same from a
    clone at a longer path started from another working directory with another environment
    (a 5,000-byte variable, another asv machine) and the selection in reverse order, and the
    changed version's: (root, changed package, this checkout's, the clone's, the changed
    one's)."""
    root = tmp_path_factory.mktemp("instruction-step")
    changed, clone = _changed_package(root), _clone(root)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    every = [*GROUPS, MISSING]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:  # a count does not mind the load
        here = pool.submit(_count, every, reuse_in=root / "runs")
        # in another order: a child counts a group (registry.groups) whatever else is asked
        there = pool.submit(_count, every[::-1], clone, cwd=elsewhere,
                            env={"ASV_MACHINE": "another-machine", "CI_SOMETHING": "y" * 5000})
        after = pool.submit(_count, [WORKLOAD, AUTOGRAD], changed)
        return root, changed, here.result(), there.result(), after.result()


@pytest.fixture(scope="module")
def history(counted):
    root, changed, here, _, after = counted
    assert not after["failed"], after["failed"]
    assert {WORKLOAD, AUTOGRAD} <= set(here["counted"]), here["failed"]
    before = {w: here["counted"][w] for w in (WORKLOAD, AUTOGRAD)}
    after = after["counted"]
    before_times, after_times = _times(changed, STEP, COMMITS - STEP)
    project = root / "project"
    shas = evaluation_project.git_repo(project, COMMITS)
    (project / "asv.conf.json").write_text(json.dumps(evaluation_project.CONF))
    results = project / "results"
    write_json_atomically(results / "m" / "machine.json", {"machine": "m", "version": 1})
    write_json_atomically(results / "benchmarks.json", {
        COUNTED: {"name": COUNTED, "params": [[repr(WORKLOAD), repr(AUTOGRAD)]],
                  "param_names": ["workload"],
                  "type": "track", "unit": "instructions", "version": "1"},
        TIMED: {"name": TIMED, "params": [["'py'"]], "param_names": ["runner"],
                "type": "time", "unit": "seconds", "version": "1"},
        "version": 2})
    for i, sha in enumerate(shas):
        version, times = (before, before_times) if i < STEP else (after, after_times)
        r = asv_results.new({"machine": "m"}, sha, 1_700_000_000_000 + i, "3.11", "e")
        # the three calls' counts in turn: commit to commit, counts move by about as much
        asv_results.add(r, COUNTED, "1", [[repr(WORKLOAD), repr(AUTOGRAD)]],
                        [version[w].counts[i % len(version[w].counts)]
                         for w in (WORKLOAD, AUTOGRAD)])
        asv_results.add(r, TIMED, "1", [["'py'"]], [times[i if i < STEP else i - STEP]])
        asv_results.save(r, results, asv_results.filename("m", sha, "e"))
    where = project / profiles.DEFAULT_FOLDER
    for sha, version in ((shas[STEP - 1], before), (shas[STEP], after)):
        profiles.write(profiles.path(where, sha, "e"), sha, "e",
                       {w: c.functions for w, c in version.items()},
                       {w: c.instructions for w, c in version.items()})
    return project, shas, before, after, before_times, after_times


@pytest.fixture(scope="module")
def alerted(history):
    """The alert's JSON over the history, run once: ({(benchmark, params): alert},
    {(benchmark, params): verdict})."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["alert", "--config", str(history[0] / "asv.conf.json"), "--format",
                     "json"])
    assert code == 1
    data = json.loads(out.getvalue())
    key = lambda a: (a["benchmark"], tuple(a["params"]))  # noqa: E731
    return ({key(a): a for a in data["alerts"]}, {key(v): v for v in data["verdicts"]})


def _named_at_the_step(alerts, shas, workload, before, after, rel):
    """The workload's instruction alert names the step's commit, its ratio and the functions
    that grew between the two versions' profiles; the alert."""
    counted = alerts[(COUNTED, (repr(workload),))]
    assert counted["commit"] == shas[STEP] and counted["previous_commit"] == shas[STEP - 1]
    assert counted["ratio"] == pytest.approx(after.instructions / before.instructions, rel=rel)
    grew = profiles.differences(before.functions, after.functions)
    assert [f["name"] for f in counted["functions"]] == [f.name for f in grew]
    return counted


def test_the_alert_names_the_commit_on_instructions_with_the_functions_that_grew(history,
                                                                                 alerted):
    project, shas, before, after, before_times, after_times = history
    before, after = before[WORKLOAD], after[WORKLOAD]
    step = after.instructions / before.instructions
    assert 1.01 < step < 1.05  # a little extra work: +1-5 %
    found, verdicts = alerted
    counted = _named_at_the_step(found, shas, WORKLOAD, before, after, rel=0.005)
    assert counted["functions"] and all(f["change"] > 0 for f in counted["functions"])
    # the wall time of the same forward, one call a commit, cannot resolve a step this
    # size: its smallest detectable step is far larger, the instruction series' far smaller.
    # (Whether it alerts depends on the machine: timed call by call the extra work itself
    # read +5 % once under the full suite, and timed in separate processes load alone read
    # +24 % and +34 % -- so it is not asserted either way.)
    counted, timed = verdicts[(COUNTED, (repr(WORKLOAD),))], verdicts[(TIMED, ("'py'",))]
    assert counted["mde"] < step - 1 < timed["mde"], (counted["mde"], timed["mde"])
    print(f"instructions {before.instructions:,} -> {after.instructions:,} ({step - 1:+.2%}); "
          f"wall time median {statistics.median(before_times) * 1e3:.3f} -> "
          f"{statistics.median(after_times) * 1e3:.3f} ms, status "
          f"{timed['status_text']}", file=sys.stderr)


def test_a_one_percent_step_in_an_autograd_workload_is_alerted_at_its_commit(history,
                                                                             alerted):
    project, shas, before, after, _, _ = history
    before, after = before[AUTOGRAD], after[AUTOGRAD]
    step = after.instructions / before.instructions
    assert 1.01 < step < 1.015  # the default count threshold's size
    _named_at_the_step(alerted[0], shas, AUTOGRAD, before, after, rel=0.002)
    print(f"instructions {before.instructions:,} -> {after.instructions:,} ({step - 1:+.2%})",
          file=sys.stderr)


@pytest.mark.parametrize("workload", [WORKLOAD, AUTOGRAD])
def test_bisect_finds_the_commit_from_one_run_a_commit(history, workload):
    project, shas, before, after, _, _ = history
    runs = []
    key = f"{COUNTED}('{workload}')"

    def measure(commit, keys=None):  # counts repeat: a commit's count is its version's
        runs.append(commit)
        value = (after if shas.index(commit) >= STEP else before)[workload].instructions
        return Run(commit, {key: value}, units={COUNTED: "instructions"})

    result = bisect(measure, shas[0], shas[1:], key)
    assert result.found == shas[STEP]
    assert len(runs) <= 7


# the most two processes may differ by: the 0.1 %. Since the counted thread starts
# only once the main thread is parked, the two agree to the instruction
# (experiments/diary/instructions.md, "Determinism"); before, CI read 0.18 % here, and the
# old way of counting moved 0.5-1.4 %
SPREAD = 0.001
# bytes of one workload's stored profile (top 200 functions, gzip): docs/instructions.md
PROFILE_BUDGET = 8_000


def test_two_clones_count_the_same_whatever_their_paths_environments_and_load(counted,
                                                                             tmp_path):
    """The same package from another clone at a longer path, started from another working
    directory with another environment, counts what this checkout counts, each beside two
    busy processes (the fixture's other counts, on the same core)."""
    _, _, here, there, _ = counted
    assert there["from"].startswith(str(counted[0])) and "clone" in there["from"]
    assert here["failed"] == there["failed"] == [MISSING]
    assert set(here["counted"]) == set(there["counted"]) == set(GROUPS)
    for name, mine in here["counted"].items():
        assert mine.instructions > 100_000 and len(mine.counts) == count.WINDOWS
        assert list(mine.seconds) == list(windows.PHASES)  # where its time went
        assert all(seconds >= 0 for seconds in mine.seconds.values())
        theirs = there["counted"][name].instructions
        assert abs(theirs - mine.instructions) <= SPREAD * mine.instructions, \
            (name, theirs, mine.instructions)
    smallest = here["counted"][OTHERS[0]]
    assert sum(smallest.functions.values()) <= smallest.instructions * 1.001
    assert any("libtorch" in f for f in smallest.functions)
    # the profile stored per commit stays small: the top functions, compressed
    sha = "a" * 40
    target = profiles.path(tmp_path, sha, "env")
    profiles.write(target, sha, "env", {OTHERS[0]: smallest.functions},
                   {OTHERS[0]: smallest.instructions})
    assert target.stat().st_size <= PROFILE_BUDGET
    assert profiles.read(tmp_path, sha, "env") == {OTHERS[0]: smallest.functions}


def test_the_same_inputs_are_not_counted_again(counted, monkeypatch):
    """This checkout's count stored what its workloads were made of, named by their places
    in the stage (torch's libraries too, which the process maps by their resolved paths);
    counted again here, in another process, nothing has changed: the same figures, and the
    counted process is not started."""
    root, _, here, _, _ = counted
    runs = root / "runs"
    (stored,) = [json.loads(p.read_text()) for p in runs.glob("run-*.json")]
    files, folders = stored["inputs"]["files"], stored["inputs"]["folders"]
    assert "<stage>/p/00/torchpulse/workloads/regions.py" in files
    assert "<stage>/p/00/torchpulse" in folders
    assert any(f.startswith("<stage>/p/0") and f.endswith("/torch/lib/libtorch_cpu.so")
               for f in files)
    assert "<stage>/p/malloc.so" in files
    assert not any("/tpc-" in path for path in (*files, *folders))  # no stage's own path
    if sys.prefix != sys.base_prefix:  # nor the virtual environment's (torch lies there)
        assert not any(path.startswith(sys.prefix) for path in (*files, *folders))

    def not_started(*args, **kwargs):
        raise AssertionError("counted again")

    monkeypatch.setattr(count.process, "run", not_started)
    again, failed = count.count(list(here["counted"]), sizes.INSTRUCTIONS, reuse_in=runs)
    assert failed == {} and all(c.reused for c in again.values())
    assert {n: (c.instructions, c.counts, c.functions) for n, c in again.items()} == \
        {n: (c.instructions, c.counts, c.functions) for n, c in here["counted"].items()}
