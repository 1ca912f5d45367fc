"""Writing files all or nothing: the content goes to a temporary file beside the target, which
is flushed and then renamed over it, so a reader sees the old file or the new one, never half
of one. The file keeps the mode it had, or gets the user's usual one (0666 less the umask).
And reading what a tree holds only where it is a regular file of bounded size: a FIFO there
blocks a read for good, a link to /dev/zero never ends. Standard library only."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Let ``write`` fill a temporary path beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(path))  # mkstemp's 0600 is for its own secrecy, not ours
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# the largest results file read: asv writes a few MB for thousands of benchmarks
RESULTS_FILE_BYTES = 256 * 2**20
# the largest file `import` reads: harnesses print a few MB; parsed, a file takes about ten
# times its size (a 202 MB CSV took 8.4 GB), so this bounds the import's memory
INPUT_FILE_BYTES = 64 * 2**20


class FileTooLong(OSError):
    """A file over the bound its reader holds."""


def check_regular(path: Path, limit: int) -> None:
    """OSError unless ``path`` (a link followed) is a regular file of at most ``limit``
    bytes: asked before a reader that opens the file itself (asv's)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a regular file")
    if st.st_size > limit:
        raise OSError(f"{path}: {st.st_size} bytes, more than the {limit} read")


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` (a link followed) when it is a regular file of at most
    ``limit`` bytes; OSError otherwise. Opened without waiting: a FIFO is refused, not
    waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError(f"{path}: more than the {limit} bytes read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_input(path: Path, limit: int) -> bytes:
    """The bytes of a file given on the command line, a link followed: a regular file or a
    pipe (``<(command)``) of at most ``limit`` bytes; OSError for a directory, a device
    (/dev/zero would be read until the memory runs out) and anything longer."""
    with open(path, "rb") as f:  # a directory: IsADirectoryError
        if not stat.S_ISREG(mode := os.fstat(f.fileno()).st_mode) and \
                not stat.S_ISFIFO(mode):
            raise OSError("a device or a socket, not a file")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLong(f"more than {limit} bytes")
    return data


def no_link_below(root: Path, target: Path) -> bool:
    """Whether ``target`` lies under ``root`` with no symbolic link on the way (``root``
    itself may be one): a derived file written there lands in the project, not through a
    link someone planted in it (``.asv/records -> elsewhere``)."""
    try:
        parts = target.relative_to(root).parts
    except ValueError:
        return False
    here = root
    for part in parts:
        here = here / part
        if here.is_symlink():
            return False
    return True


def snapshot(paths: Iterable[Path]) -> dict[Path, bytes | None]:
    """Each path's bytes, or None where it is absent: what ``restore`` puts back."""
    return {p: p.read_bytes() if p.is_file() else None for p in paths}


def restore(before: dict[Path, bytes | None], keep_going: bool = False) -> int:
    """Put each path back as ``snapshot`` found it (its bytes, or absent), touching only
    those that changed; returns how many it put back. ``keep_going``: a path that cannot be
    restored (OSError) is skipped instead of raising."""
    changed = 0
    for path, content in before.items():
        try:
            if content is None:
                if path.exists() or path.is_symlink():
                    path.unlink()
                    changed += 1
            elif not path.is_file() or path.read_bytes() != content:
                write_atomically(path, lambda tmp, c=content: tmp.write_bytes(c))
                changed += 1
        except OSError:
            if not keep_going:
                raise
    return changed


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomically(path: Path, text: str) -> None:
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json_atomically(path: Path, data: object) -> None:
    write_text_atomically(path, json.dumps(data, indent=4, sort_keys=True) + "\n")


# what write_atomically (".NAME.XXXXXXXX.tmp") and the results adapter's staging folders
# (".write-XXXXXXXX") are called: a killed writer leaves them behind
_LEFTOVER = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp|\.write-[A-Za-z0-9_]{8}")


def remove_leftovers(folder: Path, depth: int = 2) -> int:
    """Remove what killed atomic writes left in ``folder`` and its subfolders (``depth``
    levels): only names this module's writers give their scratch files. Call it holding the
    lock the writers hold, so no live write is touched. Returns how many were removed."""
    removed = 0
    if not folder.is_dir():
        return 0
    for entry in folder.iterdir():
        if _LEFTOVER.fullmatch(entry.name) and not entry.is_symlink():
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed += 1
        elif depth > 1 and entry.is_dir() and not entry.is_symlink():
            removed += remove_leftovers(entry, depth - 1)
    return removed


@contextmanager
def locked_folder(folder: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive lock on ``folder`` itself (flock on its descriptor: no lock file is left
    behind), for the commands that read, change and write what it holds. ``waiting`` is
    called once when another holds it, before waiting for it."""
    folder.mkdir(parents=True, exist_ok=True)
    with _flocked(os.open(folder, os.O_RDONLY), waiting):
        yield


@contextmanager
def locked_file(path: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """An exclusive lock on the file ``path`` (made when missing, never through a symbolic
    link: OSError), for a lock that guards more than one folder. It goes with the process
    that held it, crashed or not; ``waiting`` as for locked_folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _flocked(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), waiting):
        yield


@contextmanager
def _flocked(fd: int, waiting: Callable[[], None] | None) -> Iterator[None]:
    """The one way torchpulse waits for a lock: flock on ``fd``, closed on the way out."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
