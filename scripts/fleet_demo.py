#!/usr/bin/env python
"""A fleet run on two simulated Ray nodes, one of them lost mid-run (what the fleet test
does, printed).

    .venv/bin/python scripts/fleet_demo.py [--commits 5] [--workdir DIR] [--keep-nodes]

A Ray head without a measurement slot and two nodes (sim-a, sim-b) with one each, on this
machine (Ray's cluster_utils); the culprit fixture repository with a second benchmark
module; `torchpulse fleet run` over its range. Unless --keep-nodes, the node that hands back
the first commit is removed at that moment, so its unfinished commits go to the other node.
"""

import argparse
import tempfile
import time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from torchpulse.culprit import fixture
from torchpulse.fleet import driver, plan
from torchpulse.fleet.node import CLASS, MACHINE, SLOT
from torchpulse.results.project import Project

MORE = "import stepwork\n\n\ndef time_more():\n    stepwork.work()\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep-nodes", action="store_true")
    args = parser.parse_args()
    root = (args.workdir or Path(tempfile.mkdtemp(prefix="fleet-demo-"))) / "repo"
    shas = fixture.make(root, args.commits, 2, 2.0)
    (root / "benchmarks" / "bench_more.py").write_text(MORE)
    small = {"object_store_memory": 80 * 1024 * 1024, "num_cpus": 1}
    cluster = Cluster(initialize_head=True, head_node_args={**small, "include_dashboard": False})
    nodes = {name: cluster.add_node(**small, resources={SLOT: 1, MACHINE + name: 1,
                                                        CLASS + "sim": 1})
             for name in ("sim-a", "sim-b")}
    cluster.wait_for_nodes()
    lost: list[str] = []

    def lose_first(item) -> None:
        if not args.keep_nodes and not lost:
            lost.append(item.machine)
            print(f"(removing node {item.machine})", flush=True)
            cluster.remove_node(nodes[item.machine], allow_graceful=False)

    project = Project.load(root / "asv.conf.json")
    start = time.perf_counter()
    try:
        summary = driver.run(project, plan.plan(project, f"{shas[0]}..{shas[-1]}"),
                             address=cluster.address, machine_class="sim",
                             say=lambda line: print("torchpulse fleet:", line, flush=True),
                             on_result=lose_first)
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"{summary} in {time.perf_counter() - start:.1f} s; results in "
          f"{project.results_dir}")


if __name__ == "__main__":
    main()
