"""What a fleet run measures: the commits of a range, the benchmark groups it shards by, and
what is already stored (so a re-run skips it).

A shard is one benchmark group (a top-level module of the benchmark directory, as asv names
it) over every commit of the range. It runs on one node from start to end, so each series
is measured by one machine; only a node lost mid-shard hands its unfinished commits to
another. Standard library and torchpulse.results only: the driver plans before Ray starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results import asv_results
from torchpulse.results.external import SUITE_DIR
from torchpulse.results.gitrepo import GitError, first_parent_commits
from torchpulse.results.project import Project


class PlanError(TorchpulseError, ValueError):
    """A range without commits, a selection without groups, a bad expression."""


@dataclass(frozen=True)
class Shard:
    group: str  # top-level benchmark module: bench_rnns
    commits: tuple[str, ...]  # full shas, oldest first, still to measure
    bench: str  # the asv --bench expression: this group, narrowed by the user's
    # machine -> commits already stored for this group (a node skips its own)
    stored: dict[str, frozenset[str]]

    def rest(self, done: Iterable[str]) -> Shard:
        """This shard without the commits in ``done``."""
        gone = set(done)
        return Shard(self.group, tuple(c for c in self.commits if c not in gone), self.bench,
                     self.stored)


def commits(project: Project, spec: str) -> list[str]:
    """The first-parent commits of an asv-style range (``A..B``, ``C^!``, a branch: its
    whole history), oldest first."""
    if spec.startswith("-"):
        raise PlanError(f"range {spec!r}: not a revision range")
    try:
        found = first_parent_commits(project.local_repo(), spec)
    except GitError as exc:
        raise PlanError(f"range {spec!r}: {exc}") from None
    if not found:
        raise PlanError(f"range {spec!r} holds no commits")
    return found


def groups(benchmark_dir: Path) -> list[str]:
    """The top-level benchmark modules asv discovers there (files and packages whose names do
    not start with an underscore), except the stubs of imported results."""
    found = []
    for path in sorted(benchmark_dir.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith(("_", ".")) or name == SUITE_DIR:
            continue
        if path.suffix == ".py" or (path / "__init__.py").is_file():
            found.append(name)
    return found


def bench_expression(group: str, user: str | None) -> str:
    """asv --bench for the benchmarks of ``group`` that ``user`` (a regular expression asv
    searches in each name) also selects: both must hold, so a lookahead carries the first."""
    own = rf"^(?={re.escape(group)}\.)"
    return own if not user else f"{own}(?=.*?(?:{user}))"


def stored(results_dir: Path, groups: list[str]) -> dict[str, dict[str, frozenset[str]]]:
    """group -> machine -> the commits whose results files there hold a benchmark of the
    group; each results file is read once."""
    found: dict[str, dict[str, set[str]]] = {g: {} for g in groups}
    for path in sorted(results_dir.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            results = asv_results.load(path)
        except asv_results.ResultsFileError:
            continue  # not ours to judge here; asv publish says what is wrong with it
        held = {name.split(".", 1)[0] for name in asv_results.benchmarks(results)}
        for group in held & found.keys():
            found[group].setdefault(path.parent.name, set()).add(results.commit_hash)
    return {g: {machine: frozenset(shas) for machine, shas in by_machine.items()}
            for g, by_machine in found.items()}


def plan(project: Project, spec: str, bench: str | None = None) -> list[Shard]:
    """One shard per benchmark group over the commits of ``spec``."""
    if bench is not None:
        try:
            re.compile(bench)
        except re.error as exc:
            raise PlanError(f"--bench {bench!r}: not a regular expression ({exc})") from None
    shas = tuple(commits(project, spec))
    benchmark_dir = project.root / str(project.settings.get("benchmark_dir") or "benchmarks")
    if not benchmark_dir.is_dir():
        raise PlanError(f"{benchmark_dir}: no benchmark directory")
    names = groups(benchmark_dir)
    if not names:
        raise PlanError(f"{benchmark_dir}: no benchmark modules")
    held = stored(project.results_dir, names)
    return [Shard(g, shas, bench_expression(g, bench), held[g]) for g in names]
