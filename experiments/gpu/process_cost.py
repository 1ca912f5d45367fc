"""Where a per-process benchmark's seconds go on a GPU (docs/gpu.md, "Where the time goes").

Before bench_gpu, asv measured each CUDA (benchmark, parameter) in a process of its own, twice
(two rounds): forked from a parent that had imported torch and the suites, the child made its
CUDA context, built its model, warmed it up and took 4-10 samples. This script does the same
without asv, one forked child a workload, and times each phase in the child:

    python experiments/gpu/process_cost.py [--device cuda] [--preset cuda] [WORKLOAD ...]

It prints one JSON line a workload and a table; ``--import-only`` also times a cold
``python -c 'import torch'`` (what a spawned, not forked, process pays first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT = ["rnns/cudnn/forward", "rnns/jit/backward", "cnns/resnet18/forward",
           "cnns/resnet50/backward", "autograd/resnet18/vjp"]
SAMPLES = 10  # what one round of the per-process suites took at most


def child(name: str, device: str, preset: str) -> dict:
    import torch

    from torchpulse import sizes
    from torchpulse.timing import RegionClock
    from torchpulse.workloads.regions import build

    phases = {}

    def timed(phase, fn):
        start = time.perf_counter()
        out = fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        phases[phase] = time.perf_counter() - start
        return out

    if device.startswith("cuda"):
        timed("cuda context", lambda: torch.zeros(1, device=device))

    def libraries():
        x = torch.randn(64, 64, device=device, requires_grad=True)
        conv = torch.nn.Conv2d(3, 8, 3).to(device)
        ((x @ x).sum() + conv(torch.randn(1, 3, 16, 16, device=device)).sum()).backward()

    timed("cublas and cudnn", libraries)
    from torchpulse.gpu.measure import sizes_at
    tables = sizes_at(sizes.by_preset(), preset)
    region = timed("build", lambda: build(name, tables, device, preset))

    def warm():
        for _ in range(region.settle):
            region.run()

    timed("warm-up", warm)
    clock = RegionClock(device)
    samples = []

    def sample():
        for _ in range(SAMPLES):
            before = clock()
            region.run(clock)
            samples.append(clock() - before)

    timed(f"{SAMPLES} samples", sample)
    return {"workload": name, "phases": phases, "median_s": sorted(samples)[SAMPLES // 2]}


def forked(name: str, device: str, preset: str) -> dict:
    read, write = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: what asv's forkserver child did
        os.close(read)
        try:
            out = child(name, device, preset)
        except Exception as exc:  # noqa: BLE001
            out = {"workload": name, "error": repr(exc)}
        with os.fdopen(write, "w") as f:
            f.write(json.dumps(out))
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    out = json.loads(text)
    out["process_s"] = time.perf_counter() - start
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", default=DEFAULT)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--preset", default="cuda")
    parser.add_argument("--import-only", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    cold = time.perf_counter() - start
    print(json.dumps({"cold import torch (s)": cold}))
    if args.import_only:
        return 0
    # the parent, as asv's forkserver: torch and the package imported, CUDA untouched
    start = time.perf_counter()
    import torch  # noqa: F401

    import torchpulse.autograd.run  # noqa: F401
    import torchpulse.fastrnns.runners  # noqa: F401
    print(json.dumps({"parent imports (s)": time.perf_counter() - start}))
    rows = []
    for name in args.workloads:
        row = forked(name, args.device, args.preset)
        print(json.dumps(row), flush=True)
        rows.append(row)
    phases = [p for p in rows[0].get("phases", {})]
    print(f"\n{'workload':28} " + " ".join(f"{p:>16}" for p in phases) + f" {'process':>9}")
    for row in rows:
        if "error" in row:
            print(f"{row['workload']:28} {row['error']}")
            continue
        print(f"{row['workload']:28} " + " ".join(f"{row['phases'].get(p, 0):16.3f}"
                                                   for p in phases)
              + f" {row['process_s']:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
