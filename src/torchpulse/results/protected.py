"""Where a command may write: never into what an asv project keeps.

One rule for every file or folder a command writes besides the results it files (a report,
a hash file, a ledger, a table, a CSV, a profile folder, a published site): it may not lie
in the results tree, the benchmark folder, asv's environments or any git repository's
``.git``, nor be the config file; an existing file must be a regular file, and the path
itself not a symbolic link (a link is how a harmless-looking name leads into any of these).
Commands check their paths before doing any work; the error is one line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results.project import Project


class ProtectedPathError(TorchpulseError, ValueError):
    """A path a command was asked to write that would damage what the project keeps."""


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved)."""
    return path == folder or folder in path.parents


def kept(project: Project) -> list[tuple[str, Path]]:
    """What ``project`` keeps, resolved, with its description: results, benchmarks, asv's
    environments, the config, and the git repository of a local repo."""
    root = project.root.resolve()
    found = [("the results folder", project.results_dir),
             ("the benchmarks folder", root / str(project.settings.get("benchmark_dir")
                                                  or "benchmarks")),
             ("asv's environments", root / str(project.settings.get("env_dir") or "env")),
             ("the asv config", project.config)]
    if not project.is_remote:
        found.append(("the git repository", (root / project.repo_setting).resolve() / ".git"))
    return [(what, path.resolve()) for what, path in found]


def _resolved(path: Path) -> Path:
    """``path`` with its folder resolved (links and ``..`` in it followed) and its own name
    kept: where a write to it would land unless the name itself is a link."""
    return path.parent.resolve() / path.name


def _check(value: str, option: str, projects: Sequence[Project]) -> tuple[Path, Path]:
    if not value.strip() or "\0" in value:
        raise ProtectedPathError(f"{option}: an empty or malformed path ({value!r})")
    path = Path(value)
    if path.is_symlink():
        raise ProtectedPathError(f"{option} {value}: is a symbolic link; name the file "
                                 "itself")
    where = _resolved(path)
    if ".git" in where.parts:
        raise ProtectedPathError(f"{option} {value}: inside a git repository's .git folder; "
                                 "write it elsewhere")
    for what, folder in (place for project in projects for place in kept(project)):
        if inside(where, folder):
            raise ProtectedPathError(f"{option} {value}: inside {what} ({folder}); write it "
                                     "elsewhere")
    return path, where


def check_file(value: str, option: str, projects: Sequence[Project] = ()) -> Path:
    """``value`` as a path a command may write a file to; ProtectedPathError (one line)
    otherwise. ``projects``: the asv projects whose kept folders are refused (none: only
    ``.git``, links and what is not a regular file)."""
    path, _ = _check(value, option, projects)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path
    if stat.S_ISDIR(mode):
        raise ProtectedPathError(f"{option} {value}: is a folder; name a file")
    if not stat.S_ISREG(mode):
        raise ProtectedPathError(f"{option} {value}: is not a regular file (a pipe, socket "
                                 "or device)")
    return path


def check_folder(value: str, option: str, projects: Sequence[Project] = ()) -> Path:
    """``value`` as a folder a command may create and write its own files into, by the same
    rule as ``check_file``."""
    path, _ = _check(value, option, projects)
    if path.exists() and not path.is_dir():
        raise ProtectedPathError(f"{option} {value}: exists and is not a folder")
    return path
