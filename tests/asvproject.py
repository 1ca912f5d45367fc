"""A throwaway asv project for import and merge tests: a git repository with three commits
on main and one on a side branch, and an asv.conf.json whose results live next to it."""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Project:
    root: Path
    conf: Path
    results: Path
    html: Path
    main: list[str]  # shas, oldest first
    side: str  # a commit only on branch "side"

    def tree_bytes(self) -> dict[str, bytes]:
        return tree_bytes(self.results)


def tree_bytes(results: Path) -> dict[str, bytes]:
    """Every file under ``results`` with its content: 'byte-for-byte unchanged' checks."""
    if not results.exists():
        return {}
    return {str(p.relative_to(results)): p.read_bytes()
            for p in sorted(results.rglob("*")) if p.is_file()}


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def make_project(root: Path) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    main = []
    for i in range(3):
        (root / "file.txt").write_text(f"{i}\n")
        _git(root, "add", "file.txt")
        _git(root, "commit", "-q", "-m", f"commit {i}")
        main.append(_git(root, "rev-parse", "HEAD"))
    _git(root, "checkout", "-q", "-b", "side")
    (root / "file.txt").write_text("side\n")
    _git(root, "commit", "-q", "-am", "side")
    side = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "main")
    conf = root / "asv.conf.json"
    conf.write_text("// an asv config with a comment, as asv allows\n" + json.dumps({
        "version": 1, "project": "p", "project_url": "https://example.invalid/",
        "repo": ".", "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv",
        "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html",
    }, indent=2))
    return Project(root, conf, root / "results", root / "html", main, side)


def one_commit_repo(root: Path, branch: str = "main") -> Path:
    """A git repository with one commit on ``branch``."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", branch)
    (root / "f").write_text("x")
    _git(root, "add", "f")
    _git(root, "commit", "-q", "-m", "one")
    return root


def package_repo(root: Path, name: str, sources: list[str]) -> list[str]:
    """A git repository of a setuptools package ``name`` on main: one commit per entry of
    ``sources`` (the package's __init__.py at that commit); their shas, oldest first."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'\n[project]\nname = "{name}"\nversion = "0.1"\n')
    (root / name).mkdir()
    shas = []
    for i, source in enumerate(sources):
        (root / name / "__init__.py").write_text(source)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"revision {i}")
        shas.append(_git(root, "rev-parse", "HEAD"))
    return shas


def torch_env_fast() -> dict[str, str]:
    """Environment variables for a test's asv run that builds a virtualenv with torch: pip
    leaves out the byte-code of the whole wheel (20 of the 30 s an environment's
    requirements take to install here). The environment's processes write the byte-code of
    what they import, once: the suite clears PYTHONDONTWRITEBYTECODE (tests/conftest.py;
    with it set and none installed, every process would compile torch's modules again)."""
    # pip reads a store_false option's variable as the option's own value: "0" is --no-compile
    return {"PIP_NO_COMPILE": "0"}


def track_project(root: Path, commits: int, benches: dict, values, *, machine: str = "m",
                  python: str = "3.11") -> list[str]:
    """An asv project in ``root`` of ``commits`` commits whose track benchmarks (``benches``:
    name -> (unit, params), params [] or one list of parameter reprs) hold ``values(i)`` at
    commit ``i`` (name -> one value per parameter), in environment "e" of ``machine``: the
    projects the analysis tests judge. Its commits, oldest first."""
    from torchpulse.evaluation import project as evaluation_project
    from torchpulse.files import write_json_atomically
    from torchpulse.results import asv_results

    shas = evaluation_project.git_repo(root, commits)
    (root / "asv.conf.json").write_text(json.dumps(evaluation_project.CONF))
    results = root / "results"
    write_json_atomically(results / machine / "machine.json", {"machine": machine, "version": 1})
    write_json_atomically(results / "benchmarks.json", {
        **{name: {"name": name, "params": params, "param_names": ["workload"] if params
                  else [], "type": "track", "unit": unit, "version": "1"}
           for name, (unit, params) in benches.items()}, "version": 2})
    for i, sha in enumerate(shas):
        r = asv_results.new({"machine": machine}, sha, 1_700_000_000_000 + i, python, "e")
        for name, measured in values(i).items():
            asv_results.add(r, name, "1", benches[name][1], measured)
        asv_results.save(r, results, asv_results.filename(machine, sha, "e"))
    return shas
