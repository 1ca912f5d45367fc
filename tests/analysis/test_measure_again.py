"""Steps seen in one run only: which series need a second measurement, the ledger that makes
it happen once, `torchpulse disturbed --confirm`, and the evaluation's model of it."""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from clirun import exit_code
from hypothesis import given, settings
from hypothesis import strategies as st

from torchpulse.analysis import ledger, remeasure
from torchpulse.analysis.detector import Point
from torchpulse.analysis.judge import evaluate
from torchpulse.analysis.model import REGRESSION
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.evaluation import detectors, synthetic
from torchpulse.results import asv_results
from torchpulse.results.gitrepo import History
from torchpulse.results.project import Project
from torchpulse.site import page, summary

N = 12
QUIET = [0.010 * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(N)]


def series(values, name="bench_rnns.LSTM.time_forward", seconds=5.0, disturbed=()):
    key = SeriesKey(name, ("'aten'",), "m", "e")
    return Series(key, "seconds", [
        Point(f"c{i}", v, tuple(v * (1 + 0.001 * k) for k in range(-2, 3)), 1000.0 * i,
              seconds, i in disturbed) for i, v in enumerate(values)])


def report(*many):
    return evaluate(list(many), History([f"c{i}" for i in range(N)]))


def test_a_step_at_the_newest_commit_alone_is_seen_once():
    once = series(QUIET[:-1] + [0.015])
    twice = series(QUIET[:-2] + [0.015, 0.0151], name="bench_cnns.ResNet.time_forward")
    found = report(once, twice)
    by = {c.series.key.benchmark: c for c in found.checked}
    assert all(c.status == REGRESSION for c in by.values())
    assert remeasure.seen_once(by["bench_rnns.LSTM.time_forward"]).commit == "c11"
    assert remeasure.seen_once(by["bench_cnns.ResNet.time_forward"]) is None  # two runs agree
    pending = remeasure.due(found, {})
    plan = remeasure.confirming(pending, found.history.position)
    assert plan.commits == ("c11",) and plan.benchmarks == ("bench_rnns.LSTM.time_forward",)
    # stamped with the start of the measurement a second one is to replace
    assert pending == {("c11", "bench_rnns.LSTM.time_forward"): 11000}


def test_measured_again_already_imported_or_outside_the_window_is_not_planned():
    found = report(series(QUIET[:-1] + [0.015]),
                   series(QUIET[:-1] + [0.015], name="external.pep.time_x", seconds=None))
    assert remeasure.seen_once(found.checked[1]) is None  # an import: no asv job to re-run
    assert remeasure.due(found, {("c11", "bench_rnns.LSTM.time_forward"): 11000}) == {}
    assert remeasure.due(found, {}, commits={"c10"}) == {}


def test_an_instruction_count_step_is_not_measured_again():
    counts = series([1_000_000.0] * (N - 1) + [1_080_000.0],
                    name="bench_instructions.LSTMInstructions.track_instructions")
    counts.unit = "instructions"
    found = report(counts)
    assert found.checked[0].status == REGRESSION
    assert remeasure.seen_once(found.checked[0]) is None
    assert remeasure.due(found, {}) == {}


def test_a_disturbed_newest_point_is_left_to_the_canary():
    # the newest point is left out of detection: the step then rests on nothing
    found = report(series(QUIET[:-1] + [0.015], disturbed={N - 1}))
    assert found.checked[0].status != REGRESSION
    assert remeasure.due(found, {}) == {}


def test_ledger_round_trip_and_malformed_lines(tmp_path):
    # a line without a stamp (written before stamps were kept) is read as an unknown time
    done = {("a" * 40, "bench_x.T.time_y"): 1700000000123, ("b" * 40, "bench_x.T.time_z"): None}
    path = tmp_path / "confirmed.txt"
    assert ledger.read_ledger(path) == {}
    path.write_text(ledger.ledger_text(done))
    assert ledger.read_ledger(path) == done
    for bad in ("abc bench_x.T.time_y\n", f"{'a' * 40}\n", f"{'a' * 40} x y\n",
                f"{'a' * 40} x 12 13\n", f"{'a' * 40} x -5\n"):
        path.write_text(bad)
        with pytest.raises(ledger.LedgerError, match=r"confirmed.txt:1: not a 'sha"):
            ledger.read_ledger(path)


@pytest.mark.timeout(120)  # a FIFO read as a file waits for a writer for good
def test_a_ledger_that_is_no_regular_file_is_refused_not_waited_on(tmp_path, monkeypatch):
    """`alert --confirmed /dev/zero` read until the memory ran out, a FIFO was waited on."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (tmp_path, Path("/dev/null"), fifo):
        with pytest.raises(ledger.LedgerError, match="not a regular file"):
            ledger.read_ledger(path)
    monkeypatch.setattr(ledger, "LEDGER_BYTES", 100)
    long = tmp_path / "long.txt"
    long.write_text(ledger.ledger_text({("a" * 40, f"bench_x.T.time_{i}"): 1 for i in range(3)}))
    with pytest.raises(ledger.LedgerError, match="more than the 100 bytes"):
        ledger.read_ledger(long)


_LINE = st.tuples(st.sampled_from(["a" * 40, "0123456789abcdef" * 2 + "0" * 8, "A" * 40,
                                    "a" * 39, ""]),
                  st.sampled_from(["bench_x.T.time_y", "b.c('x', 1)", "", "two words"]),
                  st.one_of(st.none(), st.integers(-5, 10**16).map(str),
                            st.sampled_from(["1.5", "x", "１２"])))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINE, max_size=6), noise=st.text(max_size=40))
def test_a_ledger_of_any_text_is_read_whole_or_refused_in_one_line(tmp_path_factory, lines,
                                                                   noise):
    path = tmp_path_factory.mktemp("ledger") / "confirmed.txt"
    text = "".join(" ".join(x for x in line if x is not None) + "\n" for line in lines)
    for attempt in (text, text + noise):
        path.write_text(attempt, encoding="utf-8")
        try:
            done = ledger.read_ledger(path)
        except ledger.LedgerError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            continue
        # what was read is written back the same, and read back the same
        path.write_text(ledger.ledger_text(done))
        assert ledger.read_ledger(path) == done
        assert all(len(sha) == 40 and (stamp is None or stamp >= 0)
                   for (sha, _), stamp in done.items())


def _newest_step_project(path):
    """Noise series and, at the newest commit only, a +50 % step (one run at the new level)."""
    truths = synthetic.build(path, commits=10, per_cell=1, noise_series=3, seed=8,
                             kinds=("noise", "step"), sizes=(0.5,), distances=(1,))
    return truths, synthetic.history(path)


def test_disturbed_confirm_plans_each_step_once(tmp_path, capsys):
    truths, shas = _newest_step_project(tmp_path)
    conf = str(tmp_path / "asv.conf.json")
    ledger_file, hashfile = tmp_path / "confirmed.txt", tmp_path / "hashes.txt"
    argv = ["disturbed", "--config", conf, "--hashfile", str(hashfile), "--confirm",
            str(ledger_file)]
    assert exit_code(argv) == 0
    out, err = capsys.readouterr()
    steps = {t.benchmark for t in truths if t.kind == "step"}
    assert hashfile.read_text() == shas[-1] + "\n"
    written = ledger.read_ledger(ledger_file)
    assert {name for _, name in written} == steps
    # each stamped with the start of the measurement stored when it was chosen
    results = asv_results.load(tmp_path / "results" / asv_results.filename(
        synthetic.MACHINE, shas[-1], synthetic.ENV), synthetic.MACHINE)
    assert all(stamp == asv_results.timing(results, name)[0] is not None
               for (_, name), stamp in written.items())
    assert "step seen in one run only" in err
    chosen = re.compile(out.strip())
    assert all(chosen.search(name) for name in steps)
    assert not any(chosen.search(t.benchmark) for t in truths if t.kind == "noise")
    # the second time, the ledger says they were measured again: nothing to do
    assert exit_code(argv) == 0
    assert capsys.readouterr().out == "" and hashfile.read_text() == ""
    assert len(ledger.read_ledger(ledger_file)) == len(steps)


def test_a_malformed_ledger_is_one_line_and_nothing_is_written(tmp_path, capsys):
    _newest_step_project(tmp_path)
    ledger_file, hashfile = tmp_path / "confirmed.txt", tmp_path / "hashes.txt"
    ledger_file.write_text("not a ledger\n")
    code = exit_code(["disturbed", "--config", str(tmp_path / "asv.conf.json"), "--hashfile",
                      str(hashfile), "--confirm", str(ledger_file)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "not a 'sha benchmark started-ms' line" in err[0]
    assert not hashfile.exists() and ledger_file.read_text() == "not a ledger\n"


def test_remeasure_redraws_only_the_chosen_benchmarks_at_the_chosen_commit(tmp_path):
    truths, shas = _newest_step_project(tmp_path)
    step = next(t.benchmark for t in truths if t.kind == "step")

    def stored(sha):
        results = asv_results.load(tmp_path / "results" / asv_results.filename(
            synthetic.MACHINE, sha, synthetic.ENV), synthetic.MACHINE)
        return {name: asv_results.values(results, name) for name in
                asv_results.benchmarks(results)}

    before = {sha: stored(sha) for sha in shas}
    assert synthetic.remeasure(tmp_path, truths, [shas[-1]], {step}, seed=1) == 1
    after = {sha: stored(sha) for sha in shas}
    assert all(after[sha] == before[sha] for sha in shas[:-1])
    changed = {n for n in after[shas[-1]] if after[shas[-1]][n] != before[shas[-1]][n]}
    assert changed == {step}
    # a new draw of the same truth: still 50 % above the level before the step
    assert np.log(after[shas[-1]][step][0] / 0.01) == pytest.approx(np.log(1.5), abs=0.1)


def test_the_evaluation_confirms_a_real_step_and_drops_a_slow_run(tmp_path):
    truths, shas = _newest_step_project(tmp_path)
    noise = next(t for t in truths if t.kind == "noise")
    # the noise series' newest run is twice as slow: a slow run, not a step
    file = tmp_path / "results" / asv_results.filename(synthetic.MACHINE, shas[-1],
                                                       synthetic.ENV)
    results = asv_results.load(file, synthetic.MACHINE)
    grid = asv_results.params(results, noise.benchmark)
    index = grid[0].index(noise.param)
    samples = [[0.02 * (1 + 0.001 * k) for k in range(5)]] * len(grid[0])
    asv_results.add(results, noise.benchmark, "1", grid, [0.02] * len(grid[0]), samples,
                    selected={index}, duration=1.0)
    asv_results.save(results, tmp_path / "results",
                     file.relative_to(tmp_path / "results").as_posix())
    options = ["--alpha", "0.05", "--threshold", "0.05"]
    once = detectors.run_torchpulse(tmp_path, shas, options)
    assert once.get((noise.benchmark, noise.param)) == [len(shas) - 1]
    confirmed = detectors.confirm_torchpulse(tmp_path, shas, truths, options, seed=3)
    assert (noise.benchmark, noise.param) not in confirmed
    for t in truths:
        if t.kind == "step":
            assert confirmed.get((t.benchmark, t.param)) == [len(shas) - 1], t
    assert (shas[-1], noise.benchmark) in ledger.read_ledger(tmp_path / "confirmed.txt")


def test_disturbed_since_confirms_steps_after_rev_and_refuses_an_unknown_rev(tmp_path, capsys):
    _, shas = _newest_step_project(tmp_path)
    hashfile = tmp_path / "hashes.txt"
    base = ["disturbed", "--config", str(tmp_path / "asv.conf.json"), "--hashfile",
            str(hashfile), "--confirm", str(tmp_path / "confirmed.txt")]
    assert exit_code([*base, "--since", "nosuchrev"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--since" in err[0] and not hashfile.exists()
    assert exit_code([*base, "--since", shas[-2]]) == 0
    assert hashfile.read_text() == shas[-1] + "\n"
    # as with alert --since, a step at REV itself is no step "since": nothing to confirm
    (tmp_path / "confirmed.txt").unlink()
    assert exit_code([*base, "--since", shas[-1]]) == 0
    assert hashfile.read_text() == ""


def test_a_step_measured_twice_says_so_in_every_format(tmp_path, capsys):
    truths, shas = _newest_step_project(tmp_path)
    steps = sorted(t.benchmark for t in truths if t.kind == "step")
    conf = str(tmp_path / "asv.conf.json")
    assert len(steps) >= 3
    results = asv_results.load(tmp_path / "results" / asv_results.filename(
        synthetic.MACHINE, shas[-1], synthetic.ENV), synthetic.MACHINE)
    started = {name: int(asv_results.timing(results, name)[0]) for name in steps}
    # the ledger make dashboard keeps beside the config: the first step's benchmark was
    # measured again at the newest commit (what is stored started after the stamp, and the
    # step showed again); the second one's re-run stored nothing (the stamp is what is
    # stored: it died, or never ran); the third's line predates stamps (time unknown)
    (tmp_path / ".asv").mkdir()
    (tmp_path / ".asv" / "confirmed.txt").write_text(ledger.ledger_text({
        (shas[-1], steps[0]): started[steps[0]] - 60_000,
        (shas[-1], steps[1]): started[steps[1]], (shas[-1], steps[2]): None}))
    assert exit_code(["alert", "--config", conf, "--format", "json"]) == 1
    alerts = json.loads(capsys.readouterr().out)["alerts"]
    said = {a["benchmark"]: a["confirmed"] for a in alerts}
    assert set(said) == set(steps) and said[steps[0]] and not any(
        said[name] for name in steps[1:])
    assert exit_code(["alert", "--config", conf]) == 1
    text = capsys.readouterr().out
    assert text.count(f"measured twice at {shas[-1][:8]}: the step showed again") == 1
    for fmt in ("markdown", "github"):
        assert exit_code(["alert", "--config", conf, "--format", fmt]) == 1
        assert capsys.readouterr().out.count("measured twice") == 1, fmt
    html = page.render(summary.build(Project.load(tmp_path / "asv.conf.json")))
    assert html.count("(measured twice)</td>") == 1
    # another ledger, named: it is the one read
    other = tmp_path / "other.txt"
    other.write_text("")
    assert exit_code(["alert", "--config", conf, "--format", "json",
                      "--confirmed", str(other)]) == 1
    assert not any(a["confirmed"] for a in json.loads(capsys.readouterr().out)["alerts"])
    # a malformed ledger is bad input: one line, exit 2
    other.write_text("half a line\n")
    assert exit_code(["alert", "--config", conf, "--confirmed", str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other.txt:1: not a 'sha benchmark started-ms' line" in err[0]
