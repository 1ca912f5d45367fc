"""The instruction family's end-to-end proof: a commit that adds a little work to two models
(a finiteness check of the py LSTM's final state, about +3 % instructions; a multiplication, a
shape check and a forward-only op in the robust regression's loss, about +1.25 % of its vjp:
the default threshold's size).

Both versions of torchpulse are counted for real under callgrind (the changed one from a
patched copy of the package) and timed for real, alternating; their numbers fill a
33-commit history whose commit 20 is the change. The alert names that commit on the
instruction series, with the functions that grew; the same workload's wall time, measured
one call a commit as a quick CI run would, cannot resolve a step that size; bisect finds
the commit in at most 7 runs, on either series."""

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

from torchpulse.cli import main
from torchpulse.culprit.bisect import bisect
from torchpulse.culprit.runs import Run
from torchpulse.evaluation import project as evaluation_project
from torchpulse.files import write_json_atomically
from torchpulse.instructions import count, profiles
from torchpulse.results import asv_results

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
# layout shift from an unrelated change (0.06 % on this ratio, docs/instructions.md) cannot
# carry it across (a multiplication alone: +0.98 %; with the shape check: +1.05 %)
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


def _changed_package(root):
    """A copy of the installed torchpulse with the planted change, importable first."""
    import torchpulse

    copy = root / "changed"
    shutil.copytree(os.path.dirname(torchpulse.__file__), copy / "torchpulse")
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
COUNT = """
import json, sys
from torchpulse import sizes
from torchpulse.instructions import count
counted, failed = count.count(sys.argv[1:], sizes.INSTRUCTIONS)
print(json.dumps({"failed": failed, "counted": {
    name: [c.instructions, c.counts, c.functions] for name, c in counted.items()}}))
"""


def _count(pythonpath):
    """The counted workloads of one version: {name: Counted}."""
    out = subprocess.run([*LOWEST, sys.executable, "-c", COUNT, WORKLOAD, AUTOGRAD],
                         env=_environment(pythonpath), capture_output=True, text=True,
                         check=True).stdout
    got = json.loads(out)
    assert not got["failed"], got["failed"]
    return {name: count.Counted(name, *c) for name, c in got["counted"].items()}


def _times(changed, before, after):
    """``before`` and ``after`` single-call wall times of the two versions, alternating."""
    out = subprocess.run([*LOWEST, sys.executable, "-c", TIMING,
                          str(changed / "torchpulse" / "models" / "lstm.py"), str(before),
                          str(after)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("instruction-step")
    changed = _changed_package(root)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # side by side: load is no matter
        before, after = pool.map(_count, [None, changed])
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
