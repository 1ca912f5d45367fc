"""Count a selection of the instruction family once and save the figures, or compare two
saved runs: the spread between clones, machines, environments and commits.

    python experiments/instructions/spread.py count OUT.json [default|all|core|PATTERNS]
    python experiments/instructions/spread.py compare A.json B.json
    python experiments/instructions/spread.py cost A.json

``count`` runs torchpulse's counting as asv would (instructions.count, every core) from
wherever this is started; run it from two clones, environments or machines and compare.
Progress goes to stderr with the seconds since the start; OUT.json holds the wall time, each
workload's figure and its windows.
"""

import json
import sys
import time


def count(out: str, choice: str) -> None:
    from torchpulse import sizes
    from torchpulse.autograd import choices as autograd
    from torchpulse.fastrnns import choices as fastrnns
    from torchpulse.instructions import count as counting
    from torchpulse.workloads import registry

    if choice in registry.SELECTIONS:
        names = registry.selected(fastrnns, autograd, choice)
    else:
        names = registry.matching(registry.workloads(fastrnns, autograd), choice)
    start = time.time()
    counted, failed = counting.count(
        names, sizes.counting(),
        log=lambda line: print(f"{time.time() - start:7.1f}s {line}", file=sys.stderr,
                               flush=True))
    wall = time.time() - start
    with open(out, "w") as f:
        json.dump({"wall_s": wall, "workloads": len(names), "failed": failed,
                   "instructions": {n: c.instructions for n, c in counted.items()},
                   "windows": {n: c.counts for n, c in counted.items()},
                   "seconds": {n: c.seconds for n, c in counted.items()}}, f, indent=1)
    print(f"{len(counted)} counted, {len(failed)} failed in {wall:.0f} s")


def cost(path: str) -> None:
    """Where a count's time went: each workload's seconds per phase (windows.PHASES), the
    slowest first, and the totals."""
    run = json.load(open(path))
    rows = sorted(run["seconds"].items(), key=lambda kv: -sum(kv[1].values()))
    phases = list(rows[0][1]) if rows else []
    print(f"| workload | instructions a call | {' | '.join(phases)} | total |")
    print("|---|---:|" + "---:|" * (len(phases) + 1))
    for name, seconds in rows:
        print(f"| `{name}` | {run['instructions'][name]:,} | "
              + " | ".join(f"{seconds[p]:.1f}" for p in phases)
              + f" | {sum(seconds.values()):.1f} |")
    totals = {p: sum(s[p] for _, s in rows) for p in phases}
    print(f"| all {len(rows)} | | " + " | ".join(f"{totals[p]:.0f}" for p in phases)
          + f" | {sum(totals.values()):.0f} |")
    print(f"\nwall {run['wall_s']:.0f} s for {run['workloads']} workloads")


def compare(a_path: str, b_path: str) -> None:
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    rows = []
    for name, x in a["instructions"].items():
        y = b["instructions"].get(name)
        if y is not None:
            rows.append((abs(y - x) / x * 100, name, x, y))
    rows.sort(reverse=True)
    print("| workload | A | B | difference |\n|---|---:|---:|---:|")
    for diff, name, x, y in rows:
        print(f"| `{name}` | {x:,} | {y:,} | {diff:.3f} % |")
    print(f"\nlargest {rows[0][0]:.3f} % ({rows[0][1]}); "
          f"{sum(r[0] <= 0.1 for r in rows)} of {len(rows)} within 0.1 %; "
          f"walls {a['wall_s']:.0f} s and {b['wall_s']:.0f} s")


if __name__ == "__main__":
    if sys.argv[1] == "count":
        count(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "default")
    elif sys.argv[1] == "cost":
        cost(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
