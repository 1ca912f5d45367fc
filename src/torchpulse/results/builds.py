"""Which torch build a recorded commit was measured with: its version, git commit, CUDA version
and debug flag, stored by `torchpulse record` beside asv's results (never in them: asv's
files hold numbers only), one small JSON file per (commit, asv environment) in
``<project>/.asv/builds/``, and read back by the alert, which names the builds on either
side of a change. Derived data: a missing or damaged file only leaves the alert without the
builds' names. Standard library only.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Container
from dataclasses import asdict, dataclass
from pathlib import Path

from torchpulse.files import no_link_below, read_regular, write_json_atomically
from torchpulse.results.gitrepo import FULL_SHA

FOLDER = Path(".asv") / "builds"
# asv's environment names: what a file of derived data may be named after
ENV_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")
_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")  # a version, a commit, a CUDA version
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Build:
    """A torch build as its torch/version.py says it."""

    version: str
    git_version: str | None = None
    cuda: str | None = None
    debug: bool = False

    @property
    def kind(self) -> str:
        return f"CUDA {self.cuda}" if self.cuda else "CPU"


def version_fields(path: Path) -> dict[str, object]:
    """The constants torch/version.py at ``path`` assigns ({} when it cannot be read),
    parsed rather than imported: importing torch costs seconds."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def of_version_file(path: Path) -> Build | None:
    """The build torch/version.py at ``path`` describes; None when it cannot say."""
    found = version_fields(path)
    return _checked(found.get("__version__"), found.get("git_version"), found.get("cuda"),
                    found.get("debug"))


def _checked(version, git_version, cuda, debug) -> Build | None:
    def text(value) -> str | None:
        return value if isinstance(value, str) and _TEXT.fullmatch(value) else None

    if text(version) is None:
        return None
    return Build(version, text(git_version), text(cuda), debug is True)


def path(root: Path, commit: str, env: str) -> Path | None:
    if not FULL_SHA.fullmatch(commit) or not ENV_NAME.fullmatch(env):
        return None
    return root / FOLDER / f"{commit}-{env}.json"


def write(root: Path, commit: str, env: str, build: Build) -> Path | None:
    """Store ``build`` for ``commit`` in ``env``, all or nothing; None for names no file may
    have, or a symbolic link on the way to it."""
    target = path(root, commit, env)
    if target is None or not no_link_below(root, target):  # a link planted on the way
        return None
    write_json_atomically(target, asdict(build))
    return target


def read(root: Path, commit: str, env: str) -> Build | None:
    """The build stored for ``commit`` in ``env``, or None (none stored, or not one)."""
    target = path(root, commit, env)
    if target is None:
        return None
    try:
        data = json.loads(read_regular(target, MAX_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return _checked(data.get("version"), data.get("git_version"), data.get("cuda"),
                    data.get("debug"))


def recorded(root: Path, envs: set[str], commits: Container[str]) -> dict[str, Build]:
    """The builds stored for ``commits`` in any of ``envs`` (one a commit: the first
    environment's in name order where several hold one), from one listing of the folder."""
    folder = root / FOLDER
    try:
        names = sorted(os.listdir(folder))
    except OSError:  # none stored, or not a folder
        return {}
    found: dict[str, Build] = {}
    for env in sorted(envs):
        suffix = f"-{env}.json"
        for name in names:
            commit = name[:40]
            if name.endswith(suffix) and len(name) == 40 + len(suffix) \
                    and commit not in found and commit in commits:
                build = read(root, commit, env)
                if build is not None:
                    found[commit] = build
    return found
