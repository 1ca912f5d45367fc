# An experiment, not product (run from a checkout with .venv); its results: docs/detection.md.
"""Which of the curve merge's conditions (analysis/detector/curves.py) keeps a staircase
along a smooth trend from becoming one drift: for each run of two or more same-way findings
the merge tests in the moving family's null trend series, whether the cubic lost on the
Bayesian information criterion to the run's own steps, and, where it did not, whether its
residuals passed the noise-only test (white, no jump at the run's change points).
Run: .venv/bin/python experiments/curve_conditions.py [SEED]"""

import sys
from collections import Counter

import numpy as np

from torchpulse.analysis.detector import Point, analyse, curves
from torchpulse.evaluation import moving

KINDS = ("logistic", "exponential", "polynomial")


def main(seed: int) -> None:
    bics: list[float] = []
    noise: list[bool] = []
    bic, noise_only = curves._bic, curves._noise_only

    def recorded_bic(*args):
        bics.append(bic(*args))
        return bics[-1]

    def recorded_noise(*args):
        noise.append(noise_only(*args))
        return noise[-1]

    curves._bic, curves._noise_only = recorded_bic, recorded_noise
    rng = np.random.default_rng(seed)
    truths = moving.plan(100, 40, 160, rng)
    for kind in KINDS:
        tally, with_change = Counter(), 0
        nulls = [t for t in truths if t.shape == kind and t.change == "none"]
        for truth in nulls:
            values = moving.draw(truth, 100, rng)
            bics.clear()
            noise.clear()
            verdict = analyse([Point(f"c{i}", v, ()) for i, v in enumerate(values)])
            with_change += bool(verdict.change_points)
            # spans() computes the cubic's BIC, then the steps', for each run it tests; the
            # noise-only test runs only where the cubic did not lose
            answers = iter(noise)
            for curve, steps in zip(bics[::2], bics[1::2], strict=True):
                if curve > steps:
                    tally["the cubic lost on BIC"] += 1
                else:
                    tally["merged" if next(answers) else "BIC ok, residuals not noise"] += 1
        print(f"{kind}: {len(nulls)} null series, {with_change} with a change point; runs "
              f"tested: {dict(tally)}")
    curves._bic, curves._noise_only = bic, noise_only


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 17)
