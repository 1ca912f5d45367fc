"""Where a site may be published, and putting it there.

A publish replaces its target folder, so the target is checked first: it may not be, contain
or lie inside what the project keeps (results, benchmarks, asv's environments, the git
repository), may not be the project or the repository itself, and an existing target must be
a site torchpulse published (its marker file, or the pages an earlier torchpulse wrote), a
site `asv publish` wrote (asv's own files and nothing else), or empty. The new site is built
in a scratch folder of its own, publishes to one target are serialised by a lock on its
parent folder, and the new site takes the old one's place in one atomic step (Linux's
renameat2 RENAME_EXCHANGE; two renames where that is unavailable). Nothing is deleted that
the publish did not create or check to be a site.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results.project import Project
from torchpulse.results.protected import inside, kept

MARKER = ".torchpulse-site"  # written into every site torchpulse publishes
# what a site published before the marker existed holds
_EARLIER_SITE = ("index.html", "torchpulse.html")
_RENAME_EXCHANGE = 2
# what `asv publish` writes beside the files of its www template
_ASV_WRITES = {"index.json", "info.json", "graphs", "regressions.json", "regressions.xml",
               ".nojekyll"}
_ASV_HAS = ("index.html", "index.json", "asv.js")  # an asv site has at least these


class TargetError(TorchpulseError, ValueError):
    """An html target that publishing would damage."""


def check(project: Project, target: Path) -> Path:
    """``target``, resolved, when a site may be published there; TargetError otherwise."""
    where = target.resolve()
    roots = [("the project", project.root.resolve())]
    if not project.is_remote:
        roots.append(("the git repository", (project.root / project.repo_setting).resolve()))
    for what, root in roots:
        if inside(root, where):
            raise TargetError(f"--html-dir {target}: publishing there would replace {what} "
                              f"({root}); choose a folder of its own")
    for what, path in kept(project):
        if inside(where, path) or inside(path, where):
            raise TargetError(f"--html-dir {target}: overlaps {what} ({path}); choose a "
                              "folder of its own")
    if where.exists() or where.is_symlink():
        if not where.is_dir():
            raise TargetError(f"--html-dir {target}: exists and is not a folder")
        if not is_site(where):
            raise TargetError(f"--html-dir {target}: holds files that are not a torchpulse "
                              "or asv site; publish into an empty or new folder")
    return where


def is_site(folder: Path) -> bool:
    """Whether ``folder`` may be replaced: empty, a site torchpulse published, or one that
    `asv publish` wrote."""
    if (folder / MARKER).is_file():
        return True
    if all((folder / name).is_file() for name in _EARLIER_SITE):
        return True
    return not any(folder.iterdir()) or is_asv_site(folder)


def is_asv_site(folder: Path) -> bool:
    """asv's pages and data, and nothing else at the top: a folder with anything of the
    user's beside them is not replaced."""
    if not all((folder / name).is_file() for name in _ASV_HAS):
        return False
    names = _asv_names()
    return all(entry.name in names for entry in folder.iterdir())


def _asv_names() -> set[str]:
    """The names `asv publish` writes at a site's top: its www template (read from the
    installed asv without importing it) and its data files."""
    spec = importlib.util.find_spec("asv")
    www = [Path(p) / "www" for p in (spec.submodule_search_locations or [])] if spec else []
    return _ASV_WRITES | {f.name for d in www if d.is_dir() for f in d.iterdir()}


def remove_leftovers(target: Path) -> int:
    """Remove the scratch folders a publish killed before finishing left beside ``target``
    (``.<name>.publish-*``, ``.<name>.old-*``: only names ``scratch`` and ``replace`` give).
    Call it holding the lock on its parent folder (files.locked_folder), so no live publish
    owns them. How many it removed."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(publish|old)-[A-Za-z0-9_]+")
    removed = 0
    for entry in target.parent.iterdir() if target.parent.is_dir() else ():
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
            removed += 1
    return removed


def scratch(target: Path) -> Path:
    """A new, uniquely named folder beside ``target`` to build the site in."""
    return Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.publish-"))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically; False where the system cannot."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a))


def put(new: Path, target: Path) -> None:
    """Put the complete site ``new`` at ``target`` (checked, and locked by the caller), then
    remove the site it replaced."""
    (new / MARKER).write_text("published by torchpulse: `torchpulse publish` replaces this "
                              "folder\n", encoding="utf-8")
    if not target.exists():
        new.rename(target)
        return
    if _exchange(new, target):
        shutil.rmtree(new)  # now the old site
        return
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old-"))
    target.rename(old / "site")
    new.rename(target)
    shutil.rmtree(old)
