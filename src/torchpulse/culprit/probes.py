"""A bisection's probe measurements, filed in the project's results tree so that the
dashboard shows the commits it measured.

A probe's runs become one asv result for its commit: the median of the runs' values, every
sample of every run. They are written as a results tree in a scratch folder and merged into
the project's with ``torchpulse merge``'s merge, so the write is all or nothing and a value
already stored for that commit is never replaced (the merge reports a conflict and writes
nothing; the probe then stays in the bisection's report only).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

from torchpulse.culprit.runs import Run, key
from torchpulse.results import asv_results
from torchpulse.results.gitrepo import GitError
from torchpulse.results.merge import merge_trees
from torchpulse.results.project import Project
from torchpulse.results.store import BENCHMARKS_JSON


def store(project: Project, runs: list[Run], wanted: str, source: Path, scratch: Path) -> str:
    """File ``runs`` (of one commit, one benchmark key; ``source`` is the scratch results
    tree they were measured into) in the project's results; a line saying what happened."""
    last = runs[-1]
    if last.file is None:
        return "not stored: no asv results file"
    try:
        project.commit_on_branches(last.commit)
    except GitError:
        return "not stored: the commit is not on a configured branch (asv would not show it)"
    results = asv_results.load(last.file)
    for name in asv_results.benchmarks(results):
        grid = asv_results.params(results, name)
        combos = [combo for combo, _v, _s in asv_results.rows(results, name)]
        for index, combo in enumerate(combos):
            if key(name, combo) != wanted:
                continue
            values = [r.values[wanted] for r in runs]
            samples = [s for r in runs for s in r.samples.get(wanted, [])]
            row = [None] * len(combos)
            row[index] = statistics.median(values)
            got: list[list[float] | None] = [None] * len(combos)
            got[index] = samples or None
            asv_results.add(results, name, asv_results.version(results, name) or "", grid,
                            row, got, selected={index})
            return _merge(project, results, last, source, scratch)
    return f"not stored: {wanted} is not in the run's results"


def _merge(project: Project, results: asv_results.Results, run: Run, source: Path,
           scratch: Path) -> str:
    tree = Path(tempfile.mkdtemp(dir=scratch, prefix="probe-"))
    try:
        machine = run.relative.split("/", 1)[0]
        asv_results.save(results, tree, run.relative)
        shutil.copy(source / machine / "machine.json", tree / machine / "machine.json")
        if (source / BENCHMARKS_JSON).is_file():
            shutil.copy(source / BENCHMARKS_JSON, tree / BENCHMARKS_JSON)
        summary = merge_trees([tree], project.results_dir)
        if summary.conflicts:
            return (f"not stored: {project.results_dir} already holds a different value "
                    f"({summary.conflicts[0]})")
        return f"stored in {project.results_dir / run.relative}"
    finally:
        shutil.rmtree(tree, ignore_errors=True)
