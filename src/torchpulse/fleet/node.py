"""The work of one node: measure a shard's commits with asv, one at a time, and hand each
commit's results files back as soon as they exist.

A node's machine name comes from its Ray resources (``torchpulse_machine_<name>``, given
at ``ray start``), else its host name: each node is its own machine in results/, so series
never mix machines. Its asv environments live under the fleet work directory in a folder
of their own, so that nodes sharing a disk (the simulated ones of the tests) never share
an environment.
"""

from __future__ import annotations

import fcntl
import json
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.fleet.plan import Shard
from torchpulse.results.project import Project
from torchpulse.results.store import check_name

SLOT = "torchpulse"  # one per node: at most one measurement runs on a node at a time
MACHINE = "torchpulse_machine_"  # + the node's asv machine name
CLASS = "torchpulse_class_"  # + a machine class (GPU model) the node belongs to


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


@contextmanager
def _machine_file_lock() -> Iterator[None]:
    """asv keeps every machine in ~/.asv-machine.json and rewrites it whole; nodes that share
    a home directory take turns."""
    lock = Path.home() / ".asv-machine.json.torchpulse-lock"
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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

    def _asv(self, *args: str) -> subprocess.CompletedProcess[str]:
        from torchpulse.results.record import asv_environment

        command = [self.python, "-m", "asv", args[0], "--config", str(self.config),
                   "--machine", self.machine, *args[1:]]
        proc = subprocess.run(command, cwd=self.project.root, env=asv_environment(),
                              capture_output=True, text=True, check=False)
        with self.log.open("a") as out:
            out.write(f"$ {' '.join(command)}\n{proc.stdout}{proc.stderr}\n")
        return proc

    def prepare(self) -> None:
        if self.results.exists():
            shutil.rmtree(self.results)  # a scratch tree of an earlier, unfinished shard
        self.results.mkdir(parents=True)
        settings = self.project.elsewhere(self.results, self.scratch / "html")
        settings["env_dir"] = str(self.scratch.parent / "env")
        self.config.write_text(json.dumps(settings, indent=1))
        with _machine_file_lock():
            proc = self._asv("machine", "--yes")
        if proc.returncode != 0:
            raise NodeError(f"{self.machine}: asv machine failed (log: {self.log})")

    def measure(self, commit: str) -> dict[str, bytes]:
        """One commit's results files; {} when the selection holds no benchmark here."""
        for old in self.results.glob(f"{self.machine}/*.json"):
            if old.name != "machine.json":
                old.unlink()
        proc = self._asv("run", "--bench", self.bench, "--record-samples",
                         "--show-stderr", f"{commit}^!")
        text = proc.stdout + proc.stderr
        if proc.returncode not in (0, 2):  # 2: a benchmark failed, which its value shows
            if "No benchmarks selected" in text:
                return {}
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise NodeError(f"{self.machine}: asv failed at {commit[:12]} (exit "
                            f"{proc.returncode}): {tail[0].lstrip('· ')} (log: {self.log})")
        files = {}
        for path in sorted(self.results.glob(f"{self.machine}/*.json")):
            files[f"{self.machine}/{path.name}"] = path.read_bytes()
        index = self.results / "benchmarks.json"
        if index.is_file():
            files["benchmarks.json"] = index.read_bytes()
        return files if len(files) > 2 else {}  # machine.json and the index alone: nothing


def run_shard(shard: Shard, config: Path, machine: str, workdir: Path) -> Iterator[CommitFiles]:
    """Measure ``shard`` on this node as ``machine``, commit by commit, oldest first, in
    ``workdir`` (this node's folder: environments in ``env/``, one scratch tree per group);
    commits the machine already has stored are yielded as skipped."""
    node = Node(config, machine, workdir, shard.group, shard.bench)
    prepared = False
    for commit in shard.commits:
        if commit in shard.stored.get(machine, frozenset()):
            yield CommitFiles(shard.group, commit, machine, {}, skipped=True)
            continue
        if not prepared:
            node.prepare()
            prepared = True
        yield CommitFiles(shard.group, commit, machine, node.measure(commit))
