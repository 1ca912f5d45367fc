"""A yardstick for the moving family (issue 51): for the quote and the random walk, a test that
knows how their noise was made but not where or how large a step is.

Both kinds are sums of their commit-to-commit moves (evaluation/moving.py): the walk's are
normal with WALK_SHARE deviations, the quote's are zero or, at QUOTE_RATE of commits, normal
with one deviation. A planted step is one more move of its size. Where nothing else is known
about a move, the largest move is the evidence there is (for the walk's normal moves, the
likelihood-ratio test of one step of unknown size); this test lists a change where the
largest rise exceeds c, c set so that NULL_RATE of the series without a change are listed,
and reports how many steps it then places within 3 commits, as the family's target counts.

    .venv/bin/python experiments/moving_bounds.py [SERIES]

Prints, per kind and step size, the c that lists 1 % of the null series and the steps found
there, and the largest c that finds 90 % of the steps with the null series it then lists;
experiments/diary/detection.md has the figures.
"""

import sys

import numpy as np

from torchpulse.evaluation import moving

NULL_RATE = 0.01  # issue 51's target: under 1 % of the null series with a change point


def moves(kind: str, series: int, commits: int, rng: np.random.Generator) -> np.ndarray:
    """The commit-to-commit moves of ``series`` null series, in deviations."""
    if kind == "walk":
        return rng.normal(0.0, moving.WALK_SHARE, (series, commits - 1))
    updated = rng.random((series, commits - 1)) < moving.QUOTE_RATE
    return np.where(updated, rng.normal(0.0, 1.0, (series, commits - 1)), 0.0)


def bound(kind: str, step: float, series: int, commits: int, seed: int
          ) -> tuple[float, float, float, float]:
    """(c for NULL_RATE, steps found there, c that finds 90 % of steps, null listed there)."""
    rng = np.random.default_rng([seed, 51])
    null = np.sort(moves(kind, series, commits, rng).max(axis=1))
    with_step = moves(kind, series, commits, rng)
    at = rng.integers(commits // 5, commits - moving.AFTER, series)
    with_step[np.arange(series), at] += step
    top = with_step.max(axis=1)
    placed = abs(with_step.argmax(axis=1) - at) <= 3
    limit = float(np.quantile(null, 1.0 - NULL_RATE))
    # the largest c that still finds 90 % (a step is found where top > c and it is placed)
    c90 = float(np.quantile(np.where(placed, top, -np.inf), 0.1)) - 1e-9
    listed = 1.0 - np.searchsorted(null, c90, side="right") / series
    return limit, float(((top > limit) & placed).mean()), c90, float(listed)


def main() -> None:
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    print(f"{'kind':6s} {'step':>5s} | {'c at 1 % null':>13s} {'steps found':>11s} | "
          f"{'c finding 90 %':>14s} {'null listed':>11s}")
    for kind in ("quote", "walk"):
        for step in moving.STEP_SIGMAS:
            limit, found, c90, listed = bound(kind, step, series, 100, seed=17)
            print(f"{kind:6s} {step:5.1f} | {limit:13.2f} {100 * found:10.2f}% | "
                  f"{c90:14.2f} {100 * listed:10.2f}%")


if __name__ == "__main__":
    main()
