# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""What keeps a change point in the moving family's null trend series (logistic, exponential,
polynomial growth, no step): for each such series the detector gives a change point, which of
the curve merge's conditions (analysis/detector/curves.py) decided the runs of its findings:
no run of two same-way findings; a run cut below two at a turn; the smooth curve lost on the
Bayesian information criterion to the run's own steps; its residuals not white; a step at
one of the run's change points adds to the curve fitted again with it (F above STEP_F).
(Before 2026-11-28 this script counted the cubic's BIC and the old noise-only test instead;
experiments/diary/detection.md gives both tables.)
Run: .venv/bin/python experiments/curve_conditions.py [SEED]"""

import sys
from collections import Counter

import numpy as np

from torchpulse.analysis.detector import Point, analyse, curves
from torchpulse.evaluation import moving

KINDS = ("logistic", "exponential", "polynomial")


def decide(positions, levels, run):
    """What the merge decided for one run (the conditions of curves.spans, in its order)."""
    inside = (positions >= run[0]) & (positions < run[1])
    found = run[2]
    if len(found) < 2 or inside.sum() < curves.MIN_POINTS:
        return "run cut below two at a turn"
    x, y = positions[inside].astype(float), levels[inside]
    fitted = curves._curve(x, y)
    steps = curves._steps(x, found)
    if curves._bic(y, fitted, curves.PARAMS) > curves._bic(
            y, curves._fitted(steps, y), steps.shape[1] + curves._places(found)):
        return "the curve lost on BIC"
    if not curves._white(y - fitted, y):
        return "residuals not white"
    if curves._real_step(x, y, found):
        return "a step adds to the curve"
    return "merged"


def main(seed: int) -> None:
    decided: list[str] = []
    spans = curves.spans

    def recorded(positions, levels, changes, drifts):
        tested = curves.candidates(positions, changes, drifts)
        decided.extend(decide(positions, levels, r) for r in tested)
        if not tested:
            decided.append("no run of two")
        return spans(positions, levels, changes, drifts)

    curves.spans = recorded
    rng = np.random.default_rng([seed, 51])
    truths = moving.plan(100, 80, 160, rng)
    tally: dict[str, Counter] = {kind: Counter() for kind in KINDS}
    nulls = Counter()
    for truth in truths:
        values = moving.draw(truth, 100, rng)
        if truth.shape not in KINDS or truth.change != "none":
            continue
        decided.clear()
        verdict = analyse([Point(f"c{i}", v, ()) for i, v in enumerate(values)])
        nulls[truth.shape] += 1
        if verdict.change_points:
            kept = sorted(set(decided) - {"merged"}) or ["merged, a change point outside it"]
            tally[truth.shape][", ".join(kept)] += 1
    curves.spans = spans
    for kind in KINDS:
        print(f"{kind}: {nulls[kind]} null series, {sum(tally[kind].values())} with a change "
              f"point: {dict(tally[kind])}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 17)
