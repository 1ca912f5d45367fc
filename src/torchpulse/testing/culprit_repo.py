"""A fixture repository with a planted slowdown: the ground truth for ``compare`` and
``bisect`` (their end-to-end tests and ``experiments/bisect_trials.py``).

``make(root, commits, step_at, factor)`` writes a git repository of a tiny pure-Python
package ``stepwork`` and an asv project beside it (config and ``benchmarks/bench_work.py``).
Commit i (0-based) of main changes only a revision number, except that from commit
``step_at`` on, ``stepwork.work()`` loops ``factor`` times as often. Nothing in it imports
torch, so each measuring process starts in a fraction of a second.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from pathlib import Path

PACKAGE = "stepwork"
BENCHMARK = "bench_work.time_work"
LOOPS = 30_000  # about 3 ms a call in CPython on this machine

_SOURCE = '''"""Revision {revision} of a fixture package with a planted slowdown."""

LOOPS = {loops}


def work():
    total = 0
    for i in range(LOOPS):
        total += i * i % 7
    return total
'''

_BENCHMARK = '''import stepwork


def time_work():
    stepwork.work()


time_work.number = 1
time_work.repeat = 9
time_work.warmup_time = 0.05
'''


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "fixture@invalid",
           "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "fixture@invalid",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def config(setuptools: str | None = None) -> dict:
    """The asv config of the fixture: a virtualenv with only setuptools (pinned at this
    environment's version, which pip finds in its cache), each commit built and installed
    without dependencies and not uninstalled first, as torchpulse's own config does."""
    setuptools = setuptools or importlib.metadata.version("setuptools")
    return {
        "version": 1, "project": PACKAGE, "project_url": "https://example.invalid/",
        "repo": ".", "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv",
        "matrix": {"req": {"setuptools": setuptools}},
        "build_command": ["python -m pip wheel --no-deps --no-build-isolation --no-index "
                          "-w {build_cache_dir} {build_dir}"],
        "install_command": ["in-dir={env_dir} python -m pip install --no-deps "
                            "--force-reinstall {wheel_file}"],
        # no uninstall before each install: --force-reinstall replaces the package anyway,
        # and a pip run less is 0.7 s of each of the many runs compare and bisect make
        "uninstall_command": [],
        "benchmark_dir": "benchmarks", "env_dir": ".asv/env", "results_dir": "results",
        "html_dir": "html", "build_cache_size": 8,
    }


def make(root: Path, commits: int, step_at: int, factor: float) -> list[str]:
    """Write the fixture into ``root`` (absent or empty); the shas of main, oldest first."""
    if not 0 < step_at < commits:
        raise ValueError(f"the step must be at a commit after the first (1..{commits - 1})")
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'\n[project]\nname = "{PACKAGE}"\nversion = "0.1"\n')
    (root / "asv.conf.json").write_text(json.dumps(config(), indent=2) + "\n")
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_work.py").write_text(_BENCHMARK)
    (root / ".gitignore").write_text(".asv/\nresults/\nhtml/\n")
    (root / PACKAGE).mkdir()
    shas = []
    for i in range(commits):
        loops = round(LOOPS * factor) if i >= step_at else LOOPS
        (root / PACKAGE / "__init__.py").write_text(_SOURCE.format(revision=i, loops=loops))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"revision {i}" + (" (the step)" if i == step_at
                                                              else ""))
        shas.append(_git(root, "rev-parse", "HEAD"))
    return shas
