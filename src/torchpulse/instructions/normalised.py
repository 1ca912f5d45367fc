"""The counted process's surroundings, made the same wherever torchpulse runs.

A process's instruction counts move with what it is given: the length of its environment and
argv (they sit on the stack, and with them every stack address), the paths its modules are
imported from (each path string and every string built from it is allocated on the heap, so
a longer clone path lays out the heap differently), its working directory. Pointer-keyed
hash tables (Python's method cache, dicts keyed by object identity, torch's dispatch caches)
and malloc's bins then take other paths. docs/instructions.md gives what each moved.

So the counted process gets, whatever the caller's clone path, environment, working directory
or asv machine name:

- a fresh working directory of fixed length, ``/tmp/tpc-00000000`` or the next number free
  (not ``$TMPDIR``, whose length varies between CI jobs), which also holds its input and
  output files. A stage holds a lock (``LOCK``) for as long as a process of its count lives;
  one whose lock nobody holds was left by a count that was killed, and is removed and its
  number taken again, so that a killed count neither litters ``/tmp`` for good nor moves
  every later count of the machine to another stage name;
- the base interpreter (``realpath(sys.executable)``, not the virtual environment's link) with
  ``-S`` and ``PYTHONPATH`` naming fixed-length paths (``<stage>/p/00``, ``01``, ...): first a
  copy of torchpulse's sources alone (the import system lists and caches every directory it
  imports from, so a checkout's ``__pycache__`` folders, build files or stray files, which
  differ between clones, would otherwise be in its heap), then the site-packages, then
  torch's root if it lies elsewhere, each as a tree of hard links (``mirror``), or a
  symbolic link where the files cannot be linked;
- a fixed environment: no variable of the caller's reaches it;
- byte-code compiled from the stage's own paths, into the stage (``CACHE``), never the
  environment's ``__pycache__`` files, which hold the paths they were compiled at;
- ``os.path.realpath`` that stops at the stage's links, and ``/proc/self/maps`` that names
  the environment's files by their links (stage_paths.py), so no path of the environment's
  own location reaches its heap;
- the shared libraries it loads (the preloaded allocator, callgrind's helper) copied into the
  stage under fixed names (``<stage>/p/malloc.so``, ``helper.so``), not loaded from the cache
  under the caller's ``$HOME``: the loader keeps each path on the heap.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.instructions import probe, stage_paths
from torchpulse.workloads.registry import MODEL_FAMILIES

# not $TMPDIR: a CI job's own temporary directory differs in length from one job to the next
FIXED_TMP = "/tmp"
PREFIX = "tpc-"  # and 8 characters: the stage's path has one length everywhere
STAGE_TRIES = 1000
# in every stage, written first: locked (flock) by the count that made it and inherited by the
# counted process, so a stage stays in use while either lives, even past its maker's death.
# In the links' folder, not the stage's root: that is the counted process's working
# directory, which its import system lists, and one more name there moved counts by up to 2 %
LINKS = "p"
# how a stored count names the stage: a place in one stage is the same place in any other
STAGE_KEY = "<stage>"
# the counted process's byte-code cache (PYTHONPYCACHEPREFIX), filled by process.compile_imports
# from the stage's paths: never the environment's __pycache__ files, which hold its own path
CACHE = f"{LINKS}/c"
LOCK = f"{LINKS}/.torchpulse-stage"
# torchpulse's package folder, of which every stage holds a copy (``copy_counted``)
PACKAGE = Path(__file__).resolve().parent.parent
# What of torchpulse the counted process imports (worker.IMPORTS, and every workload's build):
# its stage holds these alone. The import system lists each folder it imports from, and one
# more file there moves counts: an empty module added to instructions/ moved them by up to
# 0.47 %, two parent-side modules by 1 %. Staged alone, anything else of torchpulse can be
# added or changed without moving a count. A module of these packages that the counted
# process needs and this lacks fails its count (ImportError; tests/instructions/
# test_stage.py builds every workload from a stage's copy alone).
COUNTED_SOURCES = (
    "__init__.py", "errors.py", "files.py", "text.py", "presets.py", "sizes.py", "timing.py",
    "autograd/__init__.py", "autograd/audio_text.py", "autograd/choices.py",
    "autograd/functional.py", "autograd/matcher.py", "autograd/models.py", "autograd/ppl.py",
    "autograd/run.py", "autograd/tasks.py", "autograd/vision.py",
    "fastrnns/__init__.py", "fastrnns/choices.py", "fastrnns/runners.py",
    "models/__init__.py", "models/lstm.py", "models/modes.py", "models/resnet.py",
    "workloads/__init__.py", "workloads/clock.py", "workloads/regions.py",
    "workloads/registry.py", *(f"workloads/{f.module}.py" for f in MODEL_FAMILIES.values()),
    "instructions/__init__.py", "instructions/callgrind.py", "instructions/client.py",
    "instructions/messages.py", "instructions/native.py", "instructions/stage_paths.py",
    "instructions/windows.py", "instructions/worker.py",
)


@dataclass(frozen=True)
class Stage:
    """Where the counted process runs (its working directory, holding its files) and what it
    is started with: ``python`` (the interpreter and its flags) and ``environ``."""

    root: Path
    python: tuple[str, ...]
    environ: Mapping[str, str]
    lock: int  # the stage's lock, open: the counted process inherits it (pass_fds)
    helper: Path | None = None  # callgrind's helper, in the stage
    # what the stage's copies and links stand for: a path in the stage, relative to its
    # root, to the original (torchpulse's sources, a site-packages, a library)
    origins: Mapping[str, Path] = field(default_factory=dict)

    def key(self, path: str) -> str | None:
        """The name, the same from any stage, of a path the counted process saw: where it
        lies in a copy or behind a link of the stage (torch's modules are imported through
        the links, its libraries are named by their resolved paths in the process's
        mappings), ``<stage>/`` and its place there, so that a later stage resolves it to
        what *its* process would read (``path``); anything else outside the stage (the base
        interpreter, the system's libraries), itself; None for the stage's own files."""
        if path == str(self.root) or path.startswith(f"{self.root}/"):
            inside = path[len(str(self.root)) + 1:]
            return f"{STAGE_KEY}/{inside}" if self._copied(inside) is not None else None
        for copied, original in sorted(self.origins.items(), key=lambda kv: -len(str(kv[1]))):
            if path == str(original) or path.startswith(f"{original}/"):
                return f"{STAGE_KEY}/{copied}{path[len(str(original)):]}"
        return path

    def path(self, key: str) -> Path:
        """Where this stage's process reads what ``key`` (a name ``key`` gave) names."""
        if key.startswith(f"{STAGE_KEY}/"):
            return self.root / key[len(STAGE_KEY) + 1:]
        return Path(key)

    def _copied(self, inside: str) -> str | None:
        """The copy or link of the stage (relative to its root) that ``inside`` lies in."""
        for copied in sorted(self.origins, key=len, reverse=True):
            if inside == copied or inside.startswith(f"{copied}/"):
                return copied
        return None


# the libraries' names in the stage's links folder
PRELOAD_NAME = "malloc.so"
HELPER_NAME = "helper.so"


def import_roots() -> list[Path]:
    """The directories the counted process imports from besides torchpulse's copy, in order
    (probe.py): every site-packages (or dist-packages) on sys.path, and torch's root if it
    is in none of them."""
    return [Path(root) for root in probe.interpreter()["roots"]]


class InterpreterError(TorchpulseError, ValueError):
    """An interpreter to count in that cannot be run or has no torch."""


def target(python: str | None) -> tuple[str, list[Path]]:
    """(the base interpreter, the import roots) of the counted process for ``python`` (an
    environment's interpreter; None: the one running this), found by running probe.py in it
    rather than read from this process: another environment's files are never this one's."""
    if python is None:
        return os.path.realpath(sys.executable), import_roots()
    try:
        done = subprocess.run([python, probe.__file__], capture_output=True, text=True,
                              check=False, timeout=120)
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise InterpreterError(f"cannot run {python}: {exc}") from None
    if not isinstance(found, dict):
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise InterpreterError(f"cannot run {python}: {why}")
    if found.get("torch") is None:
        raise InterpreterError(f"{python} cannot import torch: nothing to count there")
    return str(found["python"]), [Path(root) for root in found["roots"]]


def _base_directory() -> str:
    if os.path.isdir(FIXED_TMP) and os.access(FIXED_TMP, os.W_OK | os.X_OK):
        return FIXED_TMP
    return tempfile.gettempdir()  # a fixed length still, on this machine


def copy_counted(package: Path, target: Path) -> None:
    """COUNTED_SOURCES of ``package`` into ``target``, nothing else (no compiled files, no
    other module); FileNotFoundError for one this package lacks."""
    for relative in COUNTED_SOURCES:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / relative, target / relative)


def copy_package(package: Path, target: Path) -> None:
    """Every source and data file of ``package`` into ``target`` (no compiled files): what
    the workers of another environment run (compare --python's wall and GPU workers)."""
    shutil.copytree(package, target, ignore=_not_sources)


def _not_sources(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or (
        not os.path.isdir(os.path.join(folder, n)) and not n.endswith((".py", ".yaml")))}


def _new_directory(base: Path) -> tuple[Path, int]:
    """``base/tpc-00000000``, or the next number free, and its lock, held: created here
    (never one that was there, but for a stale stage of this user's, removed first), and
    the same name, hence the same string hashes in the counted process, from one run to the
    next unless runs overlap."""
    for number in range(STAGE_TRIES):
        path = base / f"{PREFIX}{number:08d}"
        # a stale stage is removed, then its number tried once more
        if _made(path) or (_remove_if_stale(path) and _made(path)):
            return path, _lock(path)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # 8 characters too
    return path, _lock(path)


def _made(path: Path) -> bool:
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return False
    return True


def _lock(stage: Path) -> int:
    """The lock of the new ``stage``, held. It is locked under another name and then renamed
    into place, so that no other count ever finds it unlocked; the stage goes if this
    fails."""
    try:
        (stage / LINKS).mkdir()
        making = stage / f"{LOCK}.new"
        fd = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(making, stage / LOCK)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return fd


def _remove_if_stale(path: Path) -> bool:
    """Remove ``path`` if it is a stage of this user's that no live process uses (its lock
    is free): a real directory, not a link, holding a LOCK file. Anything else is left as it
    is; True if it went."""
    try:
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        fd = os.open(path / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a count is running in it
            return False
        shutil.rmtree(path, ignore_errors=True)  # unlinks its links, never follows them
        return not os.path.lexists(path)
    finally:
        os.close(fd)


def mirror(folder: Path, target: Path) -> bool:
    """``folder``'s tree at ``target``: its folders made anew, its files hard links, its
    symbolic links as they are (0.7 s for a 5.5 GB environment of 30,000 entries). Through
    a symbolic link the kernel still names every file the process maps or resolves by the
    environment's own path (in /proc/self/maps, in readlink, to valgrind), and two asv
    environments at different paths counted apart for it; through hard links it names them
    by the stage's. False, with nothing left at ``target``, where a file cannot be linked
    (another filesystem, a file of another user's): the caller links the folder instead,
    and stage_paths.py hides its path from Python."""
    try:
        shutil.copytree(folder, target, symlinks=True, copy_function=os.link)
    except (OSError, shutil.Error):
        shutil.rmtree(target, ignore_errors=True)
        return False
    return True


def environment(root: Path, links: list[Path], extra: Mapping[str, str]) -> dict[str, str]:
    """The counted process's whole environment: fixed values, the import links and
    ``extra`` (the counting settings), nothing of the caller's."""
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(root),
            "PYTHONPATH": os.pathsep.join(str(link) for link in links),
            "PYTHONPYCACHEPREFIX": str(root / CACHE), "PYTHONDONTWRITEBYTECODE": "1", **extra}


@contextlib.contextmanager
def stage(extra_environ: Mapping[str, str], *, preload: Path | None = None,
          helper: Path | None = None, python: str | None = None) -> Iterator[Stage]:
    """A fresh stage, removed afterwards with everything in it (its links only, never what
    they point to); ``preload``, a library copied into it and named by ``LD_PRELOAD``;
    ``helper``, one copied into it for the counted process to load (``Stage.helper``);
    ``python``, the environment to count (``target``; this one by default)."""
    interpreter, roots = target(python)
    root, lock = _new_directory(Path(_base_directory()))
    try:
        links_dir = root / LINKS  # made with the lock
        links = [links_dir / "00"]
        copy_counted(PACKAGE, links[0] / PACKAGE.name)
        origins = {f"{LINKS}/00/{PACKAGE.name}": PACKAGE}
        for index, folder in enumerate(roots, start=1):
            link = links_dir / f"{index:02d}"
            if not mirror(folder, link):
                link.symlink_to(folder, target_is_directory=True)
            links.append(link)
            origins[f"{LINKS}/{index:02d}"] = folder
        # the counted process reads its mappings with these folders named by their links
        (links_dir / stage_paths.TABLE).write_bytes(stage_paths.maps_table(
            {f"{index:02d}": str(folder) for index, folder in enumerate(roots, start=1)}))
        environ = environment(root, links, extra_environ)
        if preload is not None:
            shutil.copyfile(preload, links_dir / PRELOAD_NAME)
            environ["LD_PRELOAD"] = str(links_dir / PRELOAD_NAME)
            origins[f"{LINKS}/{PRELOAD_NAME}"] = Path(preload)
        staged_helper = None
        if helper is not None:
            staged_helper = links_dir / HELPER_NAME
            shutil.copyfile(helper, staged_helper)
            origins[f"{LINKS}/{HELPER_NAME}"] = Path(helper)
        yield Stage(root, (interpreter, "-S"), environ, lock, staged_helper, origins)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # rmtree unlinks links, never follows them
        os.close(lock)
