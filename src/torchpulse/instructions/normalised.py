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
  output files;
- the base interpreter (``realpath(sys.executable)``, not the virtual environment's link) with
  ``-S`` and ``PYTHONPATH`` naming fixed-length paths (``<stage>/p/00``, ``01``, ...): first a
  copy of torchpulse's sources alone (the import system lists and caches every directory it
  imports from, so a checkout's ``__pycache__`` folders, build files or stray files, which
  differ between clones, would otherwise be in its heap), then links to the site-packages,
  then to torch's root if it lies elsewhere;
- a fixed environment: no variable of the caller's reaches it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# not $TMPDIR: a CI job's own temporary directory differs in length from one job to the next
FIXED_TMP = "/tmp"
PREFIX = "tpc-"  # and 8 characters: the stage's path has one length everywhere
STAGE_TRIES = 1000
# torchpulse's package folder, copied into every stage (``copy_sources``) with these files
PACKAGE = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = (".py", ".yaml")


@dataclass(frozen=True)
class Stage:
    """Where the counted process runs (its working directory, holding its files) and what it
    is started with: ``python`` (the interpreter and its flags) and ``environ``."""

    root: Path
    python: tuple[str, ...]
    environ: Mapping[str, str]


def _package_root(name: str) -> Path | None:
    """The directory a top-level package is imported from (where ``name/`` lies), without
    importing it; None where it cannot be found."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def import_roots() -> list[Path]:
    """The directories the counted process imports from besides torchpulse's copy, in order:
    every site-packages (or dist-packages) on sys.path, and torch's root if it is in none of
    them. Only these: the folders a test runner or asv puts on sys.path would make the
    environment differ between callers."""
    roots: list[Path] = []
    for entry in sys.path:
        if entry and Path(entry).name in ("site-packages", "dist-packages") \
                and Path(entry).is_dir():
            roots.append(Path(entry).resolve())
    torch_root = _package_root("torch")
    if torch_root is not None:
        roots.append(torch_root)
    return list(dict.fromkeys(roots))  # each once, in order


def _base_directory() -> str:
    if os.path.isdir(FIXED_TMP) and os.access(FIXED_TMP, os.W_OK | os.X_OK):
        return FIXED_TMP
    return tempfile.gettempdir()  # a fixed length still, on this machine


def copy_sources(package: Path, target: Path) -> None:
    """``package``'s sources and data files into ``target``: no compiled files, no folder of
    them, nothing but what is tracked in this package (the suffixes below)."""
    shutil.copytree(package, target, ignore=_not_sources)


def _not_sources(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or (
        not os.path.isdir(os.path.join(folder, n)) and not n.endswith(SOURCE_SUFFIXES))}


def _new_directory(base: Path) -> Path:
    """``base/tpc-00000000``, or the next number free: created here (never one that was
    there), and the same name, hence the same string hashes in the counted process, from one
    run to the next unless runs overlap or one was killed before it tidied up."""
    for number in range(STAGE_TRIES):
        path = base / f"{PREFIX}{number:08d}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return path
    return Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # 8 characters too


def environment(root: Path, links: list[Path], extra: Mapping[str, str]) -> dict[str, str]:
    """The counted process's whole environment: fixed values, the import links and
    ``extra`` (the counting settings), nothing of the caller's."""
    return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(root),
            "PYTHONPATH": os.pathsep.join(str(link) for link in links),
            "PYTHONDONTWRITEBYTECODE": "1", **extra}


@contextlib.contextmanager
def stage(extra_environ: Mapping[str, str]) -> Iterator[Stage]:
    """A fresh stage, removed afterwards with everything in it (its links only, never what
    they point to)."""
    root = _new_directory(Path(_base_directory()))
    try:
        links_dir = root / "p"
        links_dir.mkdir()
        links = [links_dir / "00"]
        copy_sources(PACKAGE, links[0] / PACKAGE.name)
        for index, target in enumerate(import_roots(), start=1):
            link = links_dir / f"{index:02d}"
            link.symlink_to(target, target_is_directory=True)
            links.append(link)
        python = (os.path.realpath(sys.executable), "-S")
        yield Stage(root, python, environment(root, links, extra_environ))
    finally:
        shutil.rmtree(root, ignore_errors=True)  # rmtree unlinks links, never follows them
