"""A series' points as columns: what the results index loads, a few arrays a series instead
of a Python object a point (a history of a thousand commits of 400 series is 400,000
points), read as a sequence of detector.Point made on demand.

The analysis reads points as Points; the commands' hot paths (the canary's flags, leaving
disturbed points out, the verdict cache's digest, counts) use the columns directly. Samples
live in one flat array that selections share.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from torchpulse.analysis.detector import Point


class PointColumns(Sequence[Point]):
    """Points oldest first: commit ``commits[commit_ids[i]]``, ``values[i]``, the samples
    ``samples[offsets[i]:offsets[i] + counts[i]]``, ``started[i]`` and ``seconds[i]`` (NaN:
    not stored) and ``disturbed[i]``."""

    __slots__ = ("commits", "commit_ids", "values", "offsets", "counts", "samples",
                 "started", "seconds", "disturbed")

    def __init__(self, commits: Sequence[str], commit_ids: np.ndarray, values: np.ndarray,
                 offsets: np.ndarray, counts: np.ndarray, samples: np.ndarray,
                 started: np.ndarray, seconds: np.ndarray,
                 disturbed: np.ndarray | None = None) -> None:
        self.commits = commits
        self.commit_ids = commit_ids
        self.values = values
        self.offsets = offsets
        self.counts = counts
        self.samples = samples
        self.started = started
        self.seconds = seconds
        self.disturbed = (np.zeros(len(values), dtype=bool) if disturbed is None
                          else disturbed)

    @classmethod
    def of(cls, points: Sequence[Point]) -> PointColumns:
        """The columns of ``points`` (samples as floats: a None among them becomes NaN)."""
        counts = np.array([len(p.samples) for p in points], dtype=np.int64)
        commits = list(dict.fromkeys(p.commit for p in points))
        where = {c: i for i, c in enumerate(commits)}

        def floats(xs: list) -> np.ndarray:
            return np.array([math.nan if x is None else x for x in xs], dtype=float)

        return cls(commits, np.array([where[p.commit] for p in points], dtype=np.int64),
                   floats([p.value for p in points]), np.cumsum(counts) - counts, counts,
                   floats([x for p in points for x in p.samples]),
                   floats([p.started_ms for p in points]), floats([p.seconds for p in points]),
                   np.array([p.disturbed for p in points], dtype=bool))

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, i: int) -> Point: ...

    @overload
    def __getitem__(self, i: slice) -> PointColumns: ...

    def __getitem__(self, i: int | slice) -> Point | PointColumns:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        n = len(self)
        if not -n <= i < n:
            raise IndexError("point index out of range")
        i %= n
        at, k = int(self.offsets[i]), int(self.counts[i])
        return Point(self.commits[self.commit_ids[i]], float(self.values[i]),
                     tuple(self.samples[at:at + k].tolist()), _none(self.started[i]),
                     _none(self.seconds[i]), bool(self.disturbed[i]))

    def __iter__(self) -> Iterator[Point]:
        counts = self.counts.tolist()
        flat = self.samples[_ranges(self.offsets, self.counts)].tolist()  # its own only
        commits, at = self.commits, 0
        for c, v, k, st, sec, d in zip(
                self.commit_ids.tolist(), self.values.tolist(), counts,
                self.started.tolist(), self.seconds.tolist(), self.disturbed.tolist(),
                strict=True):
            yield Point(commits[c], v, tuple(flat[at:at + k]), None if math.isnan(st) else st,
                        None if math.isnan(sec) else sec, d)
            at += k

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment] (a sequence compared by value)

    def __repr__(self) -> str:
        return f"PointColumns({list(self)!r})"

    def take(self, which: np.ndarray) -> PointColumns:
        """The points at ``which`` (indices or a boolean mask), sharing the samples."""
        return PointColumns(self.commits, self.commit_ids[which], self.values[which],
                            self.offsets[which], self.counts[which], self.samples,
                            self.started[which], self.seconds[which], self.disturbed[which])

    def with_disturbed(self, flags: np.ndarray) -> PointColumns:
        return PointColumns(self.commits, self.commit_ids, self.values, self.offsets,
                            self.counts, self.samples, self.started, self.seconds,
                            np.asarray(flags, dtype=bool))

    def commit_list(self) -> list[str]:
        commits = self.commits
        return [commits[c] for c in self.commit_ids.tolist()]

    def content(self) -> bytes:
        """What a verdict of these points depends on (commit, value, samples, disturbed),
        as bytes."""
        gather = _ranges(self.offsets, self.counts)
        return b"\0".join([
            "\n".join(self.commit_list()).encode(), self.values.tobytes(),
            self.counts.astype(np.int64).tobytes(), self.samples[gather].tobytes(),
            self.disturbed.tobytes()])


def _none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _ranges(offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices offsets[i] .. offsets[i] + counts[i] - 1 of every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(offsets - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return starts + np.arange(total)


def values_of(points: Sequence[Point]) -> np.ndarray:
    """Every point's value."""
    if isinstance(points, PointColumns):
        return points.values
    return np.array([p.value for p in points], dtype=float)


def disturbed_of(points: Sequence[Point]) -> np.ndarray:
    """Every point's disturbed flag."""
    if isinstance(points, PointColumns):
        return points.disturbed
    return np.array([p.disturbed for p in points], dtype=bool)


def undisturbed(points: Sequence[Point]) -> Sequence[Point]:
    """The points the machine canary did not flag (what detection uses)."""
    if isinstance(points, PointColumns):
        return points.take(~points.disturbed)
    return [p for p in points if not p.disturbed]
