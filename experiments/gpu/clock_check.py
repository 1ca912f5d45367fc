"""Is torchpulse's CUDA timing sync-correct? (issue 37; run on a GPU machine)

For each runner, the same forward (and backward) calls are timed three ways, the methods
taking turns call by call so that clock drift and boost states hit all three alike:

- ``region``: torchpulse's RegionClock, read before and after each call, as asv reads it;
- ``events``: a bare loop of CUDA events around the call, synchronised after each;
- ``timer``: torch.utils.benchmark.Timer (which synchronises on CUDA), forward only, one
  call a measurement; ``pipelined`` is its default use, a block of calls back to back with
  one synchronisation at the end (the host queues the next call while the GPU runs one).

It prints one JSON line per runner and pass with the medians and interquartile ranges (ms)
and the ratios region/events and region/timer, and a table. Usage:

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
    """One call between two CUDA events (seconds); perf_counter on CPU. What the call
    returns lives until the end is recorded: a region frees a forward's output (and its
    autograd graph, host work the GPU waits on in a launch-bound model) after it ends."""
    if not device.startswith("cuda"):
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
        del out
        return elapsed
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    out = fn()
    end.record()
    end.synchronize()
    del out
    return start.elapsed_time(end) / 1000.0


def _quartiles(samples: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(samples, n=4)
    return q1, q2, q3


def check(name: str, device: str, preset_name: str, calls: int, rounds: int) -> list[dict]:
    """Each call is timed by one method, the methods taking turns call by call (their order
    rotating), so the three see the same moments of the GPU's and the host's state."""
    runner = RUNNERS[name]
    work = Workload(runner, resolve_preset(preset_name, device), device)
    md = work.model
    for _ in range(max(runner.settle_iterations, 3)):
        work.step()
    _sync(device)

    clock = RegionClock(device)

    def forward():
        return md.forward(*md.inputs)

    # setup runs before each timed block, after Timer's own warm-up calls: the collection
    # then comes right before the timed call, as in torchpulse's regions (upstream's gc)
    # (the output is kept in a local until the timed block has ended, as in a region)
    timer = tbench.Timer("out = forward()", setup="collect()",
                         globals={"forward": forward, "collect": collect_garbage},
                         num_threads=torch.get_num_threads())

    def region_forward() -> float:  # as asv reads the clock: one reading pair per call
        before = clock()
        work.forward(clock)
        return clock() - before

    def events_forward() -> float:  # the bare loop: events around the same call
        with runner.context():
            collect_garbage()
            return _events(forward, device)

    def timer_forward() -> float:  # torch.utils.benchmark, one synchronised call
        with runner.context():
            return timer.timeit(1).times[0]

    def region_backward() -> float:
        fclock, bclock = RegionClock(device), RegionClock(device)
        work.step(fclock, bclock)
        return bclock()

    def events_backward() -> float:
        with runner.context():
            collect_garbage()
            args = md.backward_setup(forward())
            collect_garbage()
            elapsed = _events(partial(md.backward, *args), device)
        work._zero_grads(require=False)
        return elapsed

    methods = {"forward": {"region": region_forward, "events": events_forward,
                           "timer": timer_forward}}
    if md.backward is not None:
        methods["backward"] = {"region": region_backward, "events": events_backward}
    samples = {kind: {m: [] for m in ms} for kind, ms in methods.items()}
    pipelined = []
    for _ in range(rounds):
        for i in range(calls):
            for kind, ms in methods.items():
                names = list(ms)
                for m in names[i % len(names):] + names[:i % len(names)]:
                    samples[kind][m].append(ms[m]())
        # back to back, synchronised once at the end: what Timer reports by default
        with runner.context():
            pipelined.append(timer.timeit(calls).times[0])
    rows = []
    for kind, by_method in samples.items():
        q = {m: _quartiles(v) for m, v in by_method.items()}
        r = q["region"][1]
        row = {"runner": name, "pass": kind, "device": device, "preset": preset_name,
               "calls": len(by_method["region"])}
        for m, (q1, q2, q3) in q.items():
            row.update({f"{m}_ms": q2 * 1e3, f"{m}_iqr_ms": (q3 - q1) * 1e3})
        row["region_over_events"] = r / q["events"][1]
        if "timer" in q:
            row["region_over_timer"] = r / q["timer"][1]
            row["pipelined_ms"] = statistics.median(pipelined) * 1e3
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
          f"{'piped ms':>10}{'r/e':>8}{'r/t':>8}")
    for row in map(json.loads, lines):
        if "error" in row:
            print(f"{row['runner']:<12}error: {row['error']}")
            continue
        timer = (f"{row['timer_ms']:>10.3f}{row['pipelined_ms']:>10.3f}" if "timer_ms" in row
                 else " " * 20)
        rt = f"{row['region_over_timer']:>8.3f}" if "region_over_timer" in row else ""
        print(f"{row['runner']:<12}{row['pass']:<10}{row['region_ms']:>11.3f}"
              f"{row['events_ms']:>11.3f}{timer}{row['region_over_events']:>8.3f}{rt}")


if __name__ == "__main__":
    main()
