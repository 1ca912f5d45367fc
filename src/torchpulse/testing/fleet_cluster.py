"""A fleet on this one machine: Ray nodes simulated with Ray's cluster utilities, and the
culprit fixture repository with a second benchmark group, for the fleet's tests and
``experiments/fleet_demo.py``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torchpulse.fleet.node import CLASS, MACHINE, SLOT
from torchpulse.testing import culprit_repo as culprit_fixture

CLASS_NAME = "sim"  # the machine class every simulated node carries
SECOND_GROUP = '''import stepwork


def time_more():
    stepwork.work()


time_more.repeat = 3
time_more.number = 1
'''


def fixture(root: Path, commits: int) -> list[str]:
    """The culprit fixture (pure Python, no torch; its step at commit 2) with a second
    benchmark module, ``bench_more``, beside ``bench_work``; the shas, oldest first."""
    shas = culprit_fixture.make(root, commits, 2, 2.0)
    (root / "benchmarks" / "bench_more.py").write_text(SECOND_GROUP)
    return shas


@contextmanager
def cluster(names: Sequence[str] = ("sim-a", "sim-b")) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A Ray head without a measurement slot and one node per name with one slot, that
    machine name and the class ``sim``: (the cluster, name -> node)."""
    import ray
    from ray.cluster_utils import Cluster

    small = {"object_store_memory": 80 * 1024 * 1024, "num_cpus": 1}
    made = Cluster(initialize_head=True, head_node_args={**small, "include_dashboard": False})
    try:
        nodes = {name: made.add_node(**small, resources={SLOT: 1, MACHINE + name: 1,
                                                         CLASS + CLASS_NAME: 1})
                 for name in names}
        made.wait_for_nodes()
        yield made, nodes
    finally:
        ray.shutdown()
        made.shutdown()
