"""A GPU history from measure_once.py's files, judged as the dashboard judges it
(experiments/diary/gpu.md, "Steadier GPU series" and "A planted GPU regression").

Each file is one process's measurement of the GPU suite, taken as one commit of a synthetic
git history (oldest first), stored as asv results with the values and samples bench_gpu
hands asv. The script prints, for the first ``--identical`` files (the same code measured in
separate processes), each series kind's commit-to-commit spread (the CV of the per-commit
medians) and the statuses `torchpulse alert` gives them; then the alert over every file
(the last ones a planted change), text and JSON.

    python experiments/gpu/history.py OUT_DIR run1.json ... run6.json --identical 5
    python experiments/gpu/history.py OUT_DIR measurements.jsonl --identical 5 \
        --labels same1,same2,same3,same4,same5,planted
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

from torchpulse import allocation, sizes
from torchpulse.evaluation import project as evaluation_project
from torchpulse.files import write_json_atomically
from torchpulse.instructions import profiles
from torchpulse.results import asv_results

BENCH = "bench_gpu.Workloads."
KINDS = {  # method: (unit, the figure of a measured row, and whether it has samples)
    "track_wall_time": ("seconds", "wall", True),
    "track_kernel_time": ("device seconds", "kernel_time", True),
    "track_kernels": ("kernels", "kernels", False),
    "track_syncs": ("synchronizations", "syncs", False),
    "track_gpu_memory": ("bytes", "gpu_memory", False),
}
VERSION = f"2-{sizes.digest(sizes.FASTRNNS, sizes.AUTOGRAD, sizes.REVISIONS)}-{allocation.POLICY}"


def project(root: Path, runs: list[dict]) -> list[str]:
    """An asv project at ``root`` whose commits hold ``runs``; its shas, oldest first."""
    root.mkdir(parents=True)
    shas = evaluation_project.git_repo(root, len(runs))
    (root / "asv.conf.json").write_text(json.dumps(evaluation_project.CONF))
    names = sorted({n for run in runs for n in run["workloads"]})
    params = [[repr(n) for n in names]]
    results = root / "results"
    write_json_atomically(results / "gpu" / "machine.json", {"machine": "gpu", "version": 1})
    write_json_atomically(results / "benchmarks.json", {
        **{BENCH + m: {"name": BENCH + m, "params": params, "param_names": ["workload"],
                       "type": "track", "unit": unit, "version": VERSION}
           for m, (unit, _, _) in KINDS.items()}, "version": 2})
    for i, (sha, run) in enumerate(zip(shas, runs, strict=True)):
        r = asv_results.new({"machine": "gpu"}, sha, 1_700_000_000_000 + i * 3_600_000,
                            "3.12", "existing")
        for method, (_, key, sampled) in KINDS.items():
            rows = [run["workloads"].get(n) for n in names]
            figures = [None if row is None else row[key] for row in rows]
            if sampled:
                values = [None if f is None else statistics.median(f) for f in figures]
                asv_results.add(r, BENCH + method, VERSION, params, values, figures)
            else:
                asv_results.add(r, BENCH + method, VERSION, params, figures)
        asv_results.save(r, results, asv_results.filename("gpu", sha, "existing"))
        # each workload's kernels and synchronisation sites, where the run kept them
        # (measure's "profile"), filed as bench_gpu files them: an alert names what grew
        kept = {n: row["profile"] for n, row in run["workloads"].items()
                if isinstance(row, dict) and isinstance(row.get("profile"), dict)}
        for kind in (profiles.KERNEL_TIME, profiles.KERNEL_LAUNCHES, profiles.SYNCS):
            if kept:
                profiles.write(profiles.path(profiles.folder(root), sha, "existing", kind),
                               sha, "existing", {n: p[kind] for n, p in kept.items()},
                               {n: sum(p[kind].values()) for n, p in kept.items()})
    return shas


def alert(root: Path, fmt: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "alert", "--config",
                           str(root / "asv.conf.json"), "--format", fmt],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return proc.stdout


def spread(runs: list[dict]) -> dict[str, list[tuple[float, str]]]:
    """Per kind: (CV of the per-run medians, workload) of every series, largest first."""
    out: dict[str, list[tuple[float, str]]] = {}
    names = sorted(set.intersection(*(set(r["workloads"]) for r in runs)))
    for method, (_, key, sampled) in KINDS.items():
        rows = []
        for name in names:
            values = [r["workloads"][name][key] for r in runs]
            if any(v is None for v in values):
                continue
            medians = [statistics.median(v) if sampled else float(v) for v in values]
            mean = statistics.fmean(medians)
            cv = statistics.stdev(medians) / mean if mean else 0.0
            rows.append((cv, name))
        out[method] = sorted(rows, reverse=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--identical", type=int, default=5)
    parser.add_argument("--labels", default="", help="the runs to take, in order (labels)")
    args = parser.parse_args()
    runs = []
    for path in args.runs:  # a .json file is one run; a .jsonl file one run a line
        text = path.read_text()
        runs += ([json.loads(line) for line in text.splitlines() if line.strip()]
                 if path.suffix == ".jsonl" else [json.loads(text)])
    if args.labels:
        wanted = args.labels.split(",")
        runs = sorted((r for r in runs if r.get("label") in wanted),
                      key=lambda r: wanted.index(r["label"]))
    same = runs[:args.identical]
    print(f"## {len(same)} processes of the same code: commit-to-commit CV of the medians\n")
    print("| series | series count | largest CV | median CV | within 1 % | within 5 % | "
          "largest |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for method, rows in spread(same).items():
        if not rows:
            continue
        cvs = [cv for cv, _ in rows]
        print(f"| {method} | {len(rows)} | {max(cvs):.2%} | {statistics.median(cvs):.2%} | "
              f"{sum(cv <= 0.01 for cv in cvs)} | {sum(cv <= 0.05 for cv in cvs)} | "
              f"{rows[0][1]} |")
    print("\nlargest kernel-time CVs:", ", ".join(f"{n} {cv:.2%}" for cv, n in
                                                 spread(same)["track_kernel_time"][:6]))
    print("largest wall-time CVs:", ", ".join(f"{n} {cv:.2%}" for cv, n in
                                               spread(same)["track_wall_time"][:6]))
    moved = [(n, [r["workloads"][n]["kernels"] for r in same])
             for _, n in spread(same)["track_kernels"]
             if len({r["workloads"][n]["kernels"] for r in same}) > 1]
    print(f"kernel counts that moved between processes: {moved or 'none'}")

    identical = project(args.out / "identical", same)
    verdicts = json.loads(alert(args.out / "identical", "json"))["verdicts"]
    print(f"\n## statuses over the {len(identical)} identical commits (alert, defaults)\n")
    by_kind: dict[str, Counter] = {}
    for v in verdicts:
        by_kind.setdefault(v["benchmark"].rsplit(".", 1)[1], Counter())[v["status"]] += 1
    total = Counter()
    for method, counts in sorted(by_kind.items()):
        total += counts
        print(f"{method}: {dict(counts)}")
    print(f"all: {dict(total)}; ok {total['ok'] / sum(total.values()):.1%}")

    if len(runs) > len(same):
        shas = project(args.out / "planted", runs)
        print(f"\n## the alert over all {len(runs)} commits (planted change from commit "
              f"{len(same) + 1}, {shas[len(same)][:8]})\n")
        print(alert(args.out / "planted", "text"))
        data = json.loads(alert(args.out / "planted", "json"))
        (args.out / "planted-alert.json").write_text(json.dumps(data, indent=1))
        for a in data["alerts"]:
            print(a["benchmark"], a["params"], a["commit"][:8], a.get("before"), a.get("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
