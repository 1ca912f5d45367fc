"""A derived index of a results tree: every point asv's files hold, read once.

asv's results files stay the source of truth; this SQLite file (standard library, one file,
transactions) holds what torchpulse reads from them -- per results file its commit,
environment and machine fields, per benchmark row its value, samples, version and timing --
so that a second `torchpulse alert` reads one table instead of a thousand JSON files, and
after a new commit parses only the files that changed.

- A file is parsed again when its size, inode or modification time changed, or when it
  was modified within RACY seconds of being indexed (file times are coarse: a rewrite in
  the same tick keeps its time, as git's "racily clean" entries), and forgotten when it is
  gone: every update is one transaction, so a crash or a kill leaves the old index or
  the new one, never half of one.
- An index of another format, or one that cannot be read, is rebuilt from the files; one
  that cannot be written (a read-only tree) is skipped, the files read directly.
- Deleting it is always safe: the next command builds it again.

Where: ``<project>/.asv/torchpulse-index/<digest of the results folder>.sqlite``, beside
asv's environments and torchpulse's ledger and profiles, never in the results tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from torchpulse.results import asv_results

FORMAT = "3"
RACY = 2.0  # seconds: a file this close to its indexing is read again next time


class Row(NamedTuple):
    """One benchmark row of one results file, as the series are built from it (a tuple: a
    history holds hundreds of thousands, made once per command)."""

    machine: str
    commit: str
    env: str
    params: dict[str, str]  # the file's machine and environment fields
    benchmark: str
    version: str | None
    combo: tuple[str, ...]
    value: object  # as asv stored it (None, NaN: failed or skipped)
    samples: tuple[float, ...] | None
    started: float | None
    seconds: float | None


def location(root: Path, results_dir: Path) -> Path:
    """The index of ``results_dir`` for the project at ``root``."""
    digest = hashlib.sha256(str(results_dir.resolve()).encode()).hexdigest()[:16]
    return root / ".asv" / "torchpulse-index" / f"{digest}.sqlite"


def _files(results_dir: Path, machines: list[str]) -> dict[str, tuple[int, int, int]]:
    """{machine/file.json: (size, mtime_ns, inode)} of every results file of ``machines``."""
    found = {}
    for name in machines:
        with os.scandir(results_dir / name) as entries:
            for e in entries:
                if e.name.endswith(".json") and e.name != "machine.json" and e.is_file():
                    st = e.stat()
                    found[f"{name}/{e.name}"] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def parse(results_dir: Path, rel: str) -> tuple[str, str, dict[str, str], list[tuple]]:
    """One results file (``machine/file.json`` under ``results_dir``): its commit,
    environment, machine and environment fields, and its rows as the index stores them
    (combination joined, samples packed; numbers only)."""
    machine = rel.split("/", 1)[0]
    results = asv_results.load(results_dir / rel, machine=machine)
    out = []
    for bench in asv_results.benchmarks(results):
        started, seconds = asv_results.timing(results, bench)
        version = asv_results.version(results, bench)
        for combo, value, samples in asv_results.rows(results, bench):
            number = float(value) if _number(value) else None
            kept = None if samples is None else array(
                "d", [float(x) for x in samples if _number(x)]).tobytes()
            out.append((rel, bench, version, json.dumps(combo), number, kept, started,
                        seconds))
    return results.commit_hash, results.env_name, dict(results.params), out


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _row(machine: str, commit: str, env: str, params: dict[str, str], stored: tuple,
         combos: dict[str, tuple[str, ...]]) -> Row:
    _, bench, version, combo, value, samples, started, seconds = stored
    key = combos.get(combo)
    if key is None:  # a tree has few distinct combinations: each is decoded once
        key = combos[combo] = tuple(json.loads(combo))
    return Row(machine, commit, env, params, bench, version, key,
               float("nan") if value is None else value,
               tuple(array("d", samples)) if samples is not None else None, started, seconds)


def read_files(results_dir: Path, machines: list[str]) -> tuple[dict[str, str], Iterator[Row]]:
    """Without an index: {file: commit} and the rows of every file, parsed now."""
    files = {}
    parsed = []
    for rel in sorted(_files(results_dir, machines)):
        commit, env, params, stored = parse(results_dir, rel)
        files[rel] = commit
        parsed.append((rel.split("/", 1)[0], commit, env, params, stored))

    def rows() -> Iterator[Row]:
        combos: dict[str, tuple[str, ...]] = {}
        for machine, commit, env, params, stored in parsed:
            for r in stored:
                yield _row(machine, commit, env, params, r, combos)

    return files, rows()


def _schema(con: sqlite3.Connection) -> None:
    con.executescript("""
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER,
            mtime_ns INTEGER, inode INTEGER, indexed_ns INTEGER, commit_hash TEXT, env TEXT,
            params TEXT);
        CREATE TABLE IF NOT EXISTS rows (path TEXT, benchmark TEXT, version TEXT,
            combo TEXT, value REAL, samples BLOB, started REAL, seconds REAL);
        CREATE INDEX IF NOT EXISTS rows_path ON rows (path);
    """)


def _open(path: Path, fresh: bool = False) -> sqlite3.Connection:
    """The index at ``path``; a new one where it is missing, damaged or of another format
    (the old file is removed: it is torchpulse's own, derived, and rebuilt at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fresh:
        path.unlink(missing_ok=True)
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        _schema(con)
        got = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if got is None and not con.execute("SELECT 1 FROM files LIMIT 1").fetchone():
            con.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            got = (FORMAT,)
    except sqlite3.DatabaseError:  # not an index: damaged, or a file of something else
        got = None
    if got is None or got[0] != FORMAT:
        con.close()
        if fresh:
            raise sqlite3.DatabaseError(f"{path}: cannot build an index there")
        return _open(path, fresh=True)
    return con


def update(path: Path, results_dir: Path, machines: list[str],
           progress: Callable[[str], None] | None = None) -> sqlite3.Connection:
    """The index at ``path`` brought up to date with the files of ``machines`` (parsing
    those new or changed since, forgetting those gone), in one transaction."""
    con = _open(path)
    current = _files(results_dir, machines)
    stored, racy = {}, set()
    for p, size, mtime, inode, indexed in con.execute(
            "SELECT path, size, mtime_ns, inode, indexed_ns FROM files"):
        stored[p] = (size, mtime, inode)
        if mtime >= indexed - RACY * 1e9:
            racy.add(p)
    prefixes = tuple(f"{m}/" for m in machines)
    gone = [p for p in stored if p.startswith(prefixes) and p not in current]
    changed = sorted(p for p, stat in current.items() if stored.get(p) != stat or p in racy)
    if not gone and not changed:
        return con
    if progress and len(changed) > 50:
        progress(f"indexing {len(changed)} results file(s)")
    con.execute("BEGIN IMMEDIATE")
    now = time.time_ns()
    try:
        for p in gone:
            con.execute("DELETE FROM rows WHERE path = ?", (p,))
            con.execute("DELETE FROM files WHERE path = ?", (p,))
        for p in changed:
            con.execute("DELETE FROM rows WHERE path = ?", (p,))
            commit, env, params, stored = parse(results_dir, p)
            con.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)", stored)
            con.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (p, *current[p], now, commit, env, json.dumps(params)))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return con


def read(con: sqlite3.Connection, machines: list[str]
         ) -> tuple[dict[str, str], Iterator[Row]]:
    """From the index: {file: commit} of the files of ``machines``, and their rows."""
    files = {}
    for p, commit, env, params in con.execute(
            "SELECT path, commit_hash, env, params FROM files"):
        machine = p.split("/", 1)[0]
        if machine in machines:
            files[p] = (machine, commit, env, json.loads(params))

    def rows() -> Iterator[Row]:
        combos: dict[str, tuple[str, ...]] = {}
        for stored in con.execute("SELECT * FROM rows ORDER BY rowid"):
            if stored[0] in files:
                yield _row(*files[stored[0]], stored, combos)

    return {p: f[1] for p, f in files.items()}, rows()
