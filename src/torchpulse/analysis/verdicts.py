"""The verdicts of many series: those whose points and settings are unchanged since the last
command come from a cache, the rest are computed across the cores.

A verdict depends only on its series' points (commit, value, samples, disturbed), the rule,
the detector's settings and the detector's code; the cache key is a digest of all of them
(the code as the bytes of every module under torchpulse/analysis/, with numpy's and scipy's
versions), so a change of any makes the verdict be computed again. The cache is a table of
the results index (torchpulse.results.index): derived data, safe to delete; it holds
pickles of torchpulse's own verdict classes, each sealed with its series and digest
(torchpulse.results.seal: a verdict copied from another series' row is a miss), and is
read back with an unpickler that admits nothing else.
"""

from __future__ import annotations

import functools
import hashlib
import io
import multiprocessing
import os
import pickle
import signal
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from torchpulse import signals
from torchpulse.analysis.columns import PointColumns
from torchpulse.analysis.detector import SeriesVerdict
from torchpulse.analysis.series import Series
from torchpulse.results import index as results_index
from torchpulse.results import seal

PARALLEL_FROM = 64  # series to compute before a pool of processes pays for itself
_ALLOWED = {("torchpulse.analysis.detector.model", n) for n in (
    "SeriesVerdict", "ChangePoint", "Regression", "Noise", "Drift")}


@functools.cache
def _code_version(folder: Path = Path(__file__).parent) -> bytes:
    """The analysis package's code and the numeric libraries, as one digest (read once, on
    first use: not when the alert is imported). Every module of the folder, not a hand-kept
    list, and the detector's folder with it: a verdict also rests on how a series' rule,
    threshold and settings are chosen (series.py, settings.py, judge.py), and a list
    forgets one."""
    import numpy
    import scipy

    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    h.update(f"{numpy.__version__} {scipy.__version__}".encode())
    return h.digest()


def digest(series: Series, settings: tuple) -> bytes:
    """What a verdict of ``series`` depends on, as one digest."""
    h = hashlib.blake2b(_code_version(), digest_size=20)
    h.update(repr((series.rule, settings)).encode())
    if isinstance(series.points, PointColumns):  # tagged: never the digest of a list
        h.update(b"columns\0" + series.points.content())
    else:
        h.update(pickle.dumps([(p.commit, p.value, p.samples, p.disturbed)
                               for p in series.points], protocol=5))
    return h.digest()


class _Verdicts(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: ANN201 (pickle's signature)
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not a verdict class")
        return super().find_class(module, name)


def _loads(blob: bytes) -> SeriesVerdict | None:
    try:
        verdict = _Verdicts(io.BytesIO(blob)).load()
    except Exception:  # noqa: BLE001 (a damaged entry is a miss, computed again)
        return None
    return verdict if isinstance(verdict, SeriesVerdict) else None


class Cache:
    """Verdicts by series in the results index's database at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> tuple[sqlite3.Connection, bytes]:
        results_index.check_plain(self.path)  # no link or FIFO where SQLite opens files
        key = seal.key(self.path.parent)
        con = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        con.execute("CREATE TABLE IF NOT EXISTS verdicts (series TEXT PRIMARY KEY, "
                    "digest BLOB, verdict BLOB, seal BLOB)")
        return con, key

    def get(self, wanted: dict[str, bytes]) -> dict[str, SeriesVerdict]:
        """The stored verdicts of the series (label: digest) whose digest matches."""
        try:
            con, key = self._connect()
            stored = con.execute("SELECT series, digest, verdict, seal FROM verdicts"
                                 ).fetchall()
            con.close()
        except (sqlite3.Error, OSError):
            return {}
        found = {}
        for label, d, blob, sealed in stored:
            if wanted.get(label) == d and seal.matches(key, sealed, label, d, blob):
                verdict = _loads(blob)
                if verdict is not None:
                    found[label] = verdict
        return found

    def put(self, computed: dict[str, tuple[bytes, SeriesVerdict]]) -> None:
        """Store verdicts (label: (digest, verdict)) in one transaction; a cache that cannot
        be written is left as it is."""
        if not computed:
            return
        try:
            con, key = self._connect()
            rows = [(label, d, pickle.dumps(v, protocol=5)) for label, (d, v) in computed.items()]
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)",
                            [(*row, seal.seal(key, *row)) for row in rows])
            con.execute("COMMIT")
            con.close()
        except (sqlite3.Error, OSError):
            pass


# the series and the analysis a forked worker computes: inherited from the parent, so that
# only indices and verdicts cross between processes
_JOB: tuple[Sequence[Series], Callable[[Series], SeriesVerdict]] | None = None


def _work(index: int) -> SeriesVerdict:
    assert _JOB is not None
    series, analyse = _JOB
    return analyse(series[index])


def _plain_signals() -> None:
    """In a worker: SIGTERM and SIGHUP back to their default, ending it. The commands read
    them as Ctrl-C (torchpulse.signals), and with that handler inherited a worker was found
    still waiting for work after the pool's terminate() had sent it SIGTERM, the pool
    waiting in its join for it to end (a hung fresh-clone `make test`)."""
    for signum in signals.STOPPING:
        signal.signal(signum, signal.SIG_DFL)


def _across(workers: int, todo: list[int]) -> list[SeriesVerdict]:
    """``_work`` of every index in forked workers. Done, the workers are told to stop and
    end on their own (close, join), not killed; interrupted, they are terminated."""
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_plain_signals)
    try:
        got = pool.map(_work, todo, chunksize=16)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    return got


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def compute(series: Sequence[Series], analyse: Callable[[Series], SeriesVerdict],
            settings: tuple, cache: Cache | None = None, tag: str = "") -> list[SeriesVerdict]:
    """``analyse`` of every series, in order: from ``cache`` where its digest matches, the
    others across the cores (forked workers) when there are many, and stored back."""
    global _JOB
    labels = [repr(s.key) + tag for s in series]
    digests = [digest(s, settings) for s in series] if cache else []
    known = cache.get(dict(zip(labels, digests, strict=True))) if cache else {}
    todo = [i for i, label in enumerate(labels) if label not in known]
    verdicts: dict[int, SeriesVerdict] = {}
    if todo:  # the detector's scipy, imported once here rather than in every worker
        import scipy.special  # noqa: F401
    workers = min(_cores(), len(todo) // (PARALLEL_FROM // 2))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        _JOB = (series, analyse)
        try:
            verdicts = dict(zip(todo, _across(workers, todo), strict=True))
        finally:
            _JOB = None
    else:
        verdicts = {i: analyse(series[i]) for i in todo}
    if cache:
        cache.put({labels[i]: (digests[i], v) for i, v in verdicts.items()})
    return [known[label] if label in known else verdicts[i] for i, label in enumerate(labels)]
