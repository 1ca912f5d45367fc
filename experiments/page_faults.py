#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: docs/measurements.md.
"""Page faults and time a call of some cpu-preset workloads, with glibc's defaults and with
freed memory kept in the process (torchpulse/allocation.py), each case in a fresh process:

    .venv/bin/python experiments/page_faults.py [--calls 12]

Prints, per workload and mode, the median time of a call and the median minor page faults
of a call, after two untimed calls.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TORCHPULSE_PRESET", "cpu")
WORKLOADS = [("autograd", "resnet18", "vjp"), ("autograd", "deepspeech", "vjp"),
             ("autograd", "transformer", "vhp"), ("autograd", "resnet18", "jvp"),
             ("fastrnns", "vl_py", "step"), ("fastrnns", "jit", "step"),
             ("fastrnns", "cudnn", "step"), ("fastrnns", "resnet18", "step"),
             ("fastrnns", "resnet50", "forward")]


def measure(mode, kind, name, what, calls):
    from torchpulse import allocation, sizes, suite

    if mode == "kept":
        allocation.keep_freed_memory()
    if kind == "autograd":
        call = suite.autograd_task(name, what, sizes.AUTOGRAD).call
    else:
        family = "cnns" if name.startswith("resnet") else "rnns"
        built = suite.workload(name, family, sizes.FASTRNNS)
        suite.warm_up(built, what)
        call = built.forward if what == "forward" else built.step
    call()
    call()
    times, faults = [], []
    for _ in range(calls):
        start = time.perf_counter()
        faults.append(allocation.page_faults(call))
        times.append(time.perf_counter() - start)
    print(f"{name + ' ' + what:20s} {mode:6s} {statistics.median(times) * 1e3:8.2f} ms "
          f"{statistics.median(faults):8.0f} faults a call", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)  # mode kind name what
    args = parser.parse_args()
    if args.one:
        measure(*args.one, args.calls)
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    for kind, name, what in WORKLOADS:
        for mode in ("glibc", "kept"):
            subprocess.run([sys.executable, __file__, "--calls", str(args.calls),
                            "--one", mode, kind, name, what], env=env, check=True)


if __name__ == "__main__":
    main()
