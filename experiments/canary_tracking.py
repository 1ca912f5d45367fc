#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results:
# docs/measurements.md and experiments/diary/detection.md.
"""Does the machine canary move when the workloads do? One process alternates, for a while,
the canary (2 threads and 1 thread), a memory stream (one thread copying 32 MB tensors) and
two workloads, each reading the median of 5 calls, then prints every reading's correlation
with the workloads.

    TORCHPULSE_PRESET=cpu .venv/bin/python experiments/canary_tracking.py [--seconds 240]

Nothing here is a hog: what moves is the machine itself (its host's other tenants).
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TORCHPULSE_PRESET", "cpu")

from hog_sensitivity import median_time, stream_copies  # noqa: E402  (beside it)

import benchmarks._common  # noqa: E402,F401  (the forkserver parent's warm-up)
from benchmarks import _canary, bench_autograd, bench_rnns  # noqa: E402
from torchpulse import suite  # noqa: E402

COLUMNS = ("canary 2 threads", "canary 1 thread", "memory stream", "resnet18 vjp",
           "LSTM cudnn step")


def median_ms(fn, calls: int = 5) -> float:
    return median_time(fn, calls) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240.0)
    args = parser.parse_args()
    pair = bench_autograd.FunctionalAutograd()
    pair.setup("resnet18", "vjp")
    lstm = bench_rnns.LSTM()
    lstm.setup("cudnn")
    suite.warm_up(lstm.workload, "step")
    stream = stream_copies()  # one thread from here on, as the workloads' setups left it
    rows = []
    start = time.time()
    print("    s  " + "  ".join(f"{c:>16}" for c in COLUMNS), flush=True)
    while time.time() - start < args.seconds:
        row = [_canary.reading(2) * 1e3, _canary.reading(1) * 1e3]
        torch.set_num_threads(1)  # reading() puts back what the setups left: one thread
        row += [median_ms(stream), median_ms(lambda: pair.time_task("resnet18", "vjp")),
                median_ms(lstm.workload.step)]
        rows.append(row)
        print(f"{time.time() - start:5.0f}  " + "  ".join(f"{v:16.2f}" for v in row),
              flush=True)
    data = np.array(rows)
    corr = np.corrcoef(data.T)
    print(f"\n{len(rows)} rounds in {time.time() - start:.0f} s")
    for i, name in enumerate(COLUMNS):
        col = data[:, i]
        print(f"{name:<17} cv {100 * col.std() / col.mean():4.1f} %  max/median "
              f"{col.max() / np.median(col):.2f}  correlation with resnet18 vjp "
              f"{corr[i, 3]:+.2f}, with the LSTM step {corr[i, 4]:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
