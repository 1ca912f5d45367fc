"""Does a count depend on where its blocks lie in the counted thread's malloc arena?

Counts each workload several times in one counted process, each child first allocating a
block of BALLAST bytes (kept) in its counted thread, after its warm-up and before
instrumentation goes on: everything the child's calls allocate afterwards lies that many
bytes further on. The worker runs from a patched copy of this tree's ``src``; nothing else
changes. Findings in docs/instructions.md ("Determinism", the arena's offsets).

    python experiments/instructions/arena_phase.py OUT.json WORKLOADS BALLASTS [TUNABLES [PRELOAD]]

WORKLOADS: comma-separated names; BALLASTS: comma-separated byte counts (0 included);
TUNABLES: a GLIBC_TUNABLES string for the counted process ('' for none; it only matters
under glibc's malloc, which counted processes left at suite API 9); PRELOAD: a shared
library preloaded in place of torchpulse's malloc (another malloc).
About 15 s per workload and ballast on 2 cores, plus half a minute of start.
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
BUILD = '    run, warmup = build(name, spec["tables"])\n'
SWITCH = '    start_instrumentation(spec.get("helper"))\n'
BALLAST = ("    import ctypes\n    _libc = ctypes.CDLL(None)\n"
           "    _libc.malloc.restype = ctypes.c_void_p\n"
           "    spec['ballast'] = _libc.malloc(int(_ballast or 0))\n")
COUNT = """
import json, sys
from torchpulse import sizes
from torchpulse.instructions import count
names, tunables, preload = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
if tunables:
    count.ENVIRONMENT["GLIBC_TUNABLES"] = tunables
if preload:  # in place of torchpulse's malloc
    from pathlib import Path
    count.allocator.library = lambda: Path(preload)
counted, failed = count.count(names, sizes.counting())
print(json.dumps({"counts": {n: c.counts for n, c in counted.items()}, "failed": failed}))
"""


def patched_copy(root: Path) -> Path:
    """``src`` whose worker reads ``NAME@BYTES`` and allocates BYTES before instrumenting."""
    target = root / "src"
    shutil.copytree(SRC, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    worker = target / "torchpulse" / "instructions" / "worker.py"
    text = worker.read_text()
    assert BUILD in text and SWITCH in text, "the worker changed: update this script"
    text = text.replace(BUILD, "    name, _, _ballast = name.partition('@')\n" + BUILD)
    worker.write_text(text.replace(SWITCH, BALLAST + SWITCH))
    return target


def main() -> None:
    out, workloads, ballasts, *rest = sys.argv[1:]
    names = [f"{w}@{b}" for w in workloads.split(",") for b in ballasts.split(",")]
    with tempfile.TemporaryDirectory(prefix="arena-phase-") as root:
        src = patched_copy(Path(root))
        proc = subprocess.run([sys.executable, "-c", COUNT, json.dumps(names),
                               rest[0] if rest else "", rest[1] if len(rest) > 1 else ""],
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(src)},
                              stdout=subprocess.PIPE, text=True, check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    Path(out).write_text(json.dumps(result, indent=1))
    for workload in workloads.split(","):
        medians = {b: statistics.median_low(result["counts"][f"{workload}@{b}"])
                   for b in ballasts.split(",") if f"{workload}@{b}" in result["counts"]}
        values = list(medians.values())
        spread = (max(values) - min(values)) / statistics.median(values)
        print(f"{workload:36s} {100 * spread:6.3f} %  "
              + "  ".join(f"{b}: {v:,}" for b, v in medians.items()))
    if result["failed"]:
        print(f"failed: {result['failed']}", file=sys.stderr)


if __name__ == "__main__":
    main()
