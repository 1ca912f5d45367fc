#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results:
# docs/measurements.md and experiments/diary/detection.md.
"""Benchmark commits where nothing measured changes while a CPU hog loads the machine for
part of the run, then print what the machine canary caught and what `torchpulse alert`
concludes with and without its rule.

    TORCHPULSE_PRESET=cpu .venv/bin/python experiments/measure_disturbance.py \
        --range HEAD~7..HEAD --bench '^(_canary|bench_rnns|bench_cnns)' --hog-from 1 --hog-to 2

Run it in a scratch clone: it replaces that clone's results of the range. asv measures the
range as make dashboard does, two rounds interleaved (one pass over the commits oldest first,
then one newest first: 2N commit lines in all); the hog (one busy Python process) starts when
asv reaches commit line --hog-from of its run and stops when it reaches the one after
--hog-to (default: the end). A point "overlaps" the hog when its stored asv job (its last
round) ran while the hog did, or when its commit's earlier round was measured under the hog
(asv keeps no time for that round); the canary should mark those points disturbed and none
of the others.
"""

import argparse
import dataclasses
import json
import subprocess
import sys
import time

from torchpulse.analysis import disturbance
from torchpulse.analysis.judge import evaluate
from torchpulse.analysis.model import REGRESSION
from torchpulse.analysis.series import load_series
from torchpulse.fleet.node import commit_line
from torchpulse.reports.phrases import counts
from torchpulse.results.project import Project

WINDOW = "hog-window.json"  # the hog's start and end (ms), for --analyse-only


def run_with_hog(commit_range: str, bench: str, hog_from: int, hog_to: int | None
                 ) -> tuple[float, float, list[str]]:
    """asv run over the range; returns the hog's window (ms since the epoch) and the commits
    (8-hex prefixes) whose earlier round ran under it."""
    asv = subprocess.Popen([sys.executable, "-m", "asv", "run", "--record-samples",
                            "--interleave-rounds", "--bench", bench, commit_range],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hog, started, ended, seen, earlier = None, 0.0, None, 0, []
    for line in asv.stdout:
        print(line, end="", flush=True)
        found = commit_line(line)
        if found:
            seen += 1
            if seen == hog_from and hog is None:
                started = time.time() * 1000
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                print(f"== CPU hog started (pid {hog.pid})", flush=True)
            if hog_to is not None and seen == hog_to + 1 and hog is not None:
                ended = _stop(hog)
                print("== CPU hog stopped", flush=True)
            if hog is not None and ended is None and not found[1]:
                earlier.append(found[0])
    asv.wait()
    if hog is not None and ended is None:
        ended = _stop(hog)
    if asv.returncode != 0:
        sys.exit(f"asv run failed ({asv.returncode})")
    if hog is None:
        sys.exit(f"asv ran fewer than {hog_from} commits: no hog")
    return started, ended, earlier


def _stop(hog: subprocess.Popen) -> float:
    hog.kill()
    hog.wait()
    return time.time() * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--range", default="HEAD~7..HEAD")
    parser.add_argument("--bench", default="^(_canary|bench_rnns|bench_cnns)")
    parser.add_argument("--hog-from", type=int, default=6,
                        help="the hog starts with this commit line of the run (1 = the first)")
    parser.add_argument("--hog-to", type=int, default=None,
                        help="the hog stops after this commit line of the run (default: the end)")
    parser.add_argument("--analyse-only", action="store_true",
                        help=f"no run: analyse the stored results with the window in {WINDOW}")
    args = parser.parse_args()
    if args.analyse_only:
        with open(WINDOW) as f:
            start, end, earlier = json.load(f)
    else:
        start, end, earlier = run_with_hog(args.range, args.bench, args.hog_from, args.hog_to)
        with open(WINDOW, "w") as f:
            json.dump([start, end, earlier], f)

    project = Project.load("asv.conf.json")
    history = project.history()
    raw, _ = load_series(project.results_dir, history)
    flagged, canary = disturbance.assess(raw)
    overlap = disturbed = caught = false = 0
    for s in flagged:
        for p in s.points:
            if p.started_ms is None or p.seconds is None:
                continue
            # peakmem_* run in the final round only
            hit = (p.started_ms < end and p.started_ms + 1000 * p.seconds > start
                   or ".time_" in s.key.benchmark and p.commit[:8] in earlier)
            overlap += hit
            disturbed += p.disturbed
            caught += hit and p.disturbed
            false += p.disturbed and not hit
    total = sum(len(s.points) for s in flagged)
    print(f"\n== {total} points; {overlap} measured while the hog ran; the canary marked "
          f"{caught} of them disturbed ({100 * caught / max(overlap, 1):.0f} %) and "
          f"{false} of the {total - overlap} others")
    print(f"   canary: {len(canary.readings)} readings, {len(canary.slow)} slow; "
          f"levels {', '.join(f'{v * 1e3:.1f} ms' for v in canary.levels.values())}")
    plain = [dataclasses.replace(s, points=[dataclasses.replace(p, disturbed=False)
                                            for p in s.points]) for s in flagged]
    for label, series in (("with the canary rule", flagged), ("without it", plain)):
        report = evaluate(series, history, canary=canary)
        print(f"   alert {label}: {len(report.alerts)} active regressions; "
              f"{counts(report)}")
        for c in report.checked:
            if c.status == REGRESSION:
                print(f"     {c.series.key.label()}: {c.alert.ratio - 1:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
