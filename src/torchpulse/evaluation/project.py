"""The asv project both families of evaluate-detection are written as: a git repository of
fixed commits, an asv.conf.json, and asv's results files (through results/asv_results.py),
which ``torchpulse alert``, asv and Otava then read like any other project's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from torchpulse.files import write_json_atomically
from torchpulse.results import asv_results

MACHINE = "synthetic"
ENV = "synthetic"
JOB_SECONDS = 1.0  # what each benchmark's asv job is said to have taken
CONF = {
    "version": 1, "project": "synthetic", "repo": ".", "branches": ["main"], "dvcs": "git",
    "environment_type": "virtualenv", "benchmark_dir": "benchmarks",
    "results_dir": "results", "html_dir": "html",
}
MACHINE_INFO = {"machine": MACHINE, "arch": "x86_64", "cpu": "synthetic", "num_cpu": "2",
                "os": "Linux", "ram": "1", "version": 1}

# a benchmark's values at one commit: (name, one value per series, samples per series)
Rows = Iterable[tuple[str, list[float | None], list[list[float] | None]]]


def git_repo(path: Path, commits: int) -> list[str]:
    """A repository of ``commits`` empty commits on main, the same hashes on every machine
    (fixed committer and times); their hashes, oldest first."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream = []
    for i in range(commits):
        message = f"synthetic commit {i}\n"
        stream.append(f"commit refs/heads/main\nmark :{i + 1}\n"
                      f"committer Synthetic <synthetic@example.invalid> {1_700_000_000 + i * 3600}"
                      f" +0000\ndata {len(message)}\n{message}")
        if i:
            stream.append(f"from :{i}\n")
        stream.append("\n")
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"],
                   input="".join(stream), text=True, check=True)
    return history(path)


def history(path: Path) -> list[str]:
    """The project's commits, oldest first."""
    out = subprocess.run(["git", "-C", str(path), "rev-list", "--reverse", "main"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def declare(params: Sequence[str], kind: str, unit: str) -> dict:
    """A benchmark of one parameter, ``series``, as asv's benchmarks.json declares it."""
    return {"params": [list(params)], "param_names": ["series"], "type": kind, "unit": unit,
            "version": "1", "code": "", "timeout": 60.0}


def write(path: Path, shas: Sequence[str], benchmarks: dict[str, dict],
          rows: Callable[[int], Rows], truths: Sequence[object]) -> None:
    """The project in ``path`` (whose repository holds ``shas``): its config, machine and
    ``benchmarks`` (name: ``declare``), one results file a commit holding ``rows(c)``, and
    the truth (dataclasses) in ``truth.json`` beside the results, where no detector looks."""
    (path / "asv.conf.json").write_text(json.dumps(CONF, indent=2) + "\n")
    results_dir = path / "results"
    write_json_atomically(results_dir / MACHINE / "machine.json", MACHINE_INFO)
    declared = {name: {"name": name, **b} for name, b in benchmarks.items()}
    write_json_atomically(results_dir / "benchmarks.json", {**declared, "version": 2})
    params = {k: v for k, v in MACHINE_INFO.items() if k != "version"} | {"python": "3.11"}
    for c, sha in enumerate(shas):
        results = asv_results.new(params, sha, (1_700_000_000 + c * 3600) * 1000, "3.11", ENV)
        for name, values, samples in rows(c):
            asv_results.add(results, name, "1", declared[name]["params"], values, samples,
                            duration=JOB_SECONDS)
        asv_results.save(results, results_dir, asv_results.filename(MACHINE, sha, ENV))
    (path / "truth.json").write_text(json.dumps([asdict(t) for t in truths]) + "\n")
