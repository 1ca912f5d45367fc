"""Seals for torchpulse's caches: a keyed digest of each row, checked when it is read.

The results index and the verdict cache live in the project's folder, where any program
(or person) can edit them. A row that keeps its shape -- a forged commit hash, two series
numbers swapped, a flipped bit in a value, a verdict copied from another series -- passed
every check of form and gave wrong verdicts on every later run. Each row now carries
``seal(key, *its fields)``; a row whose seal does not match is damage: the index is built
again from the results files, a verdict computed again.

The key is 32 random bytes in the caches' folder, made on first use, a regular file of
the user running torchpulse that no one else may read or write (mode 0600): a key that is
not -- a link, another user's file, one others may read or write, one of the wrong size --
is replaced by a new one, and every row sealed with the old one is built again. So another
user who can write the project's folder cannot plant a key they know. A cache seals its rows
with a key of its own generation (``derived``): the index makes a new generation each time
it is built from nothing, so rows of two builds of it (two snapshots of the file, their
series numbered differently) never match each other. It guards against damage and against
edits made by anyone who cannot read the key; whoever runs as the same user can read it and
forge a row, as they can change the results files themselves -- the files stay the source
of truth, the caches only have to say the same.
"""

from __future__ import annotations

import errno
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
    """The key's bytes; b"" (a key to replace) where the file is not one this user alone
    made: another user's, or one others may read or write. A link or what is not a regular
    file is an OSError (no link followed, no FIFO waited on, no more than a key read)."""
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(f"{where}: a link; the caches are not used") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{where}: not a regular file; the caches are not used")
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return b""
        return os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)


def derived(key: bytes, generation: str) -> bytes:
    """The key a cache of ``generation`` seals its rows with."""
    return hashlib.blake2b(generation.encode(), key=key, digest_size=KEY_BYTES,
                           person=b"generation").digest()


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
