"""The process callgrind runs: builds each workload, warms it up with collection off and
counts its region ``repeats`` times, one callgrind dump per region.

    python -m torchpulse.instructions.worker SPEC.json MANIFEST.json

SPEC (written by instructions.count): workloads, repeats, the sizes table, the helper's path.
MANIFEST: the workload of each dump in order, and the workloads that failed with their error.
Counting starts only once a workload is built and warm: the builds, the TorchScript
optimisations and the first calls (which pay for valgrind's translations) are never counted.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

# Calls before the counted ones. Python 3.11 quickens a function after its first few calls and
# specialises its instructions as they run: a count taken earlier includes that work.
EXTRA_WARMUP = 3


def build(name: str, tables: dict) -> tuple[Callable, int]:
    """(run(clock), warm-up calls) of a workload, built afresh on the CPU at ``tables``
    (sizes.INSTRUCTIONS); ValueError for a name this package lacks."""
    from torchpulse.workloads import build as build_region

    region = build_region(name, tables, "cpu", "instructions")
    return region.run, region.settle + EXTRA_WARMUP


def main(spec_path: str, manifest_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    import torch

    from torchpulse.instructions.client import CountedRegion, start_instrumentation

    torch.set_num_threads(1)
    start_instrumentation(spec.get("helper"))
    counted = CountedRegion()
    dumps: list[str] = []
    failed: dict[str, str] = {}
    for name in spec["workloads"]:
        torch.manual_seed(0)
        try:
            run, warmup = build(name, spec["tables"])
            for _ in range(warmup):
                run()
            for _ in range(spec["repeats"]):
                before = counted.regions
                run(counted)
                dumps.extend([name] * (counted.regions - before))
        except Exception as exc:  # noqa: BLE001 (one workload's failure is its own)
            failed[name] = "".join(traceback.format_exception_only(exc)).strip()
        print(f"counted {name}", file=sys.stderr, flush=True)
    Path(manifest_path).write_text(json.dumps({"dumps": dumps, "failed": failed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
