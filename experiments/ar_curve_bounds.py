# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""Can one test hold both the curves and the AR kinds of the moving family (issue 51)?
The likelihood ratio of "a level or a curve, one step, AR(1) noise" against "a level or a
curve, AR(1) noise": phi (PHIS) and the deviation profiled out, the mean the best of a flat
level, ramps (flat, a line, flat; knots at least 8 commits apart) and logistics of any centre
and width (the detector's shapes, experiments/curve_bounds.generic, without its cubic), the
step at any commit that leaves 3 on either side. One bar for all kinds (the largest kind's
1 % quantile of its null series), as a detector that does not know the kind would use;
steps located within 3 commits, as the family counts; white noise's 2.5-deviation steps at
the newest commits as in experiments/ar_bounds.py. The outlier kind sets no bar: its
spikes swamp a Gaussian likelihood, and the detector sets them aside before it segments.

    .venv/bin/python experiments/ar_curve_bounds.py [NULL_SERIES] [STEP_SERIES] [SEED] [CHARGE]
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import ar_bounds  # noqa: E402

from torchpulse.evaluation import moving  # noqa: E402

PHIS = np.array([0.0, 0.15, 0.3, 0.45, 0.6, 0.7, 0.8, 0.87, 0.92, 0.95])
KINDS = ("white", "walk", "ar1-0.3", "ar1-0.6", "ar1-0.9", "seasonal", "outliers",
         "logistic", "exponential", "polynomial")
N = 100
CHUNK = 8
# the steepest logistic, as a share of the history: steeper, a logistic is a step (at 0.015
# it took white noise's steps as its own rise, and nothing was left for the step to explain)
MIN_WIDTH = 0.04
# what a curve pays over the flat level, in log n (BIC's charge for one more parameter per
# unit); argv[4]
CHARGE = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0


def shapes(n: int) -> np.ndarray:
    """The candidate curves (rows), each rising from 0 to 1."""
    t = np.linspace(0.0, 1.0, n)
    knots = [(a, b) for a in range(0, n, 4) for b in range(a + 8, n, 4)]
    ramps = np.array([np.clip((np.arange(n) - a) / (b - a), 0.0, 1.0) for a, b in knots])
    c, w = np.meshgrid(np.linspace(-0.1, 1.1, 49), np.geomspace(MIN_WIDTH, 0.5, 24), indexing="ij")
    logistic = 1.0 / (1.0 + np.exp(-(t[None, :] - c.reshape(-1, 1)) / w.reshape(-1, 1)))
    logistic = logistic[np.ptp(logistic, axis=1) > 1e-3]
    return np.concatenate([ramps, logistic])


class Model:
    """For each phi: the whitened designs [1, curve] made orthonormal, and the whitened step
    columns' projections on them; the flat level is a curve of its own (its second column
    left out)."""

    def __init__(self, n: int):
        self.n = n
        self.places = np.arange(ar_bounds.HELD, n - ar_bounds.HELD + 1)
        steps = (np.arange(n)[None, :] >= self.places[:, None]).astype(float)  # K x n
        curves = shapes(n)
        self.per_phi = []
        for phi in PHIS:
            one = ar_bounds._whiten(np.ones(n), phi)
            q1 = one / np.linalg.norm(one)
            wc = ar_bounds._whiten(curves, phi)
            wc -= np.outer(wc @ q1, q1)
            q2 = wc / np.linalg.norm(wc, axis=1, keepdims=True)  # m x n
            ws = ar_bounds._whiten(steps, phi)  # K x n
            s1 = ws @ q1  # K
            s2 = q2 @ ws.T  # m x K
            norm = (ws * ws).sum(axis=1)
            den_flat = norm - s1 * s1
            den = den_flat[None, :] - s2 * s2  # m x K
            self.per_phi.append((phi, q1, q2, ws, s1, s2, den_flat, den))

    def statistic(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(twice the log likelihood ratio, the step's place) for each row of ``y``."""
        best0 = np.full(len(y), -np.inf)
        best1 = np.full(len(y), -np.inf)
        where = np.zeros(len(y), dtype=int)
        n = self.n
        for phi, q1, q2, ws, s1, s2, den_flat, den in self.per_phi:
            z = ar_bounds._whiten(y, phi)
            a1 = z @ q1  # N
            a2 = z @ q2.T  # N x m
            zz = (z * z).sum(axis=1)
            zs = z @ ws.T  # N x K
            flat0 = zz - a1 * a1
            curve0 = flat0[:, None] - a2 * a2  # N x m
            r_flat = zs - a1[:, None] * s1[None, :]  # N x K
            flat1 = flat0[:, None] - r_flat ** 2 / den_flat[None, :]
            r = r_flat[:, None, :] - a2[:, :, None] * s2[None]  # N x m x K
            curve1 = curve0[:, :, None] - r ** 2 / den[None]
            jac = 0.5 * np.log(1.0 - phi * phi)
            # a curve costs two parameters more than the flat level: BIC's charge, so that
            # the null's best fit is not a curve chosen among thousands for noise
            charge = CHARGE * np.log(n)
            ll0 = np.maximum(-0.5 * n * np.log(flat0),
                             -0.5 * n * np.log(curve0.min(axis=1)) - charge) + jac
            c1 = curve1.reshape(len(y), -1)
            best_curve = c1.argmin(axis=1)
            ll_curve = -0.5 * n * np.log(c1[np.arange(len(y)), best_curve]) - charge
            k_flat = flat1.argmin(axis=1)
            ll_flat = -0.5 * n * np.log(flat1[np.arange(len(y)), k_flat])
            ll1 = np.maximum(ll_flat, ll_curve) + jac
            place = np.where(ll_flat >= ll_curve, self.places[k_flat],
                             self.places[best_curve % len(self.places)])
            best0 = np.maximum(best0, ll0)
            better = ll1 > best1
            best1 = np.where(better, ll1, best1)
            where = np.where(better, place, where)
        return 2.0 * (best1 - best0), where


def chunked(model: Model, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    parts = [model.statistic(y[i:i + CHUNK]) for i in range(0, len(y), CHUNK)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def main() -> None:
    nulls = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rng = np.random.default_rng([seed, 51, 6])
    model = Model(N)
    null, stepped = {}, {}
    for kind in KINDS:
        null[kind] = chunked(model, ar_bounds.draws(kind, 0.0, nulls, rng)[0])[0]
        cells = [(2.5, h) for h in ar_bounds.HELD_FOR] if kind == "white" else \
            [(k, 0) for k in moving.STEP_SIGMAS]
        for k, held in cells:
            y, at = ar_bounds.draws(kind, k * moving.SIGMA, steps, rng, held)
            stat, place = chunked(model, y)
            stepped[kind, k, held] = (stat, np.abs(place - at) <= ar_bounds.LOCATED)
    own = {kind: float(np.quantile(null[kind], 1.0 - ar_bounds.NULL_RATE)) for kind in KINDS}
    # the outliers' 5-10 deviation spikes swamp a Gaussian likelihood: the detector sets such
    # spikes aside before it segments, so they set no bar here
    bar = max(v for k, v in own.items() if k != "outliers")
    print(f"one bar for all: {bar:.1f} (each kind's own: "
          + ", ".join(f"{k} {v:.1f}" for k, v in own.items()) + ")")
    print("| kind | nulls at the one bar | steps located at the one bar |")
    print("|---|---:|---:|")
    for kind in KINDS:
        cells = " / ".join(f"{k:g} dev" + (f", newest {h}" if h else "")
                           + f" {np.mean((s > bar) & near):.1%}"
                           for (which, k, h), (s, near) in stepped.items() if which == kind)
        print(f"| {kind} | {np.mean(null[kind] > bar):.2%} | {cells} |")


if __name__ == "__main__":
    main()
