"""Is torchpulse's CUDA timing sync-correct? (issue 37; run on a GPU machine)

For each runner, the same forward (and backward) calls are timed three ways, interleaved in
rounds so that clock drift and boost states hit all three alike:

- ``region``: torchpulse's RegionClock, read before and after each call, as asv reads it;
- ``events``: a bare loop of CUDA events around the call, synchronised after each;
- ``timer``: torch.utils.benchmark.Timer (which synchronises on CUDA), forward only.

It prints one JSON line per runner and pass with the medians (ms) and the ratios
region/events and region/timer, and a table. Usage:

    python experiments/gpu/clock_check.py [--device cuda] [--preset cuda] [--runners ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial

import torch
import torch.utils.benchmark as tbench

from torchpulse.fastrnns.runners import RUNNERS, Workload
from torchpulse.presets import resolve_preset
from torchpulse.timing import RegionClock, collect_garbage


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _events(fn, device: str) -> float:
    """One call between two CUDA events (seconds); perf_counter around a sync on CPU."""
    if not device.startswith("cuda"):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def check(name: str, device: str, preset_name: str, calls: int, rounds: int) -> list[dict]:
    runner = RUNNERS[name]
    work = Workload(runner, resolve_preset(preset_name, device), device)
    md = work.model
    for _ in range(max(runner.settle_iterations, 3)):
        work.step()
    _sync(device)

    clock = RegionClock(device)
    region = {"forward": [], "backward": []}
    events = {"forward": [], "backward": []}
    timer = []

    def forward():
        return md.forward(*md.inputs)

    for _ in range(rounds):
        # torchpulse: the clock as asv reads it, one reading pair per call
        for _ in range(calls):
            before = clock()
            work.forward(clock)
            region["forward"].append(clock() - before)
            if md.backward is not None:
                fclock, bclock = RegionClock(device), RegionClock(device)
                work.step(fclock, bclock)
                region["backward"].append(bclock())
        # the bare loop: events around the same calls, same context and garbage collection
        with runner.context():
            for _ in range(calls):
                collect_garbage()
                events["forward"].append(_events(forward, device))
                if md.backward is not None:
                    out = forward()
                    args = md.backward_setup(out)
                    collect_garbage()
                    events["backward"].append(_events(partial(md.backward, *args), device))
                    work._zero_grads(require=False)
        # torch.utils.benchmark: forward passes, its own loop and synchronisation
        with runner.context():
            t = tbench.Timer("forward()", globals={"forward": forward},
                             num_threads=torch.get_num_threads())
            timer.extend(t.timeit(calls).times)  # one block of `calls` calls: its mean
    rows = []
    for kind in ("forward", "backward"):
        if not region[kind]:
            continue
        r = statistics.median(region[kind])
        e = statistics.median(events[kind])
        row = {"runner": name, "pass": kind, "device": device, "preset": preset_name,
               "calls": len(region[kind]), "region_ms": r * 1e3, "events_ms": e * 1e3,
               "region_over_events": r / e}
        if kind == "forward":
            m = statistics.median(timer)
            row.update(timer_ms=m * 1e3, region_over_timer=r / m)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--preset", default="cuda")
    ap.add_argument("--runners", nargs="+", default=["cudnn", "aten", "jit", "resnet18",
                                                     "resnet50"])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--output", help="write the JSON lines here too")
    args = ap.parse_args()
    lines = []
    for name in args.runners:
        try:
            rows = check(name, args.device, args.preset, args.calls, args.rounds)
        except Exception as exc:  # report and go on: one broken runner must not hide the rest
            rows = [{"runner": name, "error": f"{type(exc).__name__}: {exc}"}]
        for row in rows:
            lines.append(json.dumps(row))
            print(lines[-1], flush=True)
    if args.output:
        with open(args.output, "w") as f:
            f.write("\n".join(lines) + "\n")
    print(f"\n{'runner':<12}{'pass':<10}{'region ms':>11}{'events ms':>11}{'timer ms':>10}"
          f"{'r/e':>8}{'r/t':>8}")
    for row in map(json.loads, lines):
        if "error" in row:
            print(f"{row['runner']:<12}error: {row['error']}")
            continue
        timer = f"{row['timer_ms']:>10.3f}" if "timer_ms" in row else " " * 10
        rt = f"{row['region_over_timer']:>8.3f}" if "region_over_timer" in row else ""
        print(f"{row['runner']:<12}{row['pass']:<10}{row['region_ms']:>11.3f}"
              f"{row['events_ms']:>11.3f}{timer}{row['region_over_events']:>8.3f}{rt}")


if __name__ == "__main__":
    main()
