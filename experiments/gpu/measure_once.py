"""One process of the GPU suite's measurement (torchpulse.gpu.measure), as bench_gpu's
setup_cache runs it for a commit, written to a JSON file or appended to a JSON-lines file
with a label; history.py turns several into an asv history and judges it (experiments/diary/gpu.md).

    python experiments/gpu/measure_once.py OUT.json|OUT.jsonl [--label L] [--device cuda]
        [--preset cuda] [--workloads default|all|'rnns/*,cnns/*'] [--rows ROWS.jsonl]
        [--set PROFILED_CALLS=5 ...] [--pin 3]

``--rows`` appends each workload's figures as a line the moment it is measured, so a process
cut short by its time cap still leaves what it measured. ``--set`` changes one of
torchpulse.gpu.measure's sample counts for this process (an experiment on what they cost);
``--pin`` keeps the process (and the threads it starts) on the CPUs given (``3`` or ``2,3``),
to see whether the host CPU a process lands on is what moves its wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--label", default="")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--preset", default="cuda")
    parser.add_argument("--workloads", default="",
                        help="default, all or comma-separated shell patterns (bench_gpu's)")
    parser.add_argument("--rows", default="", help="a JSON-lines file: a line a workload")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a sample count of torchpulse.gpu.measure for this process")
    parser.add_argument("--pin", default="", help="CPUs to keep the process on: 3 or 2,3")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {int(c) for c in args.pin.split(",")})
    start = time.perf_counter()
    from torchpulse import sizes
    from torchpulse.autograd import choices as autograd
    from torchpulse.fastrnns import choices as fastrnns
    from torchpulse.gpu import measure as measuring
    from torchpulse.gpu.measure import measure
    from torchpulse.workloads import registry

    changed = {}
    for setting in args.set:
        key, _, value = setting.partition("=")
        if not isinstance(getattr(measuring, key, None), int | float):
            parser.error(f"--set {setting}: no such sample count in torchpulse.gpu.measure")
        changed[key] = type(getattr(measuring, key))(value)
        setattr(measuring, key, changed[key])

    names = registry.gpu_selected(registry.workloads(fastrnns, autograd), args.workloads)
    from torchpulse.gpu.measure import sizes_at
    tables = sizes_at(sizes.by_preset(), args.preset)
    imported = time.perf_counter() - start

    def each(name: str, row: dict) -> None:
        if args.rows:
            with open(args.rows, "a") as f:
                f.write(json.dumps({"label": args.label, "workload": name, **row,
                                    "at_s": time.perf_counter() - start}) + "\n")

    out = measure(names, tables, args.device, args.preset,
                  log=lambda line: print(line, file=sys.stderr, flush=True), each=each)
    out["phases"]["imports"] = imported
    import torch

    if torch.cuda.is_available():
        # what the caching allocator holds at the end (the memory figure resets the peaks
        # before each workload's call, so the peaks here would be the last workload's)
        out["memory"] = {"reserved at the end": torch.cuda.memory_reserved(),
                         "allocated at the end": torch.cuda.memory_allocated()}
        print(f"GPU memory: {out['memory']}", file=sys.stderr)
    out["process_s"] = time.perf_counter() - start
    out["label"] = args.label
    out["settings"] = changed
    out["pinned"] = sorted(os.sched_getaffinity(0)) if args.pin else None
    if args.out.endswith(".jsonl"):
        with open(args.out, "a") as f:
            f.write(json.dumps(out) + "\n")
    else:
        with open(args.out, "w") as f:
            json.dump(out, f)
    print(json.dumps({k: round(v, 2) for k, v in out["phases"].items()}), file=sys.stderr)
    print(f"{len(out['workloads'])} measured, {len(out['failed'])} failed, "
          f"{out['process_s']:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
