"""``torchpulse fleet run``: shards of a range measured on Ray nodes, merged into results/.

Ray schedules; torchpulse decides what a shard is (``plan``) and what a node does
(``node``). Each shard is one Ray generator task that needs the node's one measurement slot
(the ``torchpulse`` resource, which nothing else asks for), so a node measures one thing at a
time. The task yields each commit's results files as soon as asv wrote them; the driver merges
each into the results tree with ``torchpulse merge``'s all-or-nothing merge, so a driver
killed at any moment leaves only whole commits behind, and a re-run skips them. A node lost
mid-shard costs its unfinished commits only: they go back to the queue as a new shard.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchpulse.errors import TorchpulseError
from torchpulse.fleet.node import CLASS, MACHINE, SLOT, CommitFiles, machine_name, run_shard
from torchpulse.fleet.plan import Shard
from torchpulse.results.merge import merge_trees
from torchpulse.results.project import Project
from torchpulse.results.store import StoreError, check_name

MAX_ATTEMPTS = 3  # a shard whose nodes keep dying is given up after this many


class FleetError(TorchpulseError, ValueError):
    """No node can take the work, or results that cannot be merged."""


@dataclass
class FleetSummary:
    measured: int = 0  # (group, commit) pairs measured and merged
    skipped: int = 0  # already stored for the machine that would measure them
    empty: int = 0  # the selection held no benchmark of the group at that commit
    requeued: int = 0  # commits handed to another node after theirs was lost
    failed: list[str] = field(default_factory=list)  # shards given up, and why
    machines: set[str] = field(default_factory=set)


def _shard_task(shard: Shard, config: str, workdir: str, machine: str | None
                ) -> Iterator[CommitFiles]:
    """Runs on a node: its machine name from its resources (or the class's, given), then
    the shard's commits one by one. Its scratch folders are named after the node itself,
    so nodes of one class that share a disk never share a folder."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    resources = next(n["Resources"] for n in ray.nodes() if n["NodeID"] == node_id)
    own = machine_name(resources)
    yield from run_shard(shard, Path(config), machine or own, Path(workdir) / own)


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """FleetError unless something listens at ``address`` (HOST:PORT, or ray://HOST:PORT):
    Ray itself retries an absent head for minutes. "auto" is Ray's to resolve."""
    if address == "auto":
        return
    where = address.split("://", 1)[-1]
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise FleetError(f"--address {address!r}: expected HOST:PORT (ray start --head "
                         "prints it) or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise FleetError(f"--address {address}: nothing answers there "
                         f"({exc.strerror or exc})") from None


def connect(address: str | None, machine: str) -> None:
    """Join the Ray cluster at ``address``, or start an embedded one on this machine with
    one measurement slot, named ``machine``."""
    import ray

    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": "ERROR"}
    if address:
        check_reachable(address)
        try:
            ray.init(address=address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise FleetError(f"--address {address}: cannot join the Ray cluster "
                             f"({str(exc).splitlines()[0] if str(exc) else exc})") from None
    else:
        # "local": a new instance, even where a Ray cluster already runs on this machine
        # (without it, ray.init joins that cluster and refuses the resources given here)
        ray.init(address="local", num_cpus=max(1, os.cpu_count() or 1),
                 include_dashboard=False, resources={SLOT: 1, MACHINE + machine: 1}, **quiet)
    # after ray.init, which installs a SIGTERM handler that aborts: a terminated driver
    # stops as an interrupted one, shutting Ray down, with only whole commits stored
    # (SIGKILL cannot be caught; a re-run completes the range)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _check_capacity(machine_class: str | None) -> None:
    import ray

    resources = ray.cluster_resources()
    if resources.get(SLOT, 0) < 1:
        raise FleetError(f"no node of the Ray cluster offers a measurement slot: start "
                         f"each node with --resources '{{\"{SLOT}\": 1}}' (README, \"Running "
                         "on a fleet\")")
    if machine_class and resources.get(CLASS + machine_class, 0) <= 0:
        classes = sorted(r[len(CLASS):] for r in resources if r.startswith(CLASS))
        raise FleetError(f"--machine-class {machine_class}: no node carries it (classes: "
                         f"{', '.join(classes) or 'none'})")


def _merge(item: CommitFiles, results_dir: Path) -> None:
    """One commit's files into the results tree, all or nothing."""
    results_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".fleet-", dir=results_dir.parent))
    try:
        for rel, data in item.files.items():
            target = scratch / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        summary = merge_trees([scratch], results_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if summary.conflicts:
        raise FleetError(f"{item.group} at {item.commit[:12]} on {item.machine} not stored: "
                         f"{summary.conflicts[0]}")


def split_by_commit(shards: list[Shard]) -> list[Shard]:
    """For a class of identical machines (the user says so): every (group, commit) its own
    shard, so that the class's nodes share a range."""
    return [Shard(s.group, (c,), s.bench, s.stored) for s in shards for c in s.commits]


def run(project: Project, shards: list[Shard], *, address: str | None = None,
        machine_class: str | None = None, identical: bool = False,
        local_machine: str | None = None, workdir: Path | None = None,
        say: Callable[[str], None] = lambda _line: None,
        on_result: Callable[[CommitFiles], None] | None = None) -> FleetSummary:
    """Measure ``shards`` on the cluster at ``address`` (None: an embedded one), each result
    merged into ``project.results_dir`` as it arrives. With ``identical`` (needs a
    ``machine_class``) the class's nodes are one machine named after it and commits are
    spread over them."""
    import ray

    # absolute: asv reads a config's paths relative to where the config is
    workdir = (workdir or project.root / ".asv" / "fleet").resolve()
    local = local_machine or machine_name({})
    if identical and not machine_class:
        raise FleetError("--identical needs --machine-class: only a class can say its "
                         "machines are the same")
    if machine_class is not None:  # a resource name, and with --identical a machine name
        check_name(machine_class, "--machine-class")
    connect(address, local)
    try:
        _check_capacity(machine_class)
        task = ray.remote(num_cpus=0, max_retries=0)(_shard_task)
        needs = {SLOT: 1}
        if machine_class:
            needs[CLASS + machine_class] = 0.001
        forced = machine_class if identical else None
        queue = split_by_commit(shards) if identical else list(shards)
        return _drive(task, needs, queue, str(project.config.resolve()), str(workdir),
                      forced, project.results_dir, say, on_result)
    finally:
        ray.shutdown()


def _drive(task: Any, needs: dict[str, float], queue: list[Shard], config: str,
           workdir: str, forced: str | None, results_dir: Path,
           say: Callable[[str], None],
           on_result: Callable[[CommitFiles], None] | None) -> FleetSummary:
    import ray
    from ray.exceptions import RayError, RayTaskError

    summary = FleetSummary()
    total = sum(len(s.commits) for s in queue)
    pending: dict[Any, tuple[Shard, list[str], int]] = {}

    def submit(shard: Shard, attempt: int) -> None:
        gen = task.options(resources=needs).remote(shard, config, workdir, forced)
        pending[gen] = (shard, [], attempt)

    for shard in queue:
        submit(shard, 1)
    seen = 0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        gen = ready[0]
        shard, done, attempt = pending[gen]
        try:
            item: CommitFiles = ray.get(next(gen))
        except StopIteration:
            del pending[gen]
            continue
        except RayTaskError as exc:  # asv itself failed on the node: another try would too
            del pending[gen]
            reason = str(exc.cause) if exc.cause is not None else str(exc).splitlines()[0]
            summary.failed.append(f"{shard.group}: {reason}")
            say(f"{shard.group} failed: {reason}")
            continue
        except RayError as exc:  # the node or its worker died: the rest goes elsewhere
            del pending[gen]
            rest = shard.rest(done)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
            if not rest.commits:
                continue
            if attempt >= MAX_ATTEMPTS:
                summary.failed.append(f"{shard.group}: lost {attempt} nodes ({first})")
                say(f"{shard.group} given up after {attempt} lost nodes")
                continue
            summary.requeued += len(rest.commits)
            say(f"a node running {shard.group} was lost ({type(exc).__name__}); "
                f"{len(rest.commits)} unfinished commit(s) queued again")
            submit(rest, attempt + 1)
            continue
        done.append(item.commit)
        seen += 1
        summary.machines.add(item.machine)
        where = f"[{seen}/{total}] {item.group} @ {item.commit[:8]} on {item.machine}"
        if item.skipped:
            summary.skipped += 1
            say(f"{where}: already stored")
        elif not item.files:
            summary.empty += 1
            say(f"{where}: nothing selected")
        else:
            try:
                _merge(item, results_dir)
            except StoreError as exc:
                raise FleetError(str(exc)) from None
            summary.measured += 1
            say(f"{where}: stored")
        if on_result is not None:
            on_result(item)
    return summary
