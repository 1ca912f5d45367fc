"""Points as columns (what the results index loads): they read as the Points a plain loop
over asv's files makes, select and hash as those Points, and the canary flags them as it
flags Points."""

import dataclasses
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchpulse.analysis import disturbance, verdicts
from torchpulse.analysis.columns import PointColumns, disturbed_of, undisturbed, values_of
from torchpulse.analysis.detector import Point
from torchpulse.analysis.series import Series, SeriesKey, load_series
from torchpulse.evaluation import project as evaluation_project
from torchpulse.files import write_json_atomically
from torchpulse.results import asv_results
from torchpulse.results.gitrepo import History

POINTS = [
    Point("a" * 40, 1.5, (1.0, 2.0), 1000.0, 2.0),
    Point("b" * 40, 0.0, (), None, None),
    Point("c" * 40, 2.5, (2.5,), 3000.0, None, disturbed=True),
    Point("a" * 40, 3.0, (3.0, 3.5, 4.0), 4000.0, 1.0),
]


def test_columns_read_as_the_points_they_hold():
    cols = PointColumns.of(POINTS)
    assert list(cols) == POINTS
    assert [cols[i] for i in range(len(POINTS))] == POINTS
    assert cols[-1] == POINTS[-1] and cols == POINTS and cols[1:3] == POINTS[1:3]
    assert cols.take(np.array([3, 0])) == [POINTS[3], POINTS[0]]
    with pytest.raises(IndexError):
        cols[4]
    assert undisturbed(cols) == undisturbed(POINTS) == [POINTS[0], POINTS[1], POINTS[3]]
    assert list(disturbed_of(cols)) == list(disturbed_of(POINTS)) == [False, False, True, False]
    assert list(values_of(cols)) == list(values_of(POINTS))
    # a selection of a selection still finds its own samples in the shared array
    assert undisturbed(cols)[1:] == [POINTS[1], POINTS[3]]


def test_the_verdict_digest_follows_every_field_and_never_meets_a_lists():
    key = SeriesKey("b.time_x", (), "m", "e")

    def digest(points):
        return verdicts.digest(Series(key, "seconds", points), (0.01, 0.05, 0.015, 0.001))

    base = digest(PointColumns.of(POINTS))
    assert digest(PointColumns.of(list(POINTS))) == base
    assert digest(POINTS) != base  # lists are hashed otherwise: never a false hit
    changed = [
        [dataclasses.replace(POINTS[0], commit="d" * 40), *POINTS[1:]],
        [POINTS[0], Point("b" * 40, 0.5, ()), *POINTS[2:]],
        [*POINTS[:3], Point("a" * 40, 3.0, (3.0, 3.5, 4.5), 4000.0, 1.0)],
        [*POINTS[:3], Point("a" * 40, 3.0, (3.0, 3.5), 4000.0, 1.0)],
        [POINTS[0], POINTS[1], Point("c" * 40, 2.5, (2.5,), 3000.0, None), POINTS[3]],
    ]
    assert len({base, *(digest(PointColumns.of(c)) for c in changed)}) == 1 + len(changed)


def _reading(start, commit, slow, last_slow):
    return disturbance.Reading("m", "e", commit, "b.track_canary", start, 0.01, 1.0, slow,
                               last_slow)


times = st.one_of(st.none(), st.floats(0, 100_000, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100_000, allow_nan=False), st.sampled_from("abc"),
                          st.booleans(), st.booleans()), max_size=8),
       st.lists(st.tuples(times, st.one_of(st.none(), st.floats(0, 50, allow_nan=False)),
                          st.sampled_from("abc")), min_size=1, max_size=12))
def test_the_canary_flags_columns_as_it_flags_points(readings, points):
    found = sorted((_reading(t, c * 40, s, ls) for t, c, s, ls in readings),
                   key=lambda r: r.started_ms)
    starts = [r.started_ms for r in found]
    pts = [Point(c * 40, 1.0, (), started, seconds) for started, seconds, c in points]
    expected = [disturbance._disturbed(p, found, starts) for p in pts]
    got = disturbance._disturbed_columns(PointColumns.of(pts), found, starts)
    assert got.tolist() == expected


# --- the loader against a plain loop over asv's files ------------------------------------

NAME, OTHER = "b.time_x", "b.track_y"
GRID = [["'p'", "'q'"]]
values = st.one_of(st.none(), st.floats(-1, 10, allow_nan=False, allow_infinity=False))
samples = st.one_of(st.none(), st.lists(st.floats(-1, 10, allow_nan=False,
                                                  allow_infinity=False), max_size=4))
file_rows = st.tuples(st.lists(values, min_size=2, max_size=2),
                      st.lists(samples, min_size=2, max_size=2), values,
                      st.sampled_from(["2", "1"]), st.one_of(st.none(), st.floats(0, 9)))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("columns")
    return path, evaluation_project.git_repo(path, 4)


def _write(results, shas, files):
    write_json_atomically(results / "m" / "machine.json", {"machine": "m", "version": 1})
    write_json_atomically(results / "benchmarks.json", {
        NAME: {"name": NAME, "params": GRID, "param_names": ["p"], "type": "time",
               "unit": "seconds", "version": "2"},
        OTHER: {"name": OTHER, "params": [], "param_names": [], "type": "track",
                "unit": "graphs", "version": "1"}, "version": 2})
    commits = [*shas, "e" * 40]  # the last is on no branch
    for i, ((env, at), (vals, samps, other, version, duration)) in enumerate(files.items()):
        commit = commits[at]
        r = asv_results.new({"machine": "m"}, commit, 1_700_000_000_000 + i, "3.11", env)
        asv_results.add(r, NAME, version, GRID, vals, samps, duration=duration)
        asv_results.add(r, OTHER, "1", [], [other])
        asv_results.save(r, results, asv_results.filename("m", commit, env))


def _plain(results, shas):
    """What a loop over the files, one row at a time, makes of them."""
    position = {c: i for i, c in enumerate(shas)}
    versions = {NAME: "2", OTHER: "1"}
    found: dict[SeriesKey, list] = {}
    for file in sorted((results / "m").glob("*.json")):
        if file.name == "machine.json":
            continue
        r = asv_results.load(file, machine="m")
        if r.commit_hash not in position:
            continue
        for bench in asv_results.benchmarks(r):
            if asv_results.version(r, bench) not in (None, versions[bench]):
                continue
            started, seconds = asv_results.timing(r, bench)
            for combo, value, stored in asv_results.rows(r, bench):
                if not isinstance(value, float | int) or not 0 <= value < math.inf:
                    continue
                kept = tuple(float(x) for x in stored or ()
                             if isinstance(x, float | int) and 0 <= x < math.inf)
                found.setdefault(SeriesKey(bench, combo, "m", r.env_name), []).append(
                    (position[r.commit_hash], Point(r.commit_hash, float(value), kept,
                                                    started, seconds)))
    return {key: [p for _, p in sorted(points, key=lambda x: x[0])]
            for key, points in found.items()}


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.tuples(st.sampled_from(["e1", "e2"]), st.integers(0, 4)),
                       file_rows, min_size=1, max_size=8))
def test_the_loader_makes_the_points_a_plain_loop_makes(repo, files):
    """Values and samples that are none, negative or zero; an old benchmark version; a
    commit on no branch; two environments: through the index and without it."""
    path, shas = repo
    with tempfile.TemporaryDirectory(dir=path) as scratch:
        results = Path(scratch) / "results"
        _write(results, shas, files)
        expected = _plain(results, shas)
        for index in (None, Path(scratch) / "index.sqlite", Path(scratch) / "index.sqlite"):
            series, off = load_series(results, History(shas), index=index)
            assert {s.key: list(s.points) for s in series} == expected
            assert [s.key for s in series] == sorted(expected)
            assert off == sum(at == 4 for _, at in files)


def test_assess_flags_a_series_of_columns_as_one_of_points():
    """The canary's rule end to end: a slow reading flags the jobs beside it either way."""
    level = 0.017

    def series(name, values, starts, seconds):
        return Series(SeriesKey(name, (), "m", "e"), "seconds", [
            Point(f"c{i}", v, (v,) * 3, None if t is None else t * 1000.0, seconds)
            for i, (v, t) in enumerate(zip(values, starts, strict=True))])

    canary = series("bench_rnns." + disturbance.CANARY_METHOD,
                    [level, level, level * 2, level, level * 1.1, level, level],
                    [0, 100, 200, 300, 400, 500, 600], 0.3)
    jobs = series("bench_rnns.LSTM.time_forward", [0.01] * 7,
                  [50, 150, 250, None, 450, 550, 580], 10.0)
    columns = Series(jobs.key, jobs.unit, PointColumns.of(jobs.points))
    (as_points,), _ = disturbance.assess([canary, jobs])
    (as_columns,), _ = disturbance.assess([canary, columns])
    assert isinstance(as_columns.points, PointColumns)
    assert list(as_columns.points) == as_points.points
    assert [p.disturbed for p in as_points.points] == [False, True, True, False, False, False,
                                                       False]
