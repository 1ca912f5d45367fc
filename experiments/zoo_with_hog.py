#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: experiments/diary/detection.md.
"""The compile suite's setup (bench_compile's setup_cache) run in this process with a CPU hog
over part of it: prints each canary reading taken around the zoo's models and which models
were measured again.

    TORCHPULSE_PRESET=cpu .venv/bin/python experiments/zoo_with_hog.py \
        [--hog-from 25] [--hog-for 12]
"""

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_compile  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hog-from", type=float, default=25.0, help="seconds after the start")
    parser.add_argument("--hog-for", type=float, default=12.0, help="seconds")
    args = parser.parse_args()
    start = time.time()

    def hog():
        time.sleep(args.hog_from)
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        print(f"  hog on at {time.time() - start:5.1f} s", flush=True)
        time.sleep(args.hog_for)
        busy.kill()
        busy.wait()
        print(f"  hog off at {time.time() - start:5.1f} s", flush=True)

    threading.Thread(target=hog, daemon=True).start()
    read = bench_compile._read_canary

    def traced():
        value = read()
        print(f"  canary at {time.time() - start:5.1f} s: {value * 1e3:.1f} ms", flush=True)
        return value

    bench_compile._read_canary = traced
    zoo = bench_compile._measure_zoo(None)
    print(f"zoo measured in {time.time() - start:.1f} s: {len(zoo['models'])} models x backends")
    for (model, backend), t in sorted(zoo["models"].items()):
        print(f"  {model:<20} {backend:<10} step {t['step_seconds'] * 1e3:8.3f} ms  "
              f"compile {t['compile_seconds']:6.2f} s  {t['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
