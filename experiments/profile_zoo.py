#!/usr/bin/env python
# An experiment, not product (run from a checkout with .venv); its results: docs/measurements.md.
"""Where the compile suite's per-commit time goes: measure_zoo (bench_compile's setup_cache)
over every zoo model and tracked backend at a preset, with the time of each phase printed
(the compilers' first use, each model's measurement and its accuracy check).

    TORCHPULSE_PRESET=cpu .venv/bin/python experiments/profile_zoo.py
"""

import functools
import sys
import time

import torch

from torchpulse.compile import accuracy, performance, tracking
from torchpulse.compile.choices import MODELS, TRACKED_BACKENDS
from torchpulse.presets import resolve_preset

totals: dict[str, float] = {}


def timed(phase, fn, label):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            took = time.perf_counter() - start
            totals[phase] = totals.get(phase, 0.0) + took
            if took > 0.01:
                print(f"  {phase:<9} {label(args):<20} {took:6.2f} s", flush=True)
    return wrapper


def main() -> int:
    preset = resolve_preset(device="cpu")
    performance.warm_up_compiler = timed("first use", performance.warm_up_compiler,
                                         lambda a: a[0])
    performance.measure_compiled = timed("measure", performance.measure_compiled,
                                         lambda a: f"{a[0].spec.name}/{a[1]}")
    accuracy.check = timed("accuracy", accuracy.check, lambda a: a[0].spec.name)
    start = time.perf_counter()
    zoo = tracking.measure_zoo(list(MODELS), list(TRACKED_BACKENDS), preset.name, "cpu",
                               threads=preset.num_threads)
    print(f"\nmeasure_zoo at preset {preset.name}: {time.perf_counter() - start:.1f} s "
          f"(torch {torch.__version__})")
    print("  " + ", ".join(f"{k} {v:.1f} s" for k, v in totals.items()))
    compiles = {b: sum(t["compile_seconds"] for (m, bb), t in
                       ((k, vars(v)) for k, v in zoo["models"].items()) if bb == b)
                for b in TRACKED_BACKENDS}
    print("  cold compiles: " + ", ".join(f"{b} {s:.1f} s" for b, s in compiles.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
