"""A generated asv project of COMMITS commits x SERIES series (10 samples a point, a few
planted steps), for measuring how alert and publish cost grows with history (issue:
histories the size of PyTorch's). Usage:

    .venv/bin/python experiments/scale_history.py DIR COMMITS SERIES [SEED]
"""

import sys
import time
from pathlib import Path

from torchpulse.evaluation import synthetic


def main(path: str, commits: str, series: str, seed: str = "0") -> None:
    root = Path(path)
    root.mkdir(parents=True)
    start = time.perf_counter()
    n = int(series)
    # about a tenth of the series carry planted changes: per noise level (three), five step
    # sizes, an improvement, a spike, a dip, a toggle and a jump per cell; the rest is noise
    per_cell = max(1, n // 300)
    planted = 3 * 10 * per_cell
    truths = synthetic.build(root, commits=int(commits), per_cell=per_cell,
                             noise_series=max(0, n - planted) // 3, seed=int(seed),
                             distances=(5,))
    print(f"{root}: {int(commits)} commits x {len(truths)} series in "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(*sys.argv[1:])
