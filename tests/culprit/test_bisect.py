"""bisect() over simulated histories: it finds the planted commit, reports a range instead of
guessing, and says when there is nothing to bisect."""

import numpy as np
import pytest

from torchpulse.analysis import sequential
from torchpulse.culprit.bisect import bisect, describe, expected_probes
from torchpulse.culprit.runs import Run, RunError
from torchpulse.testing.bisect_trials import KEY, Noise, SimulatedHistory, trials


def _history(n=16, step_at=11, factor=1.25, cv=0.02, seed=0):
    return SimulatedHistory(n, step_at, factor, Noise.lognormal(cv, seed=seed),
                            np.random.default_rng(seed))


def test_expected_probes_is_log2_of_the_candidates():
    assert [expected_probes(n) for n in (1, 2, 3, 4, 5, 32)] == [0, 1, 2, 2, 3, 5]


@pytest.mark.parametrize("step_at", [1, 7, 16])
def test_bisect_finds_the_planted_commit(step_at):
    h = _history(step_at=step_at)
    probes = []
    result = bisect(h, h.commits[0], h.commits[1:], KEY, on_probe=probes.append)
    assert result.step == sequential.SLOWER
    assert result.found == h.commits[step_at]
    assert probes == result.probes and len(result.probes) <= 4
    for p in result.probes:
        assert p.decision == (sequential.BAD if int(p.commit[1:]) >= step_at
                              else sequential.GOOD)
        assert len(p.runs) == p.rounds and all(r.commit == p.commit for r in p.runs)
        assert (p.llr > 0) == (p.decision == sequential.BAD)  # the SPRT's odds, its side
        assert "odds " in describe(p, len(h.commits) - 1) and p.decision in describe(p, 16)


def test_a_speedup_is_bisected_too():
    h = _history(factor=0.7)
    result = bisect(h, h.commits[0], h.commits[1:], KEY)
    assert result.step == sequential.FASTER and result.found == h.commits[11]


def test_no_step_between_good_and_bad_is_reported_not_bisected():
    h = _history(factor=1.0, cv=0.005)
    result = bisect(h, h.commits[0], h.commits[1:], KEY)
    assert result.step.startswith("no step") and result.found is None and not result.probes


def test_an_undecided_probe_ends_with_the_range_not_a_guess():
    # GOOD 1.0, BAD 1.5 and every commit from c8 on exactly halfway (on a log scale): the
    # first probe, c8, is on neither side and no number of rounds can place it
    levels = {f"c{i}": 1.0 if i < 8 else 1.5 ** 0.5 for i in range(16)} | {"c16": 1.5}

    def measure(commit, keys=None):
        return Run(commit, {KEY: levels[commit]})

    commits = [f"c{i}" for i in range(17)]
    result = bisect(measure, commits[0], commits[1:], KEY, max_rounds=4)
    assert result.found is None and result.bisected
    (probe,) = result.probes
    assert probe.commit == "c8" and probe.decision == sequential.UNDECIDED and probe.rounds == 4
    assert result.suspects == commits[1:]


def test_fixed_rounds_always_decide():
    h = _history(factor=1.25)
    result = bisect(h, h.commits[0], h.commits[1:], KEY, fixed_rounds=10)
    assert all(p.rounds == 10 for p in result.probes) and result.found == h.commits[11]


def test_a_benchmark_the_runs_do_not_hold_is_an_error():
    h = _history()
    with pytest.raises(RunError, match="no benchmark 'other'"):
        bisect(h, h.commits[0], h.commits[1:], "other")
    with pytest.raises(RunError, match="nothing to bisect"):
        bisect(h, h.commits[0], [], KEY)


def test_trials_count_found_wrong_and_undecided():
    summary = trials(Noise.lognormal(0.02), 1.25, n=8, count=20, seed=1)
    assert summary.found + summary.wrong + summary.undecided == 20
    assert summary.found_share > 0.9  # a 25 % step in 2 % noise is easy
    fixed = trials(Noise.lognormal(0.02), 1.25, n=8, count=20, seed=1, fixed_rounds=10)
    assert fixed.rounds_per_probe == 10 and summary.rounds_per_probe < 10


def test_noise_from_values_needs_enough_positive_values():
    noise = Noise.from_values([1.0, 1.1, 0.9, 1.05, 0.95, 1.0])
    assert abs(float(np.median(noise.residuals))) < 1e-12 and noise.cv > 0
    with pytest.raises(ValueError, match="at least 5"):
        Noise.from_values([1.0, 0.0, -1.0, float("nan")])


def test_measured_values_take_the_commits_in_turn():
    from torchpulse.testing.bisect_trials import measured_values

    asked = []

    def measure(commit, keys):
        asked.append((commit, tuple(keys)))
        return Run(commit, {KEY: 1.0 + len(asked)})

    assert measured_values(measure, ["a", "b"], KEY, 5) == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert asked == [(c, (KEY,)) for c in "ababa"]


def test_each_round_goes_to_one_run_of_its_commits_in_turn():
    """A measure that can run several commits at once (AsvRuns.many) gets a round's commits
    together, in the round's order: GOOD and BAD alternating, then GOOD, the probe and BAD
    in every order in turn. The decisions are those of a run a commit."""
    batches = []

    class Batched(SimulatedHistory):
        def many(self, commits, keys=None):
            batches.append(tuple(commits))
            return [self(commit, keys) for commit in commits]

    plain = _history()
    batched = Batched(16, 11, 1.25, Noise.lognormal(0.02, seed=0), np.random.default_rng(0))
    one = bisect(plain, plain.commits[0], plain.commits[1:], KEY)
    together = bisect(batched, batched.commits[0], batched.commits[1:], KEY)
    assert together.found == one.found == plain.commits[11]
    assert [(p.commit, p.decision, p.rounds) for p in together.probes] == \
        [(p.commit, p.decision, p.rounds) for p in one.probes]
    good, bad = batched.commits[0], batched.commits[-1]
    assert batches[0] == (good, bad) and batches[1] == (bad, good)
    trios = [b for b in batches if len(b) == 3]
    assert trios and all(set(b) - {good, bad} for b in trios)
    assert len({b.index(good) for b in trios}) >= 2  # the order turns from round to round
    assert all(len(b) in (2, 3) for b in batches)
