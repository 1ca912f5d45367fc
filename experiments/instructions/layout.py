"""How much do counts move when only the layout of the counted code moves? Emulates the null
commits that moved the small LSTMs in the null histories (docs/instructions.md, "Threshold"):
each variant is a copy of this tree's ``src`` with lines added where those commits added them
(comments at the end of ``fastrnns/runners.py``, helper functions at the end of
``workloads.py``), counted once; optionally at other fastrnns sizes.

    python experiments/instructions/layout.py OUT.json VARIANTS SELECTION [KEY=VALUE ...]

SELECTION is a family selection (default, all, core) or comma-separated name patterns.

KEY=VALUE pairs override ``sizes.INSTRUCTIONS["fastrnns"]`` (for example hidden_size=64).
Prints each workload's spread over the variants (largest minus smallest over the median)
and saves every count, with its top functions, to OUT.json. A few minutes for a handful of
workloads and variants.
"""

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

COUNT = """
import json, sys
from torchpulse import sizes
from torchpulse.autograd import choices as autograd
from torchpulse.fastrnns import choices as fastrnns
from torchpulse.instructions import count
from torchpulse.workloads import registry
tables = json.loads(sys.argv[1])
names = registry.selected(fastrnns, autograd, sys.argv[2])  # as the suite selects
counted, failed = count.count(names, tables)
import torchpulse
print(json.dumps({"counts": {n: c.instructions for n, c in counted.items()}, "failed": failed,
                  "functions": {n: c.functions for n, c in counted.items()},
                  "package": torchpulse.__file__}))
"""


def variant(root: Path, k: int) -> Path:
    """``src`` with 3k comment lines after runners.py and k helpers after workloads.py."""
    target = root / f"v{k}" / "src"
    shutil.rmtree(target.parent, ignore_errors=True)
    shutil.copytree(SRC, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    runners = target / "torchpulse" / "fastrnns" / "runners.py"
    runners.write_text(runners.read_text() + "".join(f"# layout {k}.{i}\n" for i in range(3 * k)))
    workloads = target / "torchpulse" / "workloads.py"
    workloads.write_text(workloads.read_text() + "".join(
        f"\n\ndef _layout_{i}(x: int) -> int:\n    return x + {i}\n" for i in range(k)))
    return target


def main() -> None:
    out, variants, pattern, *overrides = sys.argv[1:]
    sys.path.insert(0, str(SRC))
    from torchpulse import sizes

    tables = json.loads(json.dumps(sizes.counting()))
    for pair in overrides:
        key, _, value = pair.partition("=")
        tables["fastrnns"][key] = type(tables["fastrnns"][key])(value)
    root = Path("/tmp/torchpulse-layout")
    runs = []
    for k in range(int(variants)):
        src = variant(root, k)
        start = time.time()
        proc = subprocess.run([sys.executable, "-c", COUNT, json.dumps(tables), pattern],
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(src)},
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              check=True)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        assert runs[-1]["package"].startswith(str(src)), runs[-1]["package"]
        print(f"variant {k}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    Path(out).write_text(json.dumps({"tables": tables, "runs": runs}, indent=1))
    for name in sorted(runs[0]["counts"]):
        values = [r["counts"][name] for r in runs if name in r["counts"]]
        spread = (max(values) - min(values)) / statistics.median(values)
        print(f"{name:40s} {statistics.median(values):>14,.0f} {100 * spread:7.3f} %  "
              + " ".join(f"{v:,}" for v in values))


if __name__ == "__main__":
    main()
