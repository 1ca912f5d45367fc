"""Series of evaluate-detection's moving family (torchpulse.evaluation.moving) as points, for
the detector's tests."""

import numpy as np

from torchpulse.analysis.detector import Point
from torchpulse.evaluation import moving
from torchpulse.evaluation.shapes import ShapeTruth


def moving_points(kind, seed, n=100, step_at=None, sigmas=5.0):
    """One series of ``kind`` over ``n`` commits, a step of ``sigmas`` noise deviations
    planted at ``step_at`` when given."""
    truth = ShapeTruth("b", "'0'", kind, "step" if step_at else "none",
                       sigmas * moving.SIGMA if step_at else 0.0, step_at or -1)
    values = moving.draw(truth, n, np.random.default_rng(seed))
    return [Point(f"c{i}", v) for i, v in enumerate(values)]
