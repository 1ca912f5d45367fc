"""A derived index of a results tree: every point asv's files hold, read once.

asv's results files stay the source of truth; this SQLite file (standard library, one file,
transactions) holds what torchpulse reads from them -- per results file its commit,
environment and machine fields, per benchmark row its value, samples, version and timing --
so that a second `torchpulse alert` reads one table instead of a thousand JSON files, and
after a new commit parses only the files that changed.

- A file is parsed again when its size, inode, modification or change time changed (the
  change time cannot be set back: an edit in place whose modification time was restored
  still shows), or when it was modified within RACY seconds of being indexed (file times
  are coarse: a rewrite in the same tick keeps its time, as git's "racily clean"
  entries), and forgotten when it is gone: every update is one transaction, so a crash or
  a kill leaves the old index or the new one, never half of one.
- Every row carries a seal (torchpulse.results.seal): a row edited in place, however well
  it keeps its shape, does not match it, and the index is rebuilt from the files, as one
  of another format or one that cannot be read; one that cannot be written (a read-only
  tree) is skipped, the files read directly.
- Deleting it is always safe: the next command builds it again.

Where: ``<project>/.asv/torchpulse-index/<digest of the results folder>.sqlite``, beside
asv's environments and torchpulse's ledger and profiles, never in the results tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import stat
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from torchpulse.errors import TorchpulseError
from torchpulse.results import asv_results, seal

FORMAT = "6"  # 6: rows sealed with their generation's key
RACY = 2.0  # seconds: a file this close to its indexing is read again next time
_HEADER = struct.Struct("<qq")  # a packed file: its rows, its samples


class Damaged(TorchpulseError, sqlite3.DatabaseError):
    """The index's packed rows do not hold together (a damaged or a forged file): caught
    where the index is read (``load`` builds it again); should one ever escape, the
    command line says it in one line."""


class Table(NamedTuple):
    """Every row of a results tree as columns (one entry a benchmark row of a file; rows of
    one file together, files in path order): what the series are built from in a few
    numpy passes, not a Python object a point."""

    files: list[tuple[str, str, str, dict[str, str]]]  # (path, commit, env, fields)
    # the distinct (machine, env, benchmark, combination, version) the rows belong to
    series: list[tuple[str, str, str, tuple[str, ...], str | None]]
    file: np.ndarray  # int32: the row's file (index into files)
    sid: np.ndarray  # int32: the row's entry of series
    value: np.ndarray  # float64: asv's value, NaN where it stored none or not a number
    started: np.ndarray  # float64: the job's start (ms since the epoch), NaN: not stored
    seconds: np.ndarray  # float64: the job's duration, NaN: not stored
    nsamples: np.ndarray  # int32: the row's samples (numbers only) in ``samples``, in order
    samples: np.ndarray  # float64


def location(root: Path, results_dir: Path) -> Path:
    """The index of ``results_dir`` for the project at ``root``."""
    digest = hashlib.sha256(str(results_dir.resolve()).encode()).hexdigest()[:16]
    return root / ".asv" / "torchpulse-index" / f"{digest}.sqlite"


def _files(results_dir: Path, machines: list[str]) -> dict[str, tuple[int, int, int, int]]:
    """{machine/file.json: (size, mtime_ns, ctime_ns, inode)} of every results file of
    ``machines``."""
    found = {}
    for name in machines:
        with os.scandir(results_dir / name) as entries:
            for e in entries:
                if e.name.endswith(".json") and e.name != "machine.json" and e.is_file():
                    st = e.stat()
                    found[f"{name}/{e.name}"] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                                   st.st_ino)
    return found


class Parsed(NamedTuple):
    """One results file as the index stores it."""

    commit: str
    env: str
    params: dict[str, str]  # the file's machine and environment fields
    # (benchmark, version, combination, value, samples, started, seconds); numbers only:
    # value None where asv stored none or not a number, samples without non-numbers
    rows: list[tuple]


def parse(results_dir: Path, rel: str) -> Parsed:
    """One results file (``machine/file.json`` under ``results_dir``)."""
    machine = rel.split("/", 1)[0]
    results, rows = asv_results.load_with_rows(results_dir / rel, machine=machine)
    out = []
    for bench, bench_rows in rows.items():
        started, seconds = asv_results.timing(results, bench)
        version = asv_results.version(results, bench)
        for combo, value, samples in bench_rows:
            out.append((bench, version, combo, float(value) if _number(value) else None,
                        [float(x) for x in samples or () if _number(x)], started, seconds))
    return Parsed(results.commit_hash, results.env_name, dict(results.params), out)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else x


def pack(rows: list[tuple], sid: Callable[[tuple], int]) -> bytes:
    """A parsed file's rows as bytes (``sid``: the series entry of a row's (benchmark,
    version, combination))."""
    n = len(rows)
    flat = [x for r in rows for x in r[4]]
    head = np.array([[sid(r[:3]), len(r[4])] for r in rows], dtype=np.int64).reshape(n, 2)
    numbers = np.array([[_nan(r[3]), _nan(r[5]), _nan(r[6])] for r in rows],
                       dtype=np.float64).reshape(n, 3)
    return b"".join((_HEADER.pack(n, len(flat)), head.T.tobytes(), numbers.T.tobytes(),
                     np.array(flat, dtype=np.float64).tobytes()))


def _size(n: int, m: int) -> int:
    return _HEADER.size + 40 * n + 8 * m


def _unpack(blob: bytes) -> tuple[np.ndarray, ...]:
    n, m = _HEADER.unpack_from(blob)
    at = _HEADER.size
    head = np.frombuffer(blob, np.int64, 2 * n, at).reshape(2, n)
    at += 16 * n
    numbers = np.frombuffer(blob, np.float64, 3 * n, at).reshape(3, n)
    return head[0], head[1], numbers[0], numbers[1], numbers[2], \
        np.frombuffer(blob, np.float64, m, at + 24 * n)


def _table(files: list[tuple[str, str, str, dict[str, str]]],
           series: list[tuple[str, str, str, tuple[str, ...], str | None]],
           blobs: Iterable[bytes], rows: int, samples: int) -> Table:
    """The columns of ``blobs`` (packed files, in the order of ``files``), holding ``rows``
    rows and ``samples`` samples: filled one file at a time, so that the packed files and
    the columns are never in memory together."""
    table = Table(files, series, np.empty(rows, np.int32), np.empty(rows, np.int32),
                  np.empty(rows), np.empty(rows), np.empty(rows), np.empty(rows, np.int32),
                  np.empty(samples))
    at = flat = 0
    for i, blob in enumerate(blobs):
        try:
            sid, nsamples, value, started, seconds, sample = _unpack(blob)
        except (struct.error, ValueError, TypeError):
            raise Damaged("the index holds a damaged packed file") from None
        n, m = len(sid), len(sample)
        if at + n > rows or flat + m > samples or len(blob) != _size(n, m) \
                or (n and (nsamples.min() < 0 or sid.min() < 0 or sid.max() >= len(series))) \
                or int(nsamples.sum()) != m:
            raise Damaged("the index's packed rows do not hold together")
        end = at + n
        table.file[at:end] = i
        table.sid[at:end], table.nsamples[at:end] = sid, nsamples
        table.value[at:end], table.started[at:end], table.seconds[at:end] = \
            value, started, seconds
        table.samples[flat:flat + m] = sample
        at, flat = end, flat + m
    if (at, flat) != (rows, samples):
        raise Damaged("the index's packed rows do not hold together")
    return table


class _Ids:
    """Series entries by (machine, env, benchmark, version, combination), numbered 0, 1, ...
    as met."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.new: list[tuple] = []  # the keys numbered since the stored ones were read

    def of(self, machine: str, env: str) -> Callable[[tuple], int]:
        def sid(row: tuple) -> int:
            key = (machine, env, *row)
            found = self.ids.get(key)
            if found is None:
                found = self.ids[key] = len(self.ids)
                self.new.append(key)
            return found
        return sid

    def entries(self) -> list[tuple[str, str, str, tuple[str, ...], str | None]]:
        out: list = [None] * len(self.ids)
        for (machine, env, bench, version, combo), i in self.ids.items():
            if not 0 <= i < len(out) or out[i] is not None:
                raise Damaged("the index's series are not numbered 0, 1, ...")
            out[i] = (machine, env, bench, tuple(combo), version)
        return out


def read_files(results_dir: Path, machines: list[str]) -> Table:
    """Without an index: every file of ``machines`` parsed now."""
    ids = _Ids()
    files, blobs = [], []
    for rel in sorted(_files(results_dir, machines)):
        parsed = parse(results_dir, rel)
        files.append((rel, parsed.commit, parsed.env, parsed.params))
        blobs.append(pack(parsed.rows, ids.of(rel.split("/", 1)[0], parsed.env)))
    sizes = [_HEADER.unpack_from(b) for b in blobs]
    return _table(files, ids.entries(), blobs, sum(n for n, _ in sizes),
                  sum(m for _, m in sizes))


def _schema(con: sqlite3.Connection) -> None:
    con.executescript("""
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER,
            mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER, indexed_ns INTEGER,
            commit_hash TEXT, env TEXT, params TEXT, nrows INTEGER, nsamples INTEGER,
            packed BLOB, seal BLOB);
        CREATE TABLE IF NOT EXISTS series (id INTEGER PRIMARY KEY, machine TEXT, env TEXT,
            benchmark TEXT, version TEXT, combo TEXT, seal BLOB);
    """)


SIDE_FILES = ("-journal", "-wal", "-shm")  # what SQLite opens beside a database


def check_plain(path: Path) -> None:
    """OSError unless SQLite may open ``path``: neither its folder nor the database nor the
    files SQLite opens beside it may be a symbolic link (a write would land in another
    program's file), nor anything but a regular file (a FIFO blocks the open for good).
    Callers then go without the index, reading the results files themselves."""
    for place in (path.parent, path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        try:
            mode = os.lstat(place).st_mode
        except FileNotFoundError:
            continue
        wanted = stat.S_ISDIR if place == path.parent else stat.S_ISREG
        if stat.S_ISLNK(mode) or not wanted(mode):
            raise OSError(f"{place}: not a plain {'folder' if place == path.parent else 'file'}"
                          "; the index is not used")


def _open(path: Path, fresh: bool = False) -> sqlite3.Connection:
    """The index at ``path``; a new one where it is missing, damaged or of another format
    (the old file is removed: it is torchpulse's own, derived, and rebuilt at once). Its
    folder is made, and checked by check_plain, by ``load``."""
    if fresh:
        path.unlink(missing_ok=True)
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        _schema(con)
        got = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if got is None and not con.execute("SELECT 1 FROM files LIMIT 1").fetchone():
            con.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            con.execute("INSERT INTO meta VALUES ('generation', ?)", (secrets.token_hex(16),))
            got = (FORMAT,)
    except sqlite3.DatabaseError:  # not an index: damaged, or a file of something else
        got = None
    if got is None or got[0] != FORMAT:
        con.close()
        if fresh:
            raise sqlite3.DatabaseError(f"{path}: cannot build an index there")
        return _open(path, fresh=True)
    return con


def _generation_key(con: sqlite3.Connection, key: bytes) -> bytes:
    """The key this build of the index seals its rows with (seal.derived): rows of another
    build, however well sealed there, do not match it."""
    got = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    if got is None or not isinstance(got[0], str) or len(got[0]) != 32:
        raise Damaged("the index has no generation")
    return seal.derived(key, got[0])


def _stored_ids(con: sqlite3.Connection, key: bytes) -> _Ids:
    ids = _Ids()
    try:
        for i, machine, env, bench, version, combo, sealed in con.execute(
                "SELECT id, machine, env, benchmark, version, combo, seal FROM series"):
            if not seal.matches(key, sealed, i, machine, env, bench, version, combo):
                raise Damaged("an entry of the index's series does not match its seal")
            ids.ids[(machine, env, bench, version, tuple(json.loads(combo)))] = i
    except (ValueError, TypeError, RecursionError):  # not the JSON of a list of strings
        raise Damaged("the index's series do not hold together") from None
    return ids


def _file_row(p: str, sig: tuple[int, int, int, int], indexed: int, parsed: Parsed,
              packed: bytes, key: bytes) -> tuple:
    """The row of the index's files for the results file ``p`` (``sig``: its size, times
    and inode), sealed."""
    fields = (p, *sig, indexed, parsed.commit, parsed.env, json.dumps(parsed.params),
              *_HEADER.unpack_from(packed), packed)
    return (*fields, seal.seal(key, *fields))


def update(path: Path, results_dir: Path, machines: list[str], key: bytes,
           progress: Callable[[str], None] | None = None,
           fresh: bool = False) -> sqlite3.Connection:
    """The index at ``path`` brought up to date with the files of ``machines`` (parsing
    those new or changed since, forgetting those gone), in one transaction, its new rows
    sealed with ``key``; ``fresh``: built anew."""
    con = _open(path, fresh=fresh)
    try:
        key = _generation_key(con, key)
    except Damaged:
        con.close()
        raise
    current = _files(results_dir, machines)
    stored, racy = {}, set()
    for p, *sig, indexed in con.execute(
            "SELECT path, size, mtime_ns, ctime_ns, inode, indexed_ns FROM files"):
        if not (isinstance(p, str) and all(isinstance(x, int) for x in (*sig, indexed))):
            con.close()
            raise Damaged("an entry of the index's files does not hold together")
        stored[p] = tuple(sig)
        if sig[1] >= indexed - RACY * 1e9:
            racy.add(p)
    prefixes = tuple(f"{m}/" for m in machines)
    gone = [p for p in stored if p.startswith(prefixes) and p not in current]
    changed = sorted(p for p, sig in current.items() if stored.get(p) != sig or p in racy)
    if not gone and not changed:
        return con
    if progress and len(changed) > 50:
        progress(f"indexing {len(changed)} results file(s)")
    con.execute("BEGIN IMMEDIATE")
    now = time.time_ns()
    try:
        ids = _stored_ids(con, key)
        ids.entries()  # numbered as they should be: new numbers follow on
        for p in gone:
            con.execute("DELETE FROM files WHERE path = ?", (p,))
        for p in changed:
            parsed = parse(results_dir, p)
            packed = pack(parsed.rows, ids.of(p.split("/", 1)[0], parsed.env))
            con.execute("INSERT OR REPLACE INTO files VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        _file_row(p, current[p], now, parsed, packed, key))
        rows = [(ids.ids[k], *k[:4], json.dumps(k[4])) for k in ids.new]
        con.executemany("INSERT INTO series VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(*row, seal.seal(key, *row)) for row in rows])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return con


def load(path: Path, results_dir: Path, machines: list[str]) -> Table:
    """The rows of the files of ``machines``, through the index at ``path`` (brought up to
    date first); an index whose rows do not hold together or do not match their seals is
    built again from the files. OSError where the index's folder or its key cannot be
    used."""
    path.parent.mkdir(parents=True, exist_ok=True)
    check_plain(path)
    key = seal.key(path.parent)

    def rebuilt() -> Table:
        return read(update(path, results_dir, machines, key, fresh=True), machines, key)

    try:  # a results file that cannot be read is the user's error: it is not caught here
        con = update(path, results_dir, machines, key)
    except (Damaged, sqlite3.IntegrityError):
        return rebuilt()
    try:
        return read(con, machines, key)
    except (Damaged, ValueError, TypeError, RecursionError):  # the last three: its JSON
        con.close()
        return rebuilt()


def read(con: sqlite3.Connection, machines: list[str], key: bytes) -> Table:
    """From the index: the files of ``machines`` and their rows (one read transaction), each
    row checked against its seal as it is read."""
    con.execute("BEGIN")
    try:
        key = _generation_key(con, key)
        files, rows, samples = [], 0, 0
        for p, commit, env, params, n, m, size in con.execute(
                "SELECT path, commit_hash, env, params, nrows, nsamples, length(packed) "
                "FROM files ORDER BY path"):
            fields = json.loads(params) if isinstance(params, str) else None
            # checked before anything is allocated from them or read as text
            if not (isinstance(p, str) and isinstance(commit, str) and isinstance(env, str)
                    and isinstance(fields, dict) and isinstance(n, int)
                    and isinstance(m, int) and n >= 0 and m >= 0 and size == _size(n, m)):
                raise Damaged("an entry of the index's files does not hold together")
            if p.split("/", 1)[0] in machines:
                files.append((p, commit, env, fields))
                rows, samples = rows + n, samples + m
        wanted = {p for p, *_ in files}
        return _table(files, _stored_ids(con, key).entries(),
                      _sealed_blobs(con, wanted, key), rows, samples)
    finally:
        con.execute("COMMIT")


def _sealed_blobs(con: sqlite3.Connection, wanted: set[str], key: bytes) -> Iterable[bytes]:
    """The packed rows of the files ``wanted``, in path order, each once its whole row
    (the fields read before it included) matched its seal."""
    for row in con.execute("SELECT * FROM files ORDER BY path"):
        if row[0] in wanted:
            if not seal.matches(key, row[-1], *row[:-1]):
                raise Damaged("an entry of the index's files does not match its seal")
            yield row[-2]
