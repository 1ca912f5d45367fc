"""Count the ResNet workloads at several counting widths (channels of the stem and first
stage): what each costs, how its windows spread, and whether the narrower model runs the
same functions as the wider one (the overlap of their top functions).

    python experiments/instructions/widths.py OUT.json [WIDTH ...] [--windows N] [--only PATTERNS]

Widths default to 64 16 8; progress to stderr with seconds since the start.
"""

import argparse
import copy
import json
import sys
import time

RESNETS = ("cnns/*", "autograd/resnet18/*", "autograd/fcn_resnet/*", "autograd/detr/*")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("widths", nargs="*", type=int, default=[64, 16, 8])
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--only", default=",".join(RESNETS))
    args = parser.parse_args()

    from torchpulse import sizes
    from torchpulse.autograd import choices as autograd
    from torchpulse.fastrnns import choices as fastrnns
    from torchpulse.instructions import count as counting
    from torchpulse.instructions import family

    names = family.matching(family.workloads(fastrnns, autograd), args.only)
    results = {}
    for width in args.widths:
        tables = copy.deepcopy(sizes.INSTRUCTIONS)
        tables["fastrnns"]["image_width"] = width
        tables["autograd"]["resnet18"]["width"] = width
        start = time.time()
        done = {}

        def log(line, start=start, done=done, width=width):
            now = time.time() - start
            print(f"w{width} {now:7.1f}s {line}", file=sys.stderr, flush=True)
            verb, _, rest = line.partition(" ")
            if verb == "counted":
                done[rest.split(" ")[0]] = now

        counted, failed = counting.count(names, tables, windows=args.windows, log=log)
        results[width] = {"wall_s": time.time() - start, "failed": failed,
                          "done_at": done,
                          "counts": {n: c.counts for n, c in counted.items()},
                          "instructions": {n: c.instructions for n, c in counted.items()},
                          "functions": {n: c.functions for n, c in counted.items()},
                          "seconds": {n: c.seconds for n, c in counted.items()}}
        print(f"width {width}: {len(counted)} counted, {len(failed)} failed, "
              f"{results[width]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        json.dump(results, f)
    base = results[args.widths[0]]
    for width in args.widths:
        r = results[width]
        print(f"\n## width {width}: {r['wall_s']:.0f} s on every core")
        print("| workload | instructions a call | windows' spread | top-50 functions shared "
              f"with width {args.widths[0]} |\n|---|---:|---:|---:|")
        for name, count in r["instructions"].items():
            windows = r["counts"][name]
            spread = (max(windows) - min(windows)) / count * 100
            trend = windows[-1] / windows[0] - 1
            mine = set(sorted(r["functions"][name], key=r["functions"][name].get)[-50:])
            theirs = set(sorted(base["functions"].get(name, {}),
                                key=base["functions"].get(name, {}).get)[-50:])
            shared = len(mine & theirs) / max(1, len(theirs)) * 100
            print(f"| `{name}` | {count:,} | {spread:.3f} % (last/first {trend * 100:+.3f} %) "
                  f"| {shared:.0f} % |")


if __name__ == "__main__":
    main()
