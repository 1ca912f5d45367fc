"""The process callgrind runs: builds each workload, warms it up with collection off and
counts its region ``repeats`` times, one callgrind dump per region.

    python -m torchpulse.instructions.worker SPEC.json MANIFEST.json

SPEC (written by instructions.count): workloads, repeats, the sizes table, the helper's path.
MANIFEST: the workload of each dump in order, and the workloads that failed with their error.
Counting starts only once a workload is built and warm: the builds, the TorchScript
optimisations and the first calls (which pay for valgrind's translations) are never counted.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from torchpulse.instructions.family import split

# Calls before the counted ones. Python 3.11 quickens a function after its first few calls and
# specialises its instructions as they run: a count taken earlier includes that work.
EXTRA_WARMUP = 3


def _fastrnns(runner: str, region: str, table: dict) -> Callable:
    from torchpulse.fastrnns.runners import RUNNERS, Workload
    from torchpulse.presets import Preset

    workload = Workload(RUNNERS[runner], Preset.from_sizes("instructions", table), "cpu")
    if region == "forward":
        return lambda clock=None: workload.forward(clock)
    if region == "backward":
        if workload.runner.forward_only:
            raise ValueError(f"{runner} has no backward")
        return lambda clock=None: workload.step(backward_clock=clock)
    raise ValueError(f"unknown region {region!r}")


def _autograd(model: str, task: str, rows: dict) -> Callable:
    import torch

    from torchpulse.autograd.models import BY_NAME, is_supported
    from torchpulse.autograd.run import Prepared
    from torchpulse.presets import DEFAULT_SEED

    if not is_supported(model, task):
        raise ValueError(f"{model} does not run {task}")
    sized = dataclasses.replace(BY_NAME[model], sizes={"instructions": rows[model]})
    prepared = Prepared(sized, task, torch.device("cpu"), "instructions", DEFAULT_SEED)

    def counted(clock=None):
        gc.collect()
        if clock is None:
            prepared.call()
            return
        with clock.region():
            prepared.call()

    return counted


def build(name: str, tables: dict) -> tuple[Callable, int]:
    """(run(clock), warm-up calls) of a workload; ValueError for a name this package lacks."""
    family, what, region = split(name)
    if family in ("rnns", "cnns"):
        from torchpulse.fastrnns.runners import RUNNERS

        if what not in RUNNERS or RUNNERS[what].family != family:
            raise ValueError(f"runner {what!r} is not in this version of torchpulse")
        run = _fastrnns(what, region, tables["fastrnns"])
        return run, RUNNERS[what].settle_iterations + EXTRA_WARMUP
    if family == "autograd":
        run = _autograd(what, region, tables["autograd"])
        return run, 1 + EXTRA_WARMUP
    raise AssertionError(family)  # split() admits no other


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
