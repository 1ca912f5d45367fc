"""`torchpulse init DIR --repo PATH|URL`: a benchmark project for another repository, in the
style of a standalone asv benchmarks repository.

The project holds an asv.conf.json aimed at that repository with the traps this project hit
already fixed (exact pins, since asv mangles ranges; no build isolation and no dependencies
when building and installing each commit, so torch is never replaced; the forkserver, so
torch is imported once per commit), a wheel of this torchpulse that asv installs next to
each commit (the harness stays the same while the measured code changes), benchmarks/ with
the machine canary and an example suite on ``torchpulse.harness``, a Makefile and a CI
workflow with the regression gate. Everything is written into a scratch folder first and
moved into place at the end: a failed init leaves nothing behind.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results import gitrepo
from torchpulse.results.gitrepo import GitError

# what the asv environments pin besides torch: torchpulse's own dependencies and the build
# backend (--no-build-isolation builds with what the environment has)
PINNED = ("numpy", "scipy", "pyyaml", "setuptools")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ScaffoldError(TorchpulseError, ValueError):
    """A target that is not empty, a repository that is not one, a torchpulse to copy that
    cannot be found."""


@dataclass(frozen=True)
class Plan:
    directory: Path
    repo: str  # as asv.conf.json names it: an absolute path or a URL
    branch: str
    name: str  # the measured project's distribution name (asv's "project")
    pins: dict[str, str]
    with_suites: bool = False  # torchpulse's own suites too (they measure torch itself)


def source_tree() -> Path:
    """torchpulse's source (pyproject.toml and benchmarks/ beside src/torchpulse)."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "pyproject.toml").is_file() or not (root / "benchmarks").is_dir():
        raise ScaffoldError("init copies torchpulse from its source tree: install it from a "
                            "clone (pip install -e /path/to/torchpulse)")
    return root


def _is_url(repo: str) -> bool:
    return "://" in repo or repo.startswith("git@")


def _check_place(directory: Path) -> None:
    """A project is never written inside a git repository's .git folder, into an asv results
    tree (a folder above holds benchmarks.json or a machine's machine.json), or under a file."""
    where = directory.parent.resolve() / directory.name
    if ".git" in where.parts:
        raise ScaffoldError(f"{directory}: inside a git repository's .git folder; init "
                            "writes a project elsewhere")
    for folder in where.parents:
        if folder.exists() and not folder.is_dir():
            raise ScaffoldError(f"{directory}: {folder} is a file, not a folder")
        if (folder / "benchmarks.json").is_file() or (folder / "machine.json").is_file():
            raise ScaffoldError(f"{directory}: inside the asv results tree {folder}; init "
                                "writes a project elsewhere")


def plan(directory: Path, repo: str, branch: str | None = None, name: str | None = None,
         torch: str | None = None, with_suites: bool = False) -> Plan:
    """What init will write, checked: DIR absent or empty, the repository a git clone (or a
    URL, with --branch), names and versions that asv.conf.json can hold."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ScaffoldError(f"{directory} exists and is not an empty folder; init writes "
                            "only into a new one")
    _check_place(directory)
    if not repo or not repo.isprintable():
        raise ScaffoldError(f"--repo {repo!r}: not a path or URL (it is written into the "
                            "Makefile and the workflow)")
    if _is_url(repo):
        if not branch:
            raise ScaffoldError(f"{repo} is a URL: name its branch with --branch")
        where = repo
    else:
        path = Path(repo).expanduser().resolve()
        try:
            top = gitrepo.toplevel(path)
            branch = branch or gitrepo.current_branch(top)
            gitrepo.resolve(top, branch)
        except GitError as exc:
            raise ScaffoldError(f"{repo}: not a git repository with branch "
                                f"{branch or '(HEAD)'}: {exc}") from None
        where = str(top)
    name = name or Path(where.rstrip("/")).name.removesuffix(".git")
    for what, value in (("--name", name), ("--branch", branch)):
        if not _NAME.fullmatch(value or ""):
            raise ScaffoldError(f"{what} {value!r}: letters, digits, '.', '_' and '-' only")
    return Plan(directory.resolve(), where, branch, name, pins(torch), with_suites)


def pins(torch: str | None = None) -> dict[str, str]:
    """Exact versions for the asv environments: torch (default: the installed one, without
    its local build tag) and the PINNED packages as installed here."""
    found = {}
    for package in ("torch", *PINNED):
        try:
            found[package] = importlib.metadata.version(package).split("+")[0]
        except importlib.metadata.PackageNotFoundError:
            raise ScaffoldError(f"{package} is not installed here; init pins the versions "
                                "of this environment") from None
    if torch:
        if not re.fullmatch(r"\d+(\.\d+)*([a-z]+\d*)?(\.dev\d+)?", torch):
            raise ScaffoldError(f"--torch {torch!r}: an exact version (asv mangles ranges)")
        found["torch"] = torch
    return found


def config(p: Plan, wheel_name: str) -> dict:
    # asv installs from inside the environment's folder, .asv/env/<hash>/: the wheel is
    # named relative to it, so the project can move (or be checked out by CI) as a whole
    wheel = f"../../../wheels/{wheel_name}"
    return {
        "version": 1,
        "project": p.name,
        "project_url": p.repo if _is_url(p.repo) else "",
        "repo": p.repo,
        "branches": [p.branch],
        "dvcs": "git",
        "environment_type": "virtualenv",
        "matrix": {"req": p.pins},
        "build_command": ["python -m pip wheel --no-deps --no-build-isolation --no-index "
                          "-w {build_cache_dir} {build_dir}"],
        # one pip process for both wheels: pip's start-up is a second or two a commit
        "install_command": [
            f"in-dir={{env_dir}} python -m pip install --no-deps --force-reinstall "
            f"{{wheel_file}} {wheel}"],
        # no pip uninstall before each install: --force-reinstall replaces the installed
        # version anyway, and a second pip process is a second or so each time asv switches
        # commits (twice a commit with interleaved rounds)
        "uninstall_command": [],
        "benchmark_dir": "benchmarks",
        "env_dir": ".asv/env",
        "results_dir": "results",
        "html_dir": "html",
        "launch_method": "forkserver",
        "build_cache_size": 8,
    }


EXAMPLE = '''\
"""Your model, measured with torchpulse's harness (torchpulse README, "Your own model").

Replace the example network with your package's: asv installs the commit it measures, so
`from yourpackage import Net` here measures that commit's Net."""

import torch
from torch import nn

from torchpulse.harness import ModelBenchmark


class Example(ModelBenchmark):
    params = [[8, 32]]
    param_names = ["batch"]

    def build(self, device, generator, batch):
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
        return model, (torch.randn(batch, 64, generator=generator),)
'''

MAKEFILE = '''\
# A torchpulse project for {repo} (made by `torchpulse init`). asv and torchpulse come from
# the environment that runs make (pip install -e /path/to/torchpulse).
N ?= 5
PRESET ?= cpu
BRANCH := {branch}

.PHONY: dashboard publish alert

# the main job: the last N commits of $(BRANCH) measured (what is stored is skipped), what
# the machine canary saw disturbed measured again, the site published, the alert printed;
# exit 1 on a regression
dashboard:
\ttorchpulse dashboard --branch "$(BRANCH)" -n $(N) --preset $(PRESET)

publish:
\ttorchpulse publish

alert:
\t@torchpulse alert; rc=$$?; [ $$rc -le 1 ]
'''

WORKFLOW = '''\
# Benchmark every push of {branch}, keep the results history in a cache, fail on a regression.
# The measured repository is {repo}: a path must be reachable on the runner (or make it a
# URL in asv.conf.json).
name: benchmarks
on:
  push:
    branches: [{branch}]
jobs:
  benchmarks:
    runs-on: ubuntu-latest  # a dedicated, quiet runner gives trustworthy numbers
    timeout-minutes: 90
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: results history
        uses: actions/cache@v4
        with:
          path: results
          key: torchpulse-results-${{{{ github.sha }}}}
          restore-keys: torchpulse-results-
      - name: set up
        run: |
          pip install asv tqdm {requirements}
          pip install --no-deps wheels/{wheel}
          npm ci --ignore-scripts --no-audit --no-fund
      - name: benchmark and gate
        run: make dashboard N=1
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: benchmark-site
          path: html
'''


def files(p: Plan, wheel_name: str) -> dict[str, str]:
    """The project's text files, by path relative to it."""
    source = source_tree()
    suites = {}
    if p.with_suites:  # they load their name lists and sizes through _tree.py
        suites = {f"benchmarks/{f.name}": f.read_text()
                  for f in sorted((source / "benchmarks").glob("*.py"))
                  if f.name.startswith(("bench_", "_common", "_tree"))}
    return {**suites,
        "asv.conf.json": json.dumps(config(p, wheel_name), indent=4) + "\n",
        "benchmarks/__init__.py": "",
        "benchmarks/_canary.py": (source / "benchmarks" / "_canary.py").read_text(),
        # the site's scripts and styles, for `npm ci` where torchpulse is installed as a wheel
        "package.json": (source / "package.json").read_text(),
        "package-lock.json": (source / "package-lock.json").read_text(),
        "benchmarks/bench_model.py": EXAMPLE,
        "Makefile": MAKEFILE.format(repo=p.repo, branch=p.branch),
        ".github/workflows/benchmarks.yml": WORKFLOW.format(
            branch=p.branch, repo=p.repo, requirements=" ".join(
                f'"{k}=={v}"' for k, v in p.pins.items()), wheel=wheel_name),
        ".gitignore": ".asv/\nhtml/\nnode_modules/\n",
    }


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def create(p: Plan) -> list[str]:
    """Write the project: a torchpulse wheel and the files, into a scratch folder beside DIR,
    moved into place at the end. The files written, relative to DIR."""
    p.directory.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{p.directory.name}.init-",
                                    dir=p.directory.parent))
    try:
        scratch.chmod(0o777 & ~_umask())  # mkdtemp's 0700 is for the scratch, not the project
        # build from a copy of what the build reads: the source tree is left as it was
        source, build = source_tree(), scratch / ".build"
        shutil.copytree(source / "src", build / "src",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(source / name, build / name)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--no-build-isolation", "--no-index", "-w", str(scratch / "wheels"),
             str(build)], capture_output=True, text=True, check=False)
        shutil.rmtree(build)
        wheels = sorted((scratch / "wheels").glob("torchpulse-*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ScaffoldError(f"building torchpulse's wheel failed: {last}")
        written = [f"wheels/{wheels[0].name}"]
        for relative, text in files(p, wheels[0].name).items():
            path = scratch / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(relative)
        if p.directory.exists():
            p.directory.rmdir()  # empty, checked by plan()
        scratch.rename(p.directory)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return written
