"""The work of one node: measure a shard's commits with one ``asv run`` over them and hand
each commit's results files back as soon as asv moves on to the next commit.

A node's machine name comes from its Ray resources (``torchpulse_machine_<name>``, given
at ``ray start``), else its host name: each node is its own machine in results/, so series
never mix machines. Its asv environments live under the fleet work directory in a folder
of their own, so that nodes sharing a disk (the simulated ones of the tests) never share
an environment.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.fleet.plan import Shard
from torchpulse.results import asv_process
from torchpulse.results.project import Project
from torchpulse.results.store import check_name

SLOT = "torchpulse"  # one per node: at most one measurement runs on a node at a time
MACHINE = "torchpulse_machine_"  # + the node's asv machine name
CLASS = "torchpulse_class_"  # + a machine class (GPU model) the node belongs to


# asv's line as it starts measuring a commit: "[ 0.00%] · For <project> commit d5d6f24e <main>:",
# with " (round 1/2)" when rounds are interleaved across the commits
_COMMIT_LINE = re.compile(r"· For .* commit ([0-9a-f]{8})\b(?:.*\(round (\d+)/(\d+)\))?")


def commit_line(line: str) -> tuple[str, bool] | None:
    """The commit prefix asv starts measuring on ``line``, and whether this is its final
    round (always, with rounds not interleaved); None for any other line."""
    found = _COMMIT_LINE.search(line)
    if found is None:
        return None
    return found.group(1), found.group(2) is None or found.group(2) == found.group(3)


def final_round_commit(line: str) -> str | None:
    """The commit prefix asv starts measuring on ``line``, when in its final round (a
    commit's files are whole only then): earlier rounds revisit every commit."""
    found = commit_line(line)
    return found[0] if found is not None and found[1] else None


class NodeError(TorchpulseError, RuntimeError):
    """asv failed on a node for a reason the values cannot show."""


@dataclass(frozen=True)
class CommitFiles:
    """One commit of a shard as a node measured it: its results files, relative to a
    results tree (``<machine>/<file>``, ``benchmarks.json``), or ``skipped`` when the
    machine already had them stored."""

    group: str
    commit: str
    machine: str
    files: dict[str, bytes]
    skipped: bool = False


def machine_name(resources: Mapping[str, float], host: str | None = None) -> str:
    """The node's asv machine name: its one ``torchpulse_machine_<name>`` resource, else
    the host name."""
    named = sorted(r[len(MACHINE):] for r in resources if r.startswith(MACHINE))
    if len(named) > 1:
        raise NodeError(f"a node has more than one machine name: {', '.join(named)}")
    name = named[0] if named else (host or platform.node() or "localhost")
    return check_name(name, "machine name")


class Node:
    """asv on this node for one shard: a scratch config and results tree of its own."""

    def __init__(self, config: Path, machine: str, workdir: Path, group: str, bench: str,
                 python: str = sys.executable) -> None:
        self.project = Project.load(config)
        self.machine, self.group, self.bench, self.python = machine, group, bench, python
        self.scratch = (workdir / group).resolve()
        self.results = self.scratch / "results"
        self.config = self.scratch / "asv.conf.json"
        self.log = self.scratch / "asv.log"

    def _environment(self) -> dict[str, str]:
        """asv's environment on this node: its own machine file, in the scratch folder
        (results.asv_process)."""
        return asv_process.environment(self.scratch / "asv-machine.json")

    def _command(self, *args: str) -> list[str]:
        return asv_process.command([args[0], "--config", str(self.config), "--machine",
                                    self.machine, *args[1:]], python=self.python, scratch=True)

    def _asv(self, *args: str) -> subprocess.CompletedProcess[str]:
        return asv_process.run(self._command(*args), env=self._environment(),
                               cwd=self.project.root, capture=True, log=self.log)

    def prepare(self) -> None:
        if self.results.exists():
            shutil.rmtree(self.results)  # a scratch tree of an earlier, unfinished shard
        self.results.mkdir(parents=True)
        settings = self.project.elsewhere(self.results, self.scratch / "html")
        settings["env_dir"] = str(self.scratch.parent / "env")
        self.config.write_text(json.dumps(settings, indent=1))
        proc = self._asv("machine", "--yes")
        if proc.returncode != 0:
            raise NodeError(f"{self.machine}: asv machine failed (log: {self.log})")

    def files(self, commit: str) -> dict[str, bytes]:
        """A commit's results files, with the machine and the benchmark index they need;
        {} when asv stored no result for it."""
        found = sorted(self.results.glob(f"{self.machine}/{commit[:8]}-*.json"))
        if not found:
            return {}
        files = {f"{self.machine}/{p.name}": p.read_bytes() for p in found}
        for extra in (self.results / self.machine / "machine.json",
                      self.results / "benchmarks.json"):
            if extra.is_file():
                files[str(extra.relative_to(self.results))] = extra.read_bytes()
        return files

    def measure(self, commits: Sequence[str]) -> Iterator[tuple[str, dict[str, bytes]]]:
        """One ``asv run`` over ``commits`` (a hash file), as ``asv run RANGE`` measures a
        range: each commit's files are handed on as soon as asv moves to the next commit,
        the last one's when it exits. Commits asv stored nothing for come with {}."""
        hashfile = self.scratch / "commits.txt"
        hashfile.write_text("".join(f"{c}\n" for c in commits))
        command = self._command("run", "--bench", self.bench, "--record-samples",
                                "--interleave-rounds", "--show-stderr", f"HASHFILE:{hashfile}")
        by_prefix = {c[:8]: c for c in commits}
        handed: set[str] = set()
        current: str | None = None
        tail: list[str] = []
        with self.log.open("a") as log:
            log.write(f"$ asv {' '.join(command[3:])}\n")
            with asv_process.started(command, env=self._environment(), cwd=self.project.root,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True) as proc:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    tail = [*tail[-20:], line]
                    started = final_round_commit(line)
                    if started in by_prefix:
                        if current is not None:
                            handed.add(current)
                            yield current, self.files(current)
                        current = by_prefix[started]
                code = proc.wait()
        text = "".join(tail)
        if code not in (0, 2) and "No benchmarks selected" not in text:  # 2: a benchmark
            last = [ln.strip() for ln in tail if ln.strip()][-1:] or ["no output"]  # failed
            raise NodeError(f"{self.machine}: asv failed (exit {code}): "
                            f"{last[0].lstrip('· ')} (log: {self.log})")
        for commit in ([current] if current else []) + list(commits):
            if commit not in handed:
                handed.add(commit)
                yield commit, self.files(commit)


def run_shard(shard: Shard, config: Path, machine: str, workdir: Path) -> Iterator[CommitFiles]:
    """Measure ``shard`` on this node as ``machine``, commit by commit, in
    ``workdir`` (this node's folder: environments in ``env/``, one scratch tree per group);
    commits the machine already has stored are yielded as skipped."""
    stored = shard.stored.get(machine, frozenset())
    for commit in shard.commits:
        if commit in stored:
            yield CommitFiles(shard.group, commit, machine, {}, skipped=True)
    todo = [c for c in shard.commits if c not in stored]
    if not todo:
        return
    node = Node(config, machine, workdir, shard.group, shard.bench)
    node.prepare()
    for commit, files in node.measure(todo):
        yield CommitFiles(shard.group, commit, machine, files)
