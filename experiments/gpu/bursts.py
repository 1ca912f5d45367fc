"""Does an eager workload's wall time move with time inside one process, or only from one
process to the next? (issue 50: wall time moves 3-26 % between processes; experiments/diary/gpu.md.)

One process builds and warms the workloads given, then takes ``--rounds`` rounds: in each, a
burst of ``--burst`` wall-time samples of every workload (torchpulse.gpu.measure's sampling,
as bench_gpu takes them today all at once), then ``--gap`` seconds of host work in Python,
standing in for the other workloads a commit's process measures between two passes. Each
round also reads two canaries: the host's speed (a fixed Python loop) and its launch cost
(200 tiny kernel launches, synchronized once). Then, per workload, one profiled session of
3 calls with the trace's reading split in three (torch's events, trace.read, trace.calls)
and its events counted by kind: where run 12's 21 s of "trace reading" goes.

    python experiments/gpu/bursts.py OUT.jsonl --label p1 [--workloads 'rnns/py/*,...']
        [--rounds 12] [--burst 5] [--gap 3] [--device cuda] [--preset cuda]

A line per process in OUT.jsonl; ``--analyse OUT.jsonl`` prints, per workload, the spread of
its burst medians inside each process against the spread of the processes' medians.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time

DEFAULT = ("rnns/cudnn/forward,rnns/cudnn/backward,rnns/py/forward,rnns/py/backward,"
           "cnns/resnet50/forward,cnns/resnet50/backward,autograd/resnet18/vjp,"
           "autograd/ppl_simple_reg/vjp")


def _cv(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def _host_canary() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(200_000):
        total += i * i
    return time.perf_counter() - start


def _launch_canary(torch, device: str) -> float:
    x = torch.zeros(1, device=device)
    if device != "cpu":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(200):
        x.add_(1)
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        _host_canary()


def measure(args) -> dict:
    import torch

    from torchpulse import sizes
    from torchpulse.gpu import measure as m
    from torchpulse.gpu import trace
    from torchpulse.gpu.measure import sizes_at
    from torchpulse.workloads.regions import build
    tables = sizes_at(sizes.by_preset(), args.preset)
    device = m._Device(args.device)
    m.prime(device, m.Phases())
    names = args.workloads.split(",")
    regions = {}
    for name in names:
        regions[name] = build(name, tables, args.device, args.preset, built={})
        m._warm(regions[name], device)
    started = time.perf_counter()
    rounds = []
    for _ in range(args.rounds):
        row = {"at_s": time.perf_counter() - started, "host": _host_canary(),
               "launch": _launch_canary(torch, args.device), "wall": {}}
        for name in names:
            row["wall"][name] = statistics.median(m._wall(regions[name], device, args.burst))
        rounds.append(row)
        _busy(args.gap)
    reading = {}
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.cuda else [])
    for name in names:
        clock = trace.ProfiledClock(args.device)
        t0 = time.perf_counter()
        with profile(activities=activities) as prof:
            for _ in range(3):
                regions[name].run(clock)
        t1 = time.perf_counter()
        events = prof.profiler.kineto_results.events()
        t2 = time.perf_counter()
        activities_read = trace.read(events)
        t3 = time.perf_counter()
        calls = trace.calls(activities_read)
        t4 = time.perf_counter()
        kinds = collections.Counter(a.kind for a in activities_read)
        reading[name] = {"session_s": t1 - t0, "events_s": t2 - t1, "read_s": t3 - t2,
                         "calls_s": t4 - t3, "events": len(events), "kinds": dict(kinds),
                         "kernels": [c.kernels for c in calls]}
        print(name, json.dumps({k: (round(v, 3) if isinstance(v, float) else v)
                                for k, v in reading[name].items()}), file=sys.stderr,
              flush=True)
    return {"label": args.label, "rounds": rounds, "reading": reading,
            "burst": args.burst, "gap": args.gap}


def analyse(path: str) -> None:
    processes = [json.loads(line) for line in open(path)]
    names = list(processes[0]["rounds"][0]["wall"])
    print(f"{len(processes)} processes, {len(processes[0]['rounds'])} rounds each")
    print(f"{'workload':32} {'CV in a process (each)':>30} {'CV of process medians':>22} "
          f"{'CV of first bursts':>19}")
    for name in names:
        inside = [_cv([r["wall"][name] for r in p["rounds"]]) for p in processes]
        medians = [statistics.median(r["wall"][name] for r in p["rounds"]) for p in processes]
        first = [p["rounds"][0]["wall"][name] for p in processes]
        print(f"{name:32} {' '.join(f'{c:5.1%}' for c in inside):>30} "
              f"{_cv(medians):>22.1%} {_cv(first):>19.1%}")
    for key in ("host", "launch"):
        inside = [_cv([r[key] for r in p["rounds"]]) for p in processes]
        medians = [statistics.median(r[key] for r in p["rounds"]) for p in processes]
        print(f"{'canary: ' + key:32} {' '.join(f'{c:5.1%}' for c in inside):>30} "
              f"{_cv(medians):>22.1%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--analyse", action="store_true")
    parser.add_argument("--label", default="")
    parser.add_argument("--workloads", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--burst", type=int, default=5)
    parser.add_argument("--gap", type=float, default=3.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--preset", default="cuda")
    args = parser.parse_args()
    if args.analyse:
        analyse(args.out)
        return 0
    out = measure(args)
    with open(args.out, "a") as f:
        f.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
