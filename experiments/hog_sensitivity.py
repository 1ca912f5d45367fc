#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""How much one busy core slows the machine canary (at 1 and 2 torch threads) and a few
single-threaded workloads, each timed in a process forked the way asv's forkserver does.

    .venv/bin/python experiments/hog_sensitivity.py [--rounds 2] [--hog cpu memory]

Prints the median per case idle and next to each hog, and their ratio: ``cpu`` is a
``while True: pass`` process, ``memory`` one that streams 256 MB arrays (memory bandwidth
and the shared cache, as a neighbour on the same host would take them). The "memory stream"
case is a candidate canary for the latter: one thread copying 32 MB tensors.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TORCHPULSE_PRESET", "cpu")


import benchmarks._common  # noqa: E402,F401  (the forkserver parent's warm-up)
from benchmarks import (  # noqa: E402
    _canary,  # noqa: E402
    bench_autograd,
    bench_cnns,
    bench_rnns,
)


def canary(threads):
    return _canary.reading(threads, samples=10, warmup=3)


def workload(cls, runner, method):
    b = cls()
    b.setup(runner)
    getattr(b, method)(runner)  # its warm-up
    times = []
    for _ in range(8):
        start = b.clock()
        b.setup(runner)
        getattr(b, method)(runner)
        times.append(b.clock() - start)
    return statistics.median(times)


def median_time(fn, calls, skip=0):
    """The median wall time of ``calls`` calls of ``fn`` after ``skip`` untimed ones."""
    for _ in range(skip):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stream_copies():
    """A candidate canary for the memory system: one thread copying 32 MB tensors (past this
    VM's share of the last-level cache). Returns the call to time, its buffers allocated."""
    import torch

    torch.set_num_threads(1)
    x = torch.ones(8 << 20)
    y = torch.empty_like(x)

    def stream():
        for _ in range(4):
            y.copy_(x)
            x.add_(1e-3)

    return stream


def memory_stream():
    return median_time(stream_copies(), 10, skip=2)  # the first two touch the pages


def autograd_pair(model, task):
    b = bench_autograd.FunctionalAutograd()
    b.setup(model, task)  # built and warmed up
    return median_time(lambda: b.time_task(model, task), 8)


HOGS = {
    "cpu": "while True: pass",
    "memory": "import numpy as np\na = np.ones(32 << 20)\nb = np.empty_like(a)\n"
              "while True: np.copyto(b, a)",
}

CASES = {
    "canary, 2 threads": lambda: canary(2),
    "canary, 1 thread": lambda: canary(1),
    "memory stream": memory_stream,
    "resnet18 vjp": lambda: autograd_pair("resnet18", "vjp"),
    "LSTM cudnn backward": lambda: workload(bench_rnns.LSTM, "cudnn", "time_backward"),
    "LSTM cudnn forward": lambda: workload(bench_rnns.LSTM, "cudnn", "time_forward"),
    "LSTM jit backward": lambda: workload(bench_rnns.LSTM, "jit", "time_backward"),
    "ResNet-50 forward": lambda: workload(bench_cnns.ResNet, "resnet50", "time_forward"),
    "vl_py forward": lambda: workload(bench_rnns.VariableLengthLSTM, "vl_py", "time_forward"),
}


def forked(fn):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, json.dumps(fn()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    value = json.loads(os.read(read, 100))
    os.close(read)
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hog", nargs="+", choices=sorted(HOGS), default=["cpu"])
    args = parser.parse_args()
    found: dict[tuple[str, str | None], list[float]] = {}
    for _ in range(args.rounds):
        for hog in (None, *args.hog):
            busy = subprocess.Popen([sys.executable, "-c", HOGS[hog]]) if hog else None
            time.sleep(0.5)
            for name, fn in CASES.items():
                found.setdefault((name, hog), []).extend(forked(fn) for _ in range(3))
            if busy:
                busy.kill()
                busy.wait()
    for name in CASES:
        idle = statistics.median(found[(name, None)])
        line = f"{name:<20} idle {idle * 1e3:7.1f} ms"
        for hog in args.hog:
            hogged = statistics.median(found[(name, hog)])
            line += f"   {hog} hog {hogged * 1e3:7.1f} ms x{hogged / idle:.2f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
