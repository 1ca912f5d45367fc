"""Seals for torchpulse's caches: a keyed digest of each row, checked when it is read.

The results index and the verdict cache live in the project's folder, where any program
(or person) can edit them. A row that keeps its shape -- a forged commit hash, two series
numbers swapped, a flipped bit in a value, a verdict copied from another series -- passed
every check of form and gave wrong verdicts on every later run. Each row now carries
``seal(key, *its fields)``; a row whose seal does not match is damage: the index is built
again from the results files, a verdict computed again.

The key is 32 random bytes in the caches' folder, readable by its owner only, made on
first use. It guards against damage and against edits made without reading it; whoever can
read the key can forge a row, as whoever can write the results files can change what they
say -- the files stay the source of truth, the caches only have to say the same.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path

KEY_NAME = "key"
KEY_BYTES = 32
SEAL_BYTES = 16


def key(folder: Path) -> bytes:
    """The key of the caches in ``folder``: made where it is missing, or replaced where it is
    a regular file of the wrong size (every row sealed with it is then rebuilt). OSError
    where it is a link or not a regular file, or cannot be read or made: the caches are
    then not used."""
    where = folder / KEY_NAME
    try:
        got = _read(where)
    except FileNotFoundError:
        got = None
    if got is None or len(got) != KEY_BYTES:
        _make(where, replace=got is not None)
        got = _read(where)
        if len(got) != KEY_BYTES:
            raise OSError(f"{where}: not a key of torchpulse's caches")
    return got


def _read(where: Path) -> bytes:
    # no link followed, no FIFO waited on, no more than a key's bytes read
    fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{where}: not a regular file; the caches are not used")
        return os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)


def _make(where: Path, replace: bool) -> None:
    """A new key, written whole beside ``where`` and then put in place: a reader never sees a
    half-written key; where two processes make one at once, the first one in place wins."""
    scratch = where.with_name(f".{where.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        if replace:
            os.replace(scratch, where)
        else:
            os.link(scratch, where)
    except FileExistsError:
        pass
    finally:
        scratch.unlink(missing_ok=True)


def seal(key: bytes, *fields: bytes | str | int | None) -> bytes:
    """The keyed digest of ``fields``, each tagged with its type and length (so that no two
    different rows are read as the same sequence of bytes)."""
    h = hashlib.blake2b(key=key, digest_size=SEAL_BYTES)
    for field in fields:
        if field is None:
            h.update(b"n")
            continue
        if isinstance(field, bytes):
            tag, data = b"b", field
        elif isinstance(field, str):
            tag, data = b"s", field.encode("utf-8", "surrogatepass")
        elif isinstance(field, int) and not isinstance(field, bool):
            tag, data = b"i", str(field).encode()
        else:
            raise TypeError(f"cannot seal a {type(field).__name__}")
        h.update(tag + len(data).to_bytes(8, "little") + data)
    return h.digest()


def matches(key: bytes, stored: object, *fields: bytes | str | int | None) -> bool:
    """Whether ``stored`` is the seal of ``fields`` (a field of another type than those
    sealed never matches)."""
    try:
        expected = seal(key, *fields)
    except TypeError:
        return False
    return isinstance(stored, bytes) and secrets.compare_digest(stored, expected)
