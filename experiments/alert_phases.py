"""Where one `torchpulse alert` spends its time, phase by phase, in one process.

Usage (from an asv project, e.g. a history of experiments/scale_history.py):
    cd /tmp/scale1000 && /work/main/.venv/bin/python /work/main/experiments/alert_phases.py
"""

import time

T0 = time.perf_counter()

from torchpulse import reports  # noqa: E402
from torchpulse.analysis import judge  # noqa: E402 (timed: the imports are a phase)
from torchpulse.analysis import verdicts as verdicts_cache  # noqa: E402
from torchpulse.analysis.disturbance import assess  # noqa: E402
from torchpulse.analysis.series import load_series  # noqa: E402
from torchpulse.results import index as results_index  # noqa: E402
from torchpulse.results.project import Project  # noqa: E402


def main() -> None:
    last = [T0]

    def phase(name: str) -> None:
        now = time.perf_counter()
        print(f"{name:<28} {now - last[0]:6.2f} s")
        last[0] = now

    phase("imports")
    project = Project.load("asv.conf.json")
    history = project.history(None)
    phase("git history")
    where = results_index.location(project.root, project.results_dir)
    series, off_branch = load_series(project.results_dir, history, index=where)
    phase(f"index -> {len(series)} series")
    series, canary = assess(series)
    phase("canary flags")
    found = judge.evaluate(series, history, off_branch_files=off_branch, canary=canary,
                           cache=verdicts_cache.Cache(where))
    phase("verdicts (cache or analysis)")
    reports.render(found, "json")
    phase("JSON report")
    print(f"{'total':<28} {time.perf_counter() - T0:6.2f} s")


if __name__ == "__main__":
    main()
