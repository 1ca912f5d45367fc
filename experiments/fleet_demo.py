#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: docs/measurements.md.
"""A fleet run on two simulated Ray nodes, one of them lost mid-run (what the fleet test
does, printed).

    .venv/bin/python experiments/fleet_demo.py [--commits 5] [--workdir DIR] [--keep-nodes]

A Ray head without a measurement slot and two nodes (sim-a, sim-b) with one each, on this
machine (Ray's cluster_utils); the culprit fixture repository with a second benchmark
module; `torchpulse fleet run` over its range. Unless --keep-nodes, the node that hands back
the first commit is removed at that moment, so its unfinished commits go to the other node.
"""

import argparse
import tempfile
import time
from pathlib import Path

from torchpulse.fleet import driver, plan
from torchpulse.results.project import Project
from torchpulse.testing import fleet_cluster as simulated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep-nodes", action="store_true")
    args = parser.parse_args()
    root = (args.workdir or Path(tempfile.mkdtemp(prefix="fleet-demo-"))) / "repo"
    shas = simulated.fixture(root, args.commits)
    project = Project.load(root / "asv.conf.json")
    with simulated.cluster() as (cluster, nodes):
        run(project, shas, cluster, nodes, args.keep_nodes)


def run(project: Project, shas: list[str], cluster, nodes: dict, keep_nodes: bool) -> None:
    lost: list[str] = []

    def lose_first(item) -> None:
        if not keep_nodes and not lost:
            lost.append(item.machine)
            print(f"(removing node {item.machine})", flush=True)
            cluster.remove_node(nodes[item.machine], allow_graceful=False)

    start = time.perf_counter()
    summary = driver.run(project, plan.plan(project, f"{shas[0]}..{shas[-1]}"),
                         address=cluster.address, machine_class=simulated.CLASS_NAME,
                         say=lambda line: print("torchpulse fleet:", line, flush=True),
                         on_result=lose_first)
    print(f"{summary} in {time.perf_counter() - start:.1f} s; results in "
          f"{project.results_dir}")


if __name__ == "__main__":
    main()
