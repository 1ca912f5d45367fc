# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""A smooth model that follows a sharp rise, and change points charged for their places:
the curve merge (analysis/detector/curves.py) patched two ways, on the moving family's trend
kinds and on every family.

1. Beside the cubic, a ramp: y = a + b * clip(x, k1, k2), flat, then a line, then flat, its
   knots at points at least MIN_RAMP apart (closer, it would be a step). The smooth model is
   whichever of the two leaves the smaller residuals; each has 4 parameters.
2. The run's own steps are charged, in the Bayesian information criterion, for where each
   segment starts, as the ramp is for its knots (the merge counts their levels only).

curve_conditions.py found the cubic losing on that criterion in ~98 % of the staircases it
did not merge.

Run: .venv/bin/python experiments/curve_models.py trends SEED   (before and after, per kind:
         null series with a change point, 3- and 5-deviation steps located within 3)
     .venv/bin/python experiments/curve_models.py rise SEED      (3-deviation steps located,
         on the trend's rise or off it, before and after)
     .venv/bin/python experiments/curve_models.py families SEED  (families_in_process.py's
         table with the patch; without it, run that script itself)
Flags, which make "after" the detector itself (analysis/detector/curves.py since 2026-11-28:
the ramp and a logistic beside the cubic, the added-step test) with one constant changed:
--f=VALUE (its added-step test's F, STEP_F), --knots=N (the ramp's candidate knots, KNOTS;
100 tries every point of these series, as the first version of the experiment did)."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

from torchpulse.analysis.detector import Point, analyse, curves
from torchpulse.evaluation import moving

MIN_RAMP = 8
CURVE_PARAMS = 4


def _ramp(x, y):
    k1, k2 = np.triu_indices(len(x), MIN_RAMP)
    z = np.clip(x[None, :], x[k1][:, None], x[k2][:, None])  # a row a pair of knots
    zc = z - z.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    szy = zc @ yc
    best = int(np.argmax(szy * szy / np.maximum(np.einsum("ij,ij->i", zc, zc), 1e-300)))
    return np.column_stack([np.ones(len(x)), z[best]])


def _curve(x, y):
    t = (x - x[0]) / max(x[-1] - x[0], 1) * 2.0 - 1.0
    best = None
    for design in (np.vander(t, curves.DEGREE + 1),
                   *((_ramp(x, y),) if len(x) > MIN_RAMP else ())):
        fitted = curves._fitted(design, y)
        rss = float(np.sum((y - fitted) ** 2))
        if best is None or rss < best[0]:
            best = (rss, design, fitted)
    return best[1], best[2]


def _spans(positions, levels, changes, drifts):
    """curves.spans with the ramp and the steps charged for their places."""
    out = []
    for a, b, run in curves.candidates(positions, changes, drifts):
        inside = (positions >= a) & (positions < b)
        if len(run) < 2 or inside.sum() < curves.MIN_POINTS:
            continue
        x, y = positions[inside].astype(float), levels[inside]
        _, fitted = _curve(x, y)
        steps = curves._steps(x, run)
        if curves._bic(y, fitted, CURVE_PARAMS) <= curves._bic(
                y, curves._fitted(steps, y), steps.shape[1] + curves._places(run)) \
                and _noise_only(x, y - fitted, run):
            out.append((int(x[0]), int(x[-1]), tuple(run)))
    return out


JUMP_WINDOW, JUMP_Z = 5, 3.0


def _noise_only(x, residuals, run):
    """The merge's noise test before the added-step test replaced its jump test (as it
    was at 065588f): white residuals, no jump at any of the run's change points."""
    n = len(residuals)
    power = float(np.dot(residuals, residuals))
    if power == 0.0:
        return True
    if float(np.dot(residuals[:-1], residuals[1:])) / power > curves.RHO_SIGMAS / math.sqrt(n):
        return False
    sd = math.sqrt(power / max(n - curves.DEGREE - 1, 1))
    for f in run:
        if not f.change:
            continue
        k = int(np.searchsorted(x, f.start))
        w = min(JUMP_WINDOW, k, n - k)
        if w >= 2:
            jump = residuals[k:k + w].mean() - residuals[k - w:k].mean()
            if abs(jump) > JUMP_Z * sd * math.sqrt(2.0 / w):
                return False
    return True


def _flag(name):
    return next((a.split("=", 1)[1] for a in sys.argv if a.startswith(f"--{name}=")), None)


def patch():
    """With --f or --knots, the detector with that constant changed; else the experiment
    of 2026-11-27 (a ramp beside the cubic, the jump test)."""
    if _flag("f") or _flag("knots"):
        curves.STEP_F = float(_flag("f") or curves.STEP_F)
        curves.KNOTS = int(_flag("knots") or curves.KNOTS)
    else:
        curves._curve, curves.spans = (lambda x, y: _curve(x, y)[1]), _spans


def trends(seed: int) -> str:
    rng = np.random.default_rng([seed, 51])
    truths = moving.plan(100, 80, 160, rng)
    cells = []
    for kind in ("logistic", "exponential", "polynomial"):
        row = {}
        for cell in ("none", 0.03, 0.05):
            ts = [t for t in truths if t.shape == kind and (
                t.change == "none" if cell == "none"
                else t.change == "step" and math.isclose(t.size, cell))]
            hit = 0
            for t in ts:
                v = analyse([Point(f"c{i}", x, ())
                             for i, x in enumerate(moving.draw(t, 100, rng))])
                at = [c.index for c in v.change_points]
                hit += bool(at) if cell == "none" else any(abs(i - t.at) <= 3 for i in at)
            row[cell] = f"{hit / len(ts):.1%}"
        cells.append(f"{kind} {row['none']} / {row[0.03]} / {row[0.05]}")
    return " | ".join(cells)


def on_the_rise(seed: int) -> str:
    """3-deviation steps located, split by where they were planted: on the rise (the trend
    moves more than one deviation over the 6 commits around the step) or off it. The
    trend is drawn again from the generator's state (moving._trend follows the white
    noise in moving.draw)."""
    rng = np.random.default_rng([seed, 51])
    truths = moving.plan(100, 80, 160, rng)
    cells = []
    for kind in ("logistic", "exponential", "polynomial"):
        tally = {True: [0, 0], False: [0, 0]}
        for t in truths:
            if t.shape != kind or t.change != "step" or not math.isclose(t.size, 0.03):
                continue
            state = rng.bit_generator.state
            values = moving.draw(t, 100, rng)
            again = np.random.default_rng()
            again.bit_generator.state = state
            again.normal(0.0, moving.SIGMA, 100)
            trend = moving._trend(kind, 100, again)
            rise = trend[min(t.at + 3, 99)] - trend[max(t.at - 3, 0)] > moving.SIGMA
            v = analyse([Point(f"c{i}", x, ()) for i, x in enumerate(values)])
            tally[rise][0] += 1
            tally[rise][1] += any(abs(c.index - t.at) <= 3 for c in v.change_points)
        cells.append(f"{kind}: on the rise {tally[True][1]}/{tally[True][0]}, off it "
                     f"{tally[False][1]}/{tally[False][0]}")
    return " | ".join(cells)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    what, seed = args[0], int(args[1]) if len(args) > 1 else 17
    if what == "trends":
        print(f"seed {seed}, null with a change point / 3-dev. located / 5-dev. located")
        print("  before:", trends(seed))
        patch()
        print("  after: ", trends(seed))
    elif what == "rise":
        print(f"seed {seed}, 3-deviation steps located within 3, by where they were planted")
        print("  before:", on_the_rise(seed))
        patch()
        print("  after: ", on_the_rise(seed))
    else:
        spec = importlib.util.spec_from_file_location(
            "families_in_process", Path(__file__).with_name("families_in_process.py"))
        families = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(families)
        patch()
        families.main(seed, int(args[2]) if len(args) > 2 else 20)


if __name__ == "__main__":
    main()
