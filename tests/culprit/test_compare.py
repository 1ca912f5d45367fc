"""compare() over scripted runs: the sequential decisions, the interleaving, and what it
does with values it cannot compare."""

import math

import numpy as np
import pytest

from torchpulse.analysis import sequential
from torchpulse.analysis.settings import Settings
from torchpulse.culprit.compare import NOT_COMPARED, compare
from torchpulse.culprit.runs import Run, RunError


class Scripted:
    """Runs whose values are level x lognormal noise; records what was asked for."""

    def __init__(self, levels: dict[str, dict[str, float]], cv: float = 0.02, seed: int = 0):
        self.levels, self.cv = levels, cv
        self.rng = np.random.default_rng(seed)
        self.calls: list[tuple[str, tuple[str, ...] | None]] = []

    def __call__(self, commit, keys=None):
        self.calls.append((commit, tuple(keys) if keys is not None else None))
        wanted = keys if keys is not None else list(self.levels[commit])
        return Run(commit, {k: self.levels[commit][k] * math.exp(self.rng.normal(0, self.cv))
                            for k in wanted if k in self.levels[commit]})


def test_a_large_slowdown_is_decided_slower_at_the_first_look():
    runs = Scripted({"a": {"t": 1.0}, "b": {"t": 1.5}})
    result = compare(runs, "a", "b", Settings(threshold=0.05), max_rounds=20)
    (o,) = result.outcomes
    assert o.decision == sequential.SLOWER and o.rounds == 3
    assert o.interval.ratio_low > 1.05 and o.interval.ratio == pytest.approx(1.5, rel=0.05)
    assert o.base == pytest.approx(1.0, rel=0.1) and o.head == pytest.approx(1.5, rel=0.1)
    assert result.slower == [o] and result.runs == 6


def test_equal_commits_are_decided_equivalent():
    runs = Scripted({"a": {"t": 1.0}, "b": {"t": 1.0}}, cv=0.005)
    (o,) = compare(runs, "a", "b", Settings(threshold=0.05)).outcomes
    assert o.decision == sequential.EQUIVALENT


def test_a_speedup_is_faster():
    runs = Scripted({"a": {"t": 1.0}, "b": {"t": 0.5}})
    (o,) = compare(runs, "a", "b").outcomes
    assert o.decision == sequential.FASTER


def test_a_change_at_the_threshold_stays_undecided_at_the_cap():
    runs = Scripted({"a": {"t": 1.0}, "b": {"t": 1.05}}, cv=0.03)
    (o,) = compare(runs, "a", "b", Settings(threshold=0.05), max_rounds=8).outcomes
    assert o.decision == sequential.UNDECIDED and o.rounds == 8
    assert o.interval.ratio_low < 1.05 < o.interval.ratio_high


def test_runs_interleave_and_decided_benchmarks_are_not_run_again():
    runs = Scripted({"a": {"fast": 1.0, "same": 1.0}, "b": {"fast": 2.0, "same": 1.04}},
                    cv=0.03)
    result = compare(runs, "a", "b", max_rounds=8)
    assert [c for c, _ in runs.calls[:6]] == ["a", "b", "b", "a", "a", "b"]
    assert runs.calls[0][1] is None  # the first round runs the whole selection
    assert all(keys == ("same",) for _, keys in runs.calls[6:])
    decided = {o.key: o.decision for o in result.outcomes}
    assert decided["fast"] == sequential.SLOWER


def test_base_and_head_may_be_one_commit():
    runs = Scripted({"a": {"t": 1.0}}, cv=0.001)
    (o,) = compare(runs, "a", "a").outcomes
    assert o.decision == sequential.EQUIVALENT and o.rounds == 3


def test_a_value_missing_on_one_side_is_not_compared_and_the_rest_goes_on():
    runs = Scripted({"a": {"t": 1.0, "old": 1.0, "broken": 1.0},
                     "b": {"t": 2.0, "new": 1.0, "broken": float("nan")}})
    result = compare(runs, "a", "b")
    by = {o.key: o for o in result.outcomes}
    assert by["t"].decision == sequential.SLOWER
    assert by["old"].decision == NOT_COMPARED and "head run 1: not measured" in by["old"].why
    assert by["new"].decision == NOT_COMPARED and "base run 1" in by["new"].why
    assert by["broken"].decision == NOT_COMPARED and "nan" in by["broken"].why


def test_a_selection_that_measures_nothing_is_an_error():
    with pytest.raises(RunError, match="no benchmark was measured"):
        compare(Scripted({"a": {}, "b": {}}), "a", "b")


def test_each_outcome_carries_its_benchmarks_unit():
    def measure(commit, keys=None):
        return Run(commit, {"bench.time_t": 1.0, "bench.track_i(1)": 1000.0,
                            "bench.time_gone": None},
                   units={"bench.time_t": "seconds", "bench.track_i": "instructions"})

    outcomes = {o.key: o for o in compare(measure, "a", "b").outcomes}
    assert outcomes["bench.time_t"].unit == "seconds"
    assert outcomes["bench.track_i(1)"].unit == "instructions"  # decided from one run
    assert outcomes["bench.time_gone"].decision == NOT_COMPARED
    assert outcomes["bench.time_gone"].unit is None


class Batched(Scripted):
    """Scripted runs that can also measure several commits at once, as AsvRuns.many."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches: list[tuple[str, ...]] = []

    def many(self, commits, keys=None):
        assert len(set(commits)) == len(commits)
        self.batches.append(tuple(commits))
        return [self(commit, keys) for commit in commits]


def test_a_round_goes_to_one_run_of_both_commits_in_the_rounds_order():
    runs = Batched({"a": {"t": 1.0}, "b": {"t": 1.5}})
    result = compare(runs, "a", "b", Settings(threshold=0.05), max_rounds=20)
    assert result.runs == 6 and len(runs.calls) == 6
    # BASE first in odd rounds, HEAD first in even ones, a batch a round
    assert runs.batches == [("a", "b"), ("b", "a"), ("a", "b")]


def test_a_commit_against_itself_is_measured_a_run_at_a_time():
    from torchpulse.culprit.runs import each

    runs = Batched({"a": {"t": 1.0}, "b": {"t": 1.0}})
    compare(runs, "a", "a", Settings(threshold=0.5), max_rounds=3)
    assert runs.batches == [] and len(runs.calls) == 6
    assert [r.commit for r in each(runs, ["a"], None)] == ["a"] and runs.batches == []
    assert [r.commit for r in each(runs, ["b", "a"], None)] == ["b", "a"]
    assert runs.batches == [("b", "a")]


class Clocked(Scripted):
    """Scripted runs on a clock of their own: a first round that costs ``first`` seconds
    (the counts), then ``later`` seconds a run."""

    def __init__(self, levels, first: float, later: float, **kwargs):
        super().__init__(levels, **kwargs)
        self.now, self.first, self.later = 0.0, first, later

    def __call__(self, commit, keys=None):
        self.now += self.first / 2 if keys is None else self.later
        return super().__call__(commit, keys)


def test_a_time_budget_lowers_the_cap_before_the_first_look():
    """Rounds that take 100 s after a first of 300 s: 15 minutes hold 7 rounds (300 + 6 x
    100), so a change that stays undecided is undecided after 7 runs, not the 8 asked; a
    budget that holds the rounds asked, or none, changes nothing."""
    levels = {"a": {"t": 1.0}, "b": {"t": 1.05}}
    said = []
    runs = Clocked(levels, first=300.0, later=50.0, cv=0.03)
    result = compare(runs, "a", "b", max_rounds=8, budget=900.0, clock=lambda: runs.now,
                     progress=said.append)
    (o,) = result.outcomes
    assert result.max_rounds == 7 and o.decision == sequential.UNDECIDED and o.rounds == 7
    assert runs.now <= 900.0
    assert "a round takes 100 s: the 15-minute budget allows 7 runs of each" in said
    for budget in (None, 3600.0):
        runs = Clocked(levels, first=300.0, later=50.0, cv=0.03)
        result = compare(runs, "a", "b", max_rounds=8, budget=budget,
                         clock=lambda runs=runs: runs.now)
        assert result.max_rounds == 8 and result.outcomes[0].rounds == 8
    # never fewer than the first look's three
    runs = Clocked(levels, first=300.0, later=500.0, cv=0.03)
    assert compare(runs, "a", "b", max_rounds=8, budget=60.0,
                   clock=lambda: runs.now).max_rounds == 3


def test_where_higher_is_better_a_drop_is_slower_shown_as_measured(monkeypatch):
    """A throughput (the triage file's direction, or its unit's row): HEAD's lower value is
    the slowdown; the values and the interval stay as measured."""
    from torchpulse.kinds import TIME, UNITS, Unit

    runs = Scripted({"a": {"items": 100.0, "t": 1.0}, "b": {"items": 70.0, "t": 0.7}})
    result = compare(runs, "a", "b", higher_is_better=lambda k: True if k == "items" else None)
    by = {o.key: o for o in result.outcomes}
    assert by["items"].decision == sequential.SLOWER and by["t"].decision == sequential.FASTER
    assert by["items"].interval.ratio == pytest.approx(0.7, rel=0.05)
    assert by["items"].head == pytest.approx(70, rel=0.1)
    # the same from a unit's row, with nothing said per benchmark
    monkeypatch.setitem(UNITS, "items/s", Unit("items/s", TIME, higher_is_better=True))

    class WithUnits(Scripted):
        def __call__(self, commit, keys=None):
            run = super().__call__(commit, keys)
            return Run(run.commit, run.values, units={"items": "items/s"})

    (o, _) = sorted(compare(WithUnits(runs.levels), "a", "b").outcomes, key=lambda o: o.key)
    assert o.key == "items" and o.decision == sequential.SLOWER


def test_two_environments_on_cuda_name_the_kernels_behind_a_moved_kernel_time():
    """compare --python --gpu: kernel time decided in rounds by the device threshold, the
    kernels and synchronizations a call makes from one run a side (a synchronization from
    none is a change, compared by its difference), GPU memory; for a moved kernel time the
    kernels behind it, in text, markdown and JSON."""
    import json as json_module

    from torchpulse.culprit import environments as envs
    from torchpulse.culprit.report import render_environments

    w = "rnns/py/forward"
    planted = "void at::native::elementwise_kernel<128, 2>"

    class Runs:
        sides = {"A": envs.Side("A", "/a/bin/python", {"torch": "2.13.0"}),
                 "B": envs.Side("B", "/b/bin/python", {"torch": "2.14.1"})}
        sides["A"].gpu_profiles[w] = {"kernel_time": {"gemm": 2_400_000, "tanh": 500_000}}
        sides["B"].gpu_profiles[w] = {"kernel_time": {"gemm": 2_401_000, "tanh": 500_000,
                                                      planted: 100_000}}
        calls = 0

        def __call__(self, label, keys=None):
            self.calls += 1
            b = label == "B"
            jitter = 1 + 0.0005 * ((self.calls % 3) - 1)
            values = {envs.key(w, envs.KERNEL_TIME): (3.0e-3 if b else 2.9e-3) * jitter,
                      envs.key(w, envs.KERNELS): 1000.0 if b else 900.0,
                      envs.key(w, envs.SYNCS): 1.0 if b else 0.0,
                      envs.key(w, envs.GPU_MEMORY): 2e8}
            if keys is not None:
                values = {k: v for k, v in values.items() if k in keys}
            units = {k.split("(", 1)[0]: envs.UNITS[envs.split_key(k)[1]] for k in values}
            return Run(label, values, {}, units=units)

    runs = Runs()
    result = compare(runs, "A", "B", Settings(), max_rounds=6)
    by = {envs.split_key(o.key)[1]: o for o in result.outcomes}
    assert by[envs.KERNELS].decision == sequential.SLOWER and by[envs.KERNELS].rounds == 1
    syncs = by[envs.SYNCS]
    assert syncs.decision == sequential.SLOWER and (syncs.base, syncs.head) == (0.0, 1.0)
    assert by[envs.KERNEL_TIME].decision == sequential.SLOWER  # +3.4 %, over 2 %
    assert by[envs.GPU_MEMORY].decision == sequential.EQUIVALENT
    text = render_environments(result, runs, "text")
    assert "workload on CUDA" in text and "0 -> 1" in text
    assert "2% on kernel time" in text
    assert "the kernels behind the kernel times that moved" in text
    assert "+100,000 (" in text and planted in text
    data = json_module.loads(render_environments(result, runs, "json"))
    (row,) = data["workloads"]
    assert [k["name"] for k in row["kernels"]] == [planted, "gemm"]
    assert row["syncs"]["a"] == 0.0 and row["syncs"]["decision"] == "slower"
    markdown = render_environments(result, runs, "markdown")
    assert "| workload on CUDA |" in markdown
    assert "elementwise\\_kernel&lt;128, 2&gt;" in markdown  # escaped, not markup


def test_gpu_goes_with_two_environments(capsys):
    from clirun import exit_code

    assert exit_code(["compare", "HEAD~1", "HEAD", "--gpu"]) == 2
    err = capsys.readouterr().err
    assert "--gpu measures two environments on CUDA" in err and err.count("\n") == 1
