"""Each series judged by the rule of its unit: wall time by --threshold, counted instructions
by the smaller --count-threshold, a GPU region's kernel time by --device-threshold, exact
counters (dynamo's, the GPU suite's kernels and
synchronisations) by 'any increase' -- and every view (text, markdown, JSON, the site's
summary page) saying the same."""

import json

import numpy as np
import pytest
from asvproject import track_project

from torchpulse.analysis.detector import Point, exact
from torchpulse.cli import main
from torchpulse.instructions import profiles
from torchpulse.reports.phrases import human, levels_text
from torchpulse.results.project import Project
from torchpulse.site import page, summary

COMMITS = 12
STEP_AT = 9  # a +2 % step, held by the last three commits
WORKLOAD = "'rnns/py/forward'"  # the instruction series' parameter, as asv stores it
# a function name as hostile as a C++ symbol can be: markup, a table's bar, a newline
HOSTILE = "at::native::<script>alert(1)</script>|x\nfoo"
BENCHES = {  # name: unit
    "b.Work.track_instructions": "instructions",
    "b.Work.track_seconds": "seconds",
    "b.Dynamo.track_graph_breaks": "graph breaks",
    "b.Dynamo.track_calls_captured": "1/calls captured",
    "b.Gpu.track_kernels": "kernels",
    "b.Gpu.track_syncs": "synchronizations",
    "b.Gpu.track_kernel_time": "device seconds",
}
KERNEL_STEP = 1.03  # over the 2 % device threshold, under the 5 % one of wall time


def _values(rng: np.random.Generator) -> dict[str, list[float]]:
    step = [1.0 if i < STEP_AT else 1.02 for i in range(COMMITS)]
    quiet = 1 + 0.001 * rng.standard_normal(COMMITS)  # 0.1 %: a counted region
    return {
        "b.Work.track_instructions": list(5e6 * quiet * step),
        "b.Work.track_seconds": list(0.01 * quiet * step),
        # one more graph break at the newest commit only
        "b.Dynamo.track_graph_breaks": [1.0] * (COMMITS - 1) + [2.0],
        # 120 calls captured, then 118 from the step on (stored inverted)
        "b.Dynamo.track_calls_captured": [1 / 120 if i < STEP_AT else 1 / 118
                                          for i in range(COMMITS)],
        # a CUDA region's kernels: 100 more from the step on; its synchronisations stay
        "b.Gpu.track_kernels": [1300.0 if i < STEP_AT else 1400.0 for i in range(COMMITS)],
        "b.Gpu.track_syncs": [0.0] * COMMITS,
        # its kernel time: +3 % from the step on, as steady as the counts
        "b.Gpu.track_kernel_time": list(0.004 * quiet * [
            1.0 if i < STEP_AT else KERNEL_STEP for i in range(COMMITS)]),
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("rules")
    values = _values(np.random.default_rng(3))
    shas = track_project(root, COMMITS,
                         {name: (unit, _params(name)) for name, unit in BENCHES.items()},
                         lambda i: {name: [values[name][i]] for name in BENCHES})
    # the function profiles of the step's two commits (as the suite stores them)
    where = root / profiles.DEFAULT_FOLDER
    common = {"PyEval_EvalFrameDefault": 2_000_000, "at::native::lstm_cell": 1_500_000}
    for sha, extra in ((shas[STEP_AT - 1], {}),
                       (shas[STEP_AT], {HOSTILE: 60_000, "torch::grow": 40_000})):
        workloads = {"rnns/py/forward": {**common, **extra}}
        profiles.write(profiles.path(where, sha, "e"), sha, "e", workloads,
                       {"rnns/py/forward": 5_000_000})
    return root, shas


def _params(name: str) -> list[list[str]]:
    return [[WORKLOAD]] if name == "b.Work.track_instructions" else []


def alert(root, *args):
    return main(["alert", "--config", str(root / "asv.conf.json"), *args])


def test_each_unit_is_judged_by_its_rule_in_every_view(project, capsys):
    root, shas = project
    assert alert(root, "--format", "json") == 1
    data = json.loads(capsys.readouterr().out)
    found = {a["benchmark"]: a for a in data["alerts"]}
    # +2 %: an alert on the instruction count, not on the same step in wall time
    assert set(found) == {"b.Work.track_instructions", "b.Dynamo.track_graph_breaks",
                          "b.Dynamo.track_calls_captured", "b.Gpu.track_kernels",
                          "b.Gpu.track_kernel_time"}
    assert found["b.Gpu.track_kernels"]["commit"] == shas[STEP_AT]
    assert found["b.Gpu.track_kernel_time"]["commit"] == shas[STEP_AT]
    assert found["b.Work.track_instructions"]["commit"] == shas[STEP_AT]
    assert found["b.Dynamo.track_graph_breaks"]["commit"] == shas[-1]
    assert found["b.Dynamo.track_graph_breaks"]["previous_commit"] == shas[-2]
    assert found["b.Dynamo.track_calls_captured"]["commit"] == shas[STEP_AT]
    verdicts = {v["benchmark"]: v for v in data["verdicts"]}
    assert {b: (v["rule"], v["threshold"]) for b, v in verdicts.items()} == {
        "b.Work.track_instructions": ("count", 0.01), "b.Work.track_seconds": ("time", 0.05),
        "b.Dynamo.track_graph_breaks": ("exact", None),
        "b.Dynamo.track_calls_captured": ("exact", None),
        "b.Gpu.track_kernels": ("exact", None), "b.Gpu.track_syncs": ("exact", None),
        "b.Gpu.track_kernel_time": ("device", 0.02)}
    assert verdicts["b.Work.track_seconds"]["status"] == "ok"
    assert verdicts["b.Gpu.track_syncs"]["status"] == "ok"
    assert verdicts["b.Dynamo.track_graph_breaks"]["commits_needed"] == exact.MIN_POINTS
    assert data["thresholds"] == {"time": 0.05, "count": 0.01, "device": 0.02, "exact": None}

    assert alert(root) == 1
    text = capsys.readouterr().out
    assert ("threshold 5%, 1% on instruction counts, 2% on kernel time, any increase on "
            "exact counters") in text
    assert "4 ms -> 4.12 ms" in text  # kernel time reads as a time
    assert "120 calls captured -> 118 calls captured" in text
    assert "-2 calls captured" in text
    assert "1,300 kernels -> 1,400 kernels" in text
    # a count whose median per call is not whole is still printed in full
    assert human(64_944_792.5, "instructions") == "64,944,792 instructions"
    assert human(1_300.25, "kernels") == "1,300 kernels"
    # the functions behind the instruction step, largest growth first, names made printable
    grew = text.split("functions that grew most (own instructions a call):\n")[1]
    first, second = grew.splitlines()[:2]
    assert first.split() == ["+60,000", "at::native::<script>alert(1)</script>|x\\nfoo",
                             "(0", "->", "60,000)"]
    assert second.split()[:2] == ["+40,000", "torch::grow"]
    assert "PyEval_EvalFrameDefault" not in grew.split("measure it again")[0]
    functions = found["b.Work.track_instructions"]["functions"]
    assert functions == [
        {"name": HOSTILE.replace("\n", "\\n"), "before": 0, "after": 60_000,
         "change": 60_000, "renamed_from": None},
        {"name": "torch::grow", "before": 0, "after": 40_000, "change": 40_000,
         "renamed_from": None}]
    assert found["b.Dynamo.track_graph_breaks"]["functions"] == []
    assert alert(root, "--format", "markdown") == 1
    markdown = capsys.readouterr().out
    assert "1% on instruction counts" in markdown and "-2 calls captured" in markdown
    assert "| torch::grow | 0 | 40,000 | +40,000 |" in markdown
    assert "<script>" not in markdown and "&lt;/script&gt;\\|x" in markdown
    assert alert(root, "--format", "github") == 1
    github = capsys.readouterr().out
    assert "grew most: " in github and "\nfoo" not in github

    # the site's summary page: the same three alerts and statuses
    built = summary.build(Project.load(root / "asv.conf.json"))
    html = page.render(built)
    assert "1% on instruction counts, 2% on kernel time, any increase on exact counters" \
        in html
    assert "(threshold 5%, 1% on instruction counts, 2% on kernel time; its smallest" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<code>+40,000  torch::grow (0 -&gt; 40,000)</code>" in html
    assert "1 series count instructions under callgrind (CPU workloads, a 1% step" in html
    assert sorted(a.key.benchmark for a in built.report.alerts) == sorted(found)
    assert {c.series.key.benchmark: c.status for c in built.report.checked} == {
        b: v["status"] for b, v in verdicts.items()}


def test_count_threshold_sets_what_an_instruction_step_must_reach(project, capsys):
    root, _ = project
    assert alert(root, "--format", "json", "--count-threshold", "0.05") == 1
    data = json.loads(capsys.readouterr().out)
    assert "b.Work.track_instructions" not in {a["benchmark"] for a in data["alerts"]}
    # a wall-time threshold of 1 % does not make the instruction rule its own
    assert alert(root, "--format", "json", "--threshold", "0.01",
                 "--count-threshold", "0.05") == 1
    data = json.loads(capsys.readouterr().out)
    assert "b.Work.track_seconds" in {a["benchmark"] for a in data["alerts"]}
    assert "b.Work.track_instructions" not in {a["benchmark"] for a in data["alerts"]}


def test_device_threshold_sets_what_a_kernel_time_step_must_reach(project, capsys):
    root, _ = project
    assert alert(root, "--format", "json", "--device-threshold", "0.05") == 1
    data = json.loads(capsys.readouterr().out)
    assert "b.Gpu.track_kernel_time" not in {a["benchmark"] for a in data["alerts"]}
    assert data["thresholds"]["device"] == 0.05
    # nor is the wall-time threshold the kernel time's
    assert alert(root, "--format", "json", "--threshold", "0.01",
                 "--device-threshold", "0.05") == 1
    alerted = {a["benchmark"] for a in json.loads(capsys.readouterr().out)["alerts"]}
    assert "b.Work.track_seconds" in alerted and "b.Gpu.track_kernel_time" not in alerted


@pytest.mark.parametrize("values, moves, regression", [
    ([2, 2, 2, 2, 3], [4], (4, (4,), 2, 3)),
    ([1, 1, 2, 2, 1, 1, 2], [2, 4, 6], (6, (6,), 1, 2)),  # back and up again: a new one
    ([0, 0, 0, 1], [3], (3, (3,), 0, 1)),  # from zero
    ([3, 3, 2, 2], [2], None),  # fewer: an improvement
    ([1, 2, 3, 3], [1, 2], (1, (1, 2), 1, 3)),  # a climb: each rise a culprit
    ([1, 3, 2, 2], [1, 2], (1, (1,), 1, 2)),  # up and part way back: still above
    ([1, 3, 2, 4], [1, 2, 3], (3, (3,), 2, 4)),  # from the newest level below it
    ([5, 5, 5], [], None),
])
def test_an_exact_counter_regresses_at_any_increase_it_still_holds(values, moves, regression):
    verdict = exact.analyse([Point(f"c{i}", float(v)) for i, v in enumerate(values)])
    assert [c.index for c in verdict.change_points] == moves
    assert not verdict.noise.unstable
    if regression is None:
        assert verdict.active == ()
    else:
        (r,) = verdict.active
        assert (r.index, r.culprits, r.before, r.after) == regression


UNITS = ["seconds", "device seconds", "bytes", "instructions", "kernels", "graph breaks",
         "synchronizations", "ratio", "unit"]
LEVELS = [0.9999, 0.99995, 1.0, 1.1, 999.96e-6, 1.2e-3, 0.5e-6, 3e-9, 1023.9, 1024.0,
          2**20 - 1, 3 * 2**30, 0.0, 12.0, 6_494_123.0]


@pytest.mark.parametrize("unit", UNITS)
def test_a_level_and_its_change_are_written_in_one_unit(unit):
    """Two levels of one series in one line share their scale (a level that went from 1.00 s
    to 1.10 s once read '1e+03 ms -> 1.1 s'), for every rule and unit, across the
    boundaries between scales."""
    for before in LEVELS:
        for after in LEVELS:
            said = levels_text(before, after, unit)
            left, right = said.split(" -> ")
            assert left.split(" ", 1)[1:] == right.split(" ", 1)[1:], said
            assert "e+" not in said and "e-" not in said, said
            assert left == human(before, unit, after) and right == human(after, unit, before)
