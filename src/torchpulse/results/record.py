"""`torchpulse record`: measure what is installed in this environment (a PyTorch nightly, a
local build, any package) and file the results at the commit it was built from.

asv normally builds every commit itself. For a build someone else made, its "existing"
environment runs the suites in a given interpreter and ``--set-commit-hash`` files the results
under a commit of the configured repository, which orders them on the dashboard. What this
module adds: which commit the installed build comes from, and the checks that it is one asv
can show (known to the local clone, on the first-parent history of a configured branch).

Where the commit comes from:

* torch: ``torch.version.git_version``, read from torch/version.py without importing torch;
* any other package installed by pip from git (``pip install git+URL@REV``): the commit pip
  recorded in its ``direct_url.json`` (PEP 610);
* otherwise, or to override either: ``--commit``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.files import locked_folder, write_text_atomically
from torchpulse.results import asv_process, builds
from torchpulse.results.gitrepo import GitError
from torchpulse.results.project import Project

_SHA = re.compile(r"[0-9a-f]{7,40}")


class RecordError(TorchpulseError, ValueError):
    """An installed build with no commit to file it under, or a commit asv cannot show."""


@dataclass(frozen=True)
class Build:
    """What is installed: a package, its version, and the commit it says it was built from."""

    package: str
    version: str
    commit: str
    source: str  # where the commit was read


def _torch_version_file() -> Path | None:
    """torch/version.py of the torch this interpreter would import, found without
    importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "version.py"


def _torch_git_version() -> tuple[str, str] | None:
    """(version, git_version) from torch/version.py, parsed rather than imported."""
    path = _torch_version_file()
    found = {k: v for k, v in builds.version_fields(path).items() if isinstance(v, str)} \
        if path is not None else {}
    if "git_version" not in found:
        return None
    return found.get("__version__", "?"), found["git_version"]


def _pip_vcs_commit(dist: importlib.metadata.Distribution) -> str | None:
    """The commit pip recorded for a VCS install (PEP 610 direct_url.json), if any."""
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    vcs = info.get("vcs_info") if isinstance(info, dict) else None
    commit = vcs.get("commit_id") if isinstance(vcs, dict) else None
    return commit if isinstance(commit, str) else None


def torch_build() -> builds.Build | None:
    """The torch installed here, as its torch/version.py says (without importing it)."""
    path = _torch_version_file()
    return builds.of_version_file(path) if path is not None else None


def installed_build(package: str) -> Build:
    """The installed ``package`` and the commit it comes from; RecordError when it does not
    say (an editable install, a wheel from an index, a build without git)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise RecordError(f"{package!r} is not installed in this environment "
                          f"({sys.executable})") from None
    version = dist.version
    if package == "torch":
        found = _torch_git_version()
        if found and _SHA.fullmatch(found[1]):
            return Build(package, found[0], found[1], "torch.version.git_version")
    commit = _pip_vcs_commit(dist)
    if commit and _SHA.fullmatch(commit):
        return Build(package, version, commit, "pip's direct_url.json")
    raise RecordError(f"{package} {version} does not say which commit it was built from; "
                      "pass --commit REV")


def resolve(project: Project, rev: str) -> tuple[str, str]:
    """(full sha, branch) of ``rev`` in the project's clone, which must hold it on the
    first-parent history of a configured branch (asv shows no other commit)."""
    try:
        sha = project.resolve(rev)
    except GitError:
        raise RecordError(f"commit {rev} is not in {project.local_repo()}: fetch it into "
                          "that clone (or pass --commit)") from None
    for branch in project.branches:
        try:
            if sha in project.history(branch).position:
                return sha, branch
        except GitError:
            continue
    raise RecordError(f"commit {sha[:12]} is not on the first-parent history of "
                      f"{', '.join(project.branches)} in {project.local_repo()}: asv would "
                      "not show it")


# where record keeps its launcher (``launcher``) and its lock, in the project
RECORD_FOLDER = Path(".asv") / "record"


def launcher(project: Project) -> Path:
    """The interpreter path every record of ``project`` gives asv: asv names an "existing"
    environment after its interpreter's path, so each virtualenv's builds formed a series
    of their own and never met another build's; through one launcher at a fixed path of
    the project (a two-line script that runs the interpreter at hand) every build of a
    machine is a commit of one series."""
    # absolute: asv names the environment after the path it resolves, and builds and
    # profiles are filed under that name (a relative --config gave them another)
    return project.root.resolve() / RECORD_FOLDER / "python"


def environment_name(project: Project) -> str:
    """asv's name of the environment record files its runs under (asv's get_env_name for
    an existing environment: the interpreter's path with "_" for "/")."""
    return f"existing-py{str(launcher(project)).replace(os.path.sep, '_')}"


@contextlib.contextmanager
def recording(project: Project, python: str = sys.executable) -> Iterator[Path]:
    """The launcher pointed at ``python``, held for one record at a time (a lock on its
    folder: another record of the project waits), written all or nothing."""
    path = launcher(project)
    with locked_folder(path.parent):
        write_text_atomically(path, f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n')
        os.chmod(path, 0o755)
        yield path


def asv_commands(project: Project, sha: str, bench: str, machine: str | None,
                 python: str = sys.executable, quick: bool = False,
                 interpreter: Path | None = None) -> list[list[str]]:
    """The asv commands that record ``sha``: this machine's description, then the run in
    this interpreter's environment, named after ``interpreter`` (the launcher) when given."""
    config = ["--config", str(project.config)]
    named = ["--machine", machine] if machine else []
    run = ["run", *config, *named, "--environment", f"existing:{interpreter or python}",
           "--set-commit-hash", sha, "--record-samples", "--show-stderr", "--bench", bench]
    if quick:
        run.append("--quick")
    return [asv_process.command(["machine", "--yes", *config, *named], python=python),
            asv_process.command(run, python=python)]


def asv_environment(sha: str | None = None, project: Project | None = None) -> dict[str, str]:
    """This process's environment for asv (asv_process.base_environment). For a record of
    ``project``, what the instruction counts' function profiles are filed by, which asv
    gives the benchmarks of an "existing" environment none of (no ASV_COMMIT, ASV_ENV_NAME
    or ASV_CONF_DIR): the commit, the environment's name, the folder."""
    from torchpulse.instructions import profiles

    env = asv_process.base_environment()
    if sha is not None:
        env[profiles.RECORD_COMMIT_ENV] = sha
    if project is not None:
        env[profiles.RECORD_ENV_NAME_ENV] = environment_name(project)
        env.setdefault(profiles.FOLDER_ENV, str(profiles.folder(project.root.resolve())))
    return env


def run(commands: list[list[str]], cwd: Path, sha: str | None = None,
        project: Project | None = None) -> int:
    """Run ``commands`` in turn (output streamed; `asv machine`'s description of the machine
    only when it fails); the first non-zero exit status, else 0."""
    env = asv_environment(sha, project)
    for command in commands:
        proc = asv_process.run(command, env=env, cwd=cwd, quiet=command[3] == "machine")
        if proc.returncode != 0:
            return proc.returncode
    return 0
