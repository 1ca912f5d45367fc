#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: docs/measurements.md.
"""How often `torchpulse bisect` finds a planted slowdown, and at what cost, against a fixed
10-runs-per-probe scheme (torchpulse.culprit.simulate).

    .venv/bin/python experiments/bisect_trials.py [--trials 500] [--noise-runs 30] [--workdir DIR]

1. Writes the fixture repository (torchpulse.culprit.fixture, 33 commits: GOOD and 32
   candidates) with its step at commit 21, for +25 % and for +10 %.
2. Measures this machine's noise: --noise-runs real runs (asv, fresh processes) of GOOD and
   the commit after it (the same code), in turn, so that every run installs its commit.
3. Simulates --trials bisections per step size and scheme with that noise (the step at a
   random commit each time).
4. Bisects each fixture once for real.
Prints a markdown table of each.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from torchpulse.culprit.bisect import bisect
from torchpulse.culprit.runs import AsvRuns
from torchpulse.results.project import Project
from torchpulse.testing import bisect_trials as simulate
from torchpulse.testing import culprit_repo as fixture

STEP_AT = 21
COMMITS = 33


def say(line):
    print(line, file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--noise-runs", type=int, default=30)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bisect-trials-"))
    fixtures = {}
    for factor in (1.25, 1.10):
        root = work / f"step{round((factor - 1) * 100)}"
        if not root.exists():
            fixture.make(root, COMMITS, STEP_AT, factor)
        runs = AsvRuns(Project.load(root / "asv.conf.json"), ".", root / "scratch")
        runs.prepare()
        fixtures[factor] = (root, runs)

    root, runs = fixtures[1.25]
    same = [runs.resolve("HEAD~32"), runs.resolve("HEAD~31")]  # the same code
    started = time.monotonic()
    values = simulate.measured_values(runs, same, fixture.BENCHMARK, args.noise_runs, say)
    noise = simulate.Noise.from_values(values)
    print(f"noise: {len(values)} runs of {fixture.BENCHMARK}, GOOD and the next commit in "
          f"turn, in "
          f"{time.monotonic() - started:.0f} s: median {sorted(values)[len(values) // 2] * 1e3:.3f}"
          f" ms, robust cv {noise.cv:.2%}, range {min(values) * 1e3:.3f}-"
          f"{max(values) * 1e3:.3f} ms\n")

    print("| step | scheme | found | wrong | undecided | runs of the probe per probe | "
          "processes per bisection |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for factor in (1.25, 1.10):
        for name, fixed in (("sequential (torchpulse bisect)", None), ("fixed 10 runs", 10)):
            s = simulate.trials(noise, factor, n=COMMITS - 1, count=args.trials,
                                fixed_rounds=fixed, seed=1)
            print(f"| +{round((factor - 1) * 100)} % | {name} | {s.found / s.trials:.1%} | "
                  f"{s.wrong / s.trials:.1%} | {s.undecided / s.trials:.1%} | "
                  f"{s.rounds_per_probe:.1f} | {s.runs_per_trial:.0f} |")
    print()

    for factor, (_root, runs) in fixtures.items():
        good = runs.resolve("HEAD~32")
        candidates = runs.project.history().commits[1:]
        started, before = time.monotonic(), runs.count
        result = bisect(runs, good, candidates, fixture.BENCHMARK, progress=say)
        verdict = ("right" if result.found == candidates[STEP_AT - 1] else
                   "WRONG" if result.found else "undecided")
        print(f"real bisection, +{round((factor - 1) * 100)} % step at commit {STEP_AT} of 32: "
              f"{verdict} ({result.found and result.found[:12]}), {len(result.probes)} probes, "
              f"{result.rounds / max(len(result.probes), 1):.1f} runs of the probe per probe, "
              f"{runs.count - before} processes, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
