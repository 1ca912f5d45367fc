#!/usr/bin/env python
"""How much one busy core slows the machine canary (at 1 and 2 torch threads) and a few
single-threaded workloads, each timed in a process forked the way asv's forkserver does.

    .venv/bin/python scripts/hog_sensitivity.py [--rounds 2]

Prints the median per case idle and next to a ``while True: pass`` process, and their ratio.
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


CASES = {
    "canary, 2 threads": lambda: canary(2),
    "canary, 1 thread": lambda: canary(1),
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
    args = parser.parse_args()
    found: dict[tuple[str, bool], list[float]] = {}
    for _ in range(args.rounds):
        for hog in (False, True):
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if hog else None
            time.sleep(0.3)
            for name, fn in CASES.items():
                found.setdefault((name, hog), []).extend(forked(fn) for _ in range(3))
            if busy:
                busy.kill()
                busy.wait()
    for name in CASES:
        idle = statistics.median(found[(name, False)])
        hogged = statistics.median(found[(name, True)])
        print(f"{name:<20} idle {idle * 1e3:7.1f} ms   one core busy {hogged * 1e3:7.1f} ms"
              f"   x{hogged / idle:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
