"""Runs inside Apache Otava's own virtual environment (evaluate-detection makes it): reads
series as JSON on stdin, prints Otava's change points with its default options.

Only the standard library and otava are importable there (Otava pins an old numpy), so this
file imports nothing from torchpulse.
"""

import json
import sys

from otava.analysis import compute_change_points
from otava.series import AnalysisOptions


def main() -> None:
    series = json.load(sys.stdin)
    defaults = AnalysisOptions()  # window_len 50, max_pvalue 0.001, min_magnitude 0.0
    out = []
    for values in series:
        points, _weak = compute_change_points(
            list(values), window_len=defaults.window_len, max_pvalue=defaults.max_pvalue,
            min_magnitude=defaults.min_magnitude)
        out.append([int(p.index) for p in points])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
