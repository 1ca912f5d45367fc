"""The verdict cache and the parallel computation: the same verdicts as computing each series
afresh, recomputed exactly when a point, the settings or the rule change, and nothing but
verdicts ever read back from the cache."""

import os
import pickle
import sqlite3

import numpy as np

from torchpulse.analysis import verdicts
from torchpulse.analysis.detector import Point, analyse
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.results import seal

SETTINGS = (0.01, 0.05, 0.015, 0.001)


def _series(n=12, commits=30, seed=0, unit="seconds"):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        step = 1.0 + 0.2 * (i % 3 == 0) * (np.arange(commits) >= commits - 4)
        values = 0.01 * step * np.exp(rng.normal(0, 0.02, commits))
        points = [Point(f"{c:040x}", float(v), tuple(float(v) * np.exp(rng.normal(0, 0.01, 5))))
                  for c, v in enumerate(values)]
        out.append(Series(SeriesKey(f"b.time_{i}", (), "m", "e"), unit, points))
    return out


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, series):
        self.calls += 1
        return analyse(series.points)


def test_a_cached_verdict_is_the_computed_one_and_is_not_computed_again(tmp_path):
    series = _series()
    cache = verdicts.Cache(tmp_path / "index.sqlite")
    first = Counting()
    fresh = verdicts.compute(series, first, SETTINGS, cache)
    assert first.calls == len(series)
    again = Counting()
    assert verdicts.compute(series, again, SETTINGS, cache) == fresh
    assert again.calls == 0
    assert fresh == [analyse(s.points) for s in series]


def test_a_new_point_other_settings_or_another_rule_compute_again(tmp_path):
    series = _series()
    cache = verdicts.Cache(tmp_path / "index.sqlite")
    verdicts.compute(series, Counting(), SETTINGS, cache)
    changed = list(series)
    changed[3] = Series(series[3].key, series[3].unit,
                        [*series[3].points, Point("f" * 40, 0.5, (0.5, 0.5, 0.5))])
    changed[5] = Series(series[5].key, series[5].unit,
                        [*series[5].points[:-1], Point(series[5].points[-1].commit,
                                                       series[5].points[-1].value,
                                                       series[5].points[-1].samples,
                                                       disturbed=True)])
    counting = Counting()
    got = verdicts.compute(changed, counting, SETTINGS, cache)
    assert counting.calls == 2 and got[3] == analyse(changed[3].points)
    counting = Counting()
    verdicts.compute(changed, counting, (0.05, *SETTINGS[1:]), cache)
    assert counting.calls == len(series)
    counted = [Series(s.key, "instructions", s.points) for s in changed]
    counting = Counting()
    verdicts.compute(counted, counting, (0.05, *SETTINGS[1:]), cache)
    assert counting.calls == len(series)


class Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_only_verdicts_are_read_back_and_damage_is_a_miss(tmp_path):
    series = _series(n=3)
    where = tmp_path / "index.sqlite"
    cache = verdicts.Cache(where)
    verdicts.compute(series, Counting(), SETTINGS, cache)
    con = sqlite3.connect(where)
    labels = [label for (label,) in con.execute("SELECT series FROM verdicts ORDER BY series")]
    # sealed with the cache's own key, as by one who read it: the unpickler still refuses
    key = seal.key(tmp_path)
    for label, blob in ((labels[0], pickle.dumps(Boom())), (labels[1], b"garbage")):
        d = con.execute("SELECT digest FROM verdicts WHERE series = ?", (label,)).fetchone()[0]
        con.execute("UPDATE verdicts SET verdict = ?, seal = ? WHERE series = ?",
                    (blob, seal.seal(key, label, d, blob), label))
    con.commit()
    counting = Counting()
    got = verdicts.compute(series, counting, SETTINGS, cache)
    assert counting.calls == 2 and got == [analyse(s.points) for s in series]


def test_a_verdict_copied_from_another_series_is_a_miss(tmp_path):
    """A verdict row edited to hold another series' verdict kept its label and digest and
    was used as it was: its seal binds the three together."""
    series = _series(n=4)  # series 0 and 3 step at the end, 1 and 2 do not
    where = tmp_path / "index.sqlite"
    cache = verdicts.Cache(where)
    fresh = verdicts.compute(series, Counting(), SETTINGS, cache)
    assert fresh[0] != fresh[1]
    con = sqlite3.connect(where)
    labels = [repr(s.key) for s in series]
    con.execute("UPDATE verdicts SET verdict = (SELECT verdict FROM verdicts WHERE series = ?) "
                "WHERE series = ?", (labels[0], labels[1]))
    con.commit()
    counting = Counting()
    assert verdicts.compute(series, counting, SETTINGS, cache) == fresh
    assert counting.calls == 1


def test_many_series_are_computed_across_processes_with_the_same_verdicts(monkeypatch):
    # two workers whatever this process may use (make test keeps each of its own workers
    # to one core): what is checked is the workers' answers, not their speed
    monkeypatch.setattr(verdicts, "_cores", lambda: 2)
    series = _series(n=40, seed=4)
    monkeypatch.setattr(verdicts, "PARALLEL_FROM", 4)
    pids = []

    def where(s):
        pids.append(os.getpid())
        return analyse(s.points)

    got = verdicts.compute(series, where, SETTINGS)
    assert got == [analyse(s.points) for s in series]
    assert pids == []  # computed in the workers, not here


def test_workers_take_sigterm_plainly_and_end_on_their_own(monkeypatch):
    """Under the commands' SIGTERM-as-Ctrl-C handler (as `dashboard` and `alert` run), the
    workers get SIGTERM's default back: with the handler inherited, a worker was found still
    waiting for work after the pool's SIGTERM, and a fresh-clone `make test` hung in the
    pool's join. Done, the workers end on their own."""
    import multiprocessing
    import signal

    from torchpulse import signals

    monkeypatch.setattr(verdicts, "_cores", lambda: 2)  # as above
    series = _series(n=40, seed=5)
    monkeypatch.setattr(verdicts, "PARALLEL_FROM", 4)

    def where(s):
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
        return analyse(s.points)

    with signals.as_interrupts():
        got = verdicts.compute(series, where, SETTINGS)
        assert signal.getsignal(signal.SIGTERM) == signals._interrupt  # the parent's kept
    assert got == [analyse(s.points) for s in series]
    assert multiprocessing.active_children() == []


def test_a_cache_that_cannot_be_written_computes_everything(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    series = _series(n=3)
    counting = Counting()
    got = verdicts.compute(series, counting, SETTINGS, verdicts.Cache(blocked / "x.sqlite"))
    assert counting.calls == 3 and got == [analyse(s.points) for s in series]


def test_the_code_digest_covers_every_module_of_the_analysis_package(tmp_path):
    """A verdict also rests on how its rule and threshold are chosen (series.py,
    settings.py, judge.py): a change to any module of the folder is a new digest."""
    import shutil
    from pathlib import Path

    from torchpulse.analysis import verdicts

    folder = Path(verdicts.__file__).parent
    copy = tmp_path / "analysis"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__"))
    same = verdicts._code_version(copy)
    assert same == verdicts._code_version(folder)
    for name in ("settings.py", "series.py", "judge.py", "detector/changes.py",
                 "detector/noise.py", "detector/drift.py"):
        original = (copy / name).read_text()
        (copy / name).write_text(original + "\n# changed\n")
        verdicts._code_version.cache_clear()
        assert verdicts._code_version(copy) != same, name
        (copy / name).write_text(original)
        verdicts._code_version.cache_clear()
