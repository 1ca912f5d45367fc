#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: docs/measurements.md.
"""Run one asv benchmark on the same commit several times and print the spread of its result.

    TORCHPULSE_PRESET=cpu .venv/bin/python experiments/measure_stability.py \
        --bench bench_rnns.LSTM.time_forward --param cudnn --runs 10

Each run is a separate `asv run --record-samples COMMIT^!` selecting that one parameter
(asv matches --bench against "name(param)"), so every run has its own process, build and
warm-up: the spread is between runs, which is what a commit-to-commit comparison sees.
"""

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

from asv.config import Config
from asv.machine import Machine
from asv.results import iter_results_for_machine_and_hash


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", required=True, help="full asv benchmark name")
    parser.add_argument("--param", required=True, help="parameter value, e.g. cudnn")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args()

    asv = [sys.executable, "-m", "asv"]
    sha = subprocess.run(["git", "rev-parse", args.commit], check=True, capture_output=True,
                         text=True).stdout.strip()
    conf = Config.load("asv.conf.json")
    machine = Machine.load(interactive=False).machine
    values = []
    for i in range(args.runs):
        selector = f"^{re.escape(args.bench)}\\({re.escape(repr(args.param))}\\)$"
        subprocess.run([*asv, "run", "--record-samples", "--bench", selector, f"{sha}^!"],
                       check=True, stdout=subprocess.DEVNULL)
        [result] = iter_results_for_machine_and_hash(Path(conf.results_dir), machine, sha)
        [value] = result.get_result_value(args.bench, [[repr(args.param)]])
        values.append(value)
        print(f"run {i + 1:2d}: {value * 1e3:.3f} ms", flush=True)
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean
    print(f"{args.bench}[{args.param}] over {len(values)} runs of {sha[:8]}: "
          f"mean {mean * 1e3:.3f} ms, min {min(values) * 1e3:.3f}, "
          f"max {max(values) * 1e3:.3f}, CV {cv:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
