"""The benchmarked repository's history, through git: commits, first-parent order, dates."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from torchpulse.errors import TorchpulseError

# a full commit hash as git prints it: what a file named after a commit may hold
FULL_SHA = re.compile(r"[0-9a-f]{40}")


class GitError(TorchpulseError, ValueError):
    """A revision that does not resolve, or is not on a configured branch."""


class History:
    """The commits of a branch, oldest first, and where each one sits."""

    def __init__(self, commits: list[str]) -> None:
        self.commits = list(commits)
        self.position = {c: i for i, c in enumerate(self.commits)}


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or ["git failed"])[-1]
        raise GitError(message)
    return proc.stdout


def resolve(repo: Path, rev: str) -> str:
    """The full sha of ``rev`` (any git revision) in ``repo``."""
    if not rev or rev.startswith("-"):
        raise GitError(f"not a revision: {rev!r}")
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except GitError:
        raise GitError(f"unknown commit {rev!r} in {repo}") from None


def first_parent_history(repo: Path, branch: str) -> list[str]:
    """Commits of ``branch`` in first-parent order, oldest first."""
    try:
        out = _git(repo, "rev-list", "--first-parent", "--reverse", branch, "--")
    except GitError as exc:
        raise GitError(f"branch {branch!r}: {exc}") from None
    return out.split()


def first_parent_commits(repo: Path, spec: str) -> list[str]:
    """The first-parent commits of a revision range (``A..B``, ``C^!``, a branch), oldest
    first."""
    return _git(repo, "rev-list", "--first-parent", "--reverse", spec, "--").split()


def branch_containing(repo: Path, sha: str, branches: list[str]) -> str:
    """The first configured branch whose first-parent history holds ``sha``."""
    for branch in branches:
        try:
            if sha in first_parent_history(repo, branch):
                return branch
        except GitError:
            continue
    raise GitError(f"commit {sha[:8]} is not on the first-parent history of "
                   f"{' or '.join(branches)} (asv.conf.json branches)")


def commit_date_ms(repo: Path, sha: str) -> int:
    """The committer date as a JavaScript timestamp, as asv stores it."""
    return int(_git(repo, "log", "-1", "--format=%ct", sha).strip()) * 1000


def toplevel(path: Path) -> Path:
    """The root of the git work tree holding ``path``."""
    return Path(_git(path, "rev-parse", "--show-toplevel").strip())


def current_branch(repo: Path) -> str:
    """The branch checked out in ``repo``."""
    return _git(repo, "symbolic-ref", "--short", "HEAD").strip()


def first_parent_range(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` on ``bad``'s first-parent line, oldest
    first (what a bisection searches); ``good`` must be on that line."""
    out = _git(repo, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--").split()
    line = _git(repo, "rev-list", "--first-parent", bad, "--").split()
    if good not in line:
        raise GitError(f"{good[:12]} is not on the first-parent history of {bad[:12]}: "
                       "GOOD must be an ancestor of BAD on its first-parent line")
    return out


def subject(repo: Path, sha: str) -> str:
    """The first line of a commit's message."""
    return _git(repo, "log", "-1", "--format=%s", sha).strip()
