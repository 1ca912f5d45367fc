"""One run: one commit measured by asv in fresh benchmark processes, the values read back.

``compare`` and ``bisect`` measure the same commits many times, interleaved. Each run is an
``asv run`` of the selected benchmarks (``-a rounds=1``: one process per benchmark), so asv
builds and installs the commit as it does for the dashboard (its wheel is built once and
cached), discovers the suite and runs it with its own runner. The commits of one round
(BASE and HEAD; GOOD, the probe and BAD) go to one ``asv run`` in the round's order
(``each``): asv's start and its discovery of the suite are paid once a round. The results
go to a scratch results tree, never to the project's: a run is read back and its file moved
aside, so that the next run of the same commit starts clean. asv's machine file is the
scratch folder's too, not the user's ~/.asv-machine.json (results.asv_process). Benchmarks
are selected by asv's own ``--bench`` matching, which for a parameterised benchmark matches
``name(p1, p2)`` and so runs only the parameter combinations still undecided.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.results import asv_results
from torchpulse.results.gitrepo import GitError
from torchpulse.results.project import Project


class RunError(TorchpulseError, ValueError):
    """A commit that cannot be measured, or a selection that measures nothing. ``log``:
    asv's log of the failed run, when there is one (in the scratch folder, which the
    command removes unless told to keep it)."""

    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(message)
        self.log = log


@dataclass
class Run:
    """What one run of one commit measured: a value per benchmark key (``name`` or
    ``name(p1, p2)``, NaN where the benchmark failed or skipped) and its samples."""

    commit: str
    values: dict[str, float]
    samples: dict[str, list[float]] = field(default_factory=dict)
    file: Path | None = None  # the asv results file, kept as .../<machine>/<file name>
    units: dict[str, str] = field(default_factory=dict)  # benchmark name: its unit

    def unit(self, key: str) -> str | None:
        """The unit of benchmark ``key`` (``name`` or ``name(p1, p2)``), when declared."""
        return self.units.get(key.split("(", 1)[0])

    @property
    def relative(self) -> str:
        """The results file's place in a results tree: <machine>/<file name>."""
        return f"{self.file.parent.name}/{self.file.name}" if self.file else ""


Measure = Callable[[str, Sequence[str] | None], Run]


def key(name: str, combo: Sequence[str]) -> str:
    """asv's name of one parameter combination, as its ``--bench`` matches it."""
    return f"{name}({', '.join(combo)})" if combo else name


def selection(keys: Sequence[str]) -> str:
    """An asv --bench expression that selects exactly ``keys``."""
    return "^(?:" + "|".join(re.escape(k) for k in sorted(keys)) + ")$"


def read(path: Path) -> Run:
    """The values and samples of an asv results file, at the commit it holds."""
    results = asv_results.load(path)
    values: dict[str, float] = {}
    samples: dict[str, list[float]] = {}
    for name in asv_results.benchmarks(results):
        for combo, value, got in asv_results.rows(results, name):
            k = key(name, combo)
            values[k] = float(value) if isinstance(value, int | float) else math.nan
            if got:
                samples[k] = [float(s) for s in got]
    return Run(results.commit_hash, values, samples, path)


class AsvRuns:
    """Runs of commits of ``project`` by asv, each into a scratch tree under ``workdir``.

    The scratch config is the project's with absolute paths, the same environments (so the
    environment and the build cache are shared with the dashboard's runs), its own results
    and html directories, and a build cache large enough for the commits of a bisection."""

    def __init__(self, project: Project, bench: str, workdir: Path, machine: str | None = None,
                 python: str = sys.executable):
        self.project, self.bench, self.machine = project, bench, machine
        self.workdir, self.python = workdir, python
        # fresh folders in prepare(): a workdir used before may hold an older scratch tree
        self.results_dir = workdir / "results"
        self.kept = workdir / "runs"
        self.config = workdir / "asv.conf.json"
        # asv's machine file, in the scratch folder: not the user's (results.asv_process)
        self.machine_file = workdir / "asv-machine.json"
        self.count = 0
        self._resolved: dict[str, str] = {}

    def resolve(self, rev: str) -> str:
        if rev not in self._resolved:
            try:
                self._resolved[rev] = self.project.resolve(rev)
            except GitError:
                raise RunError(f"commit {rev} is not in {self.project.local_repo()}") from None
        return self._resolved[rev]

    def prepare(self) -> None:
        """Write the scratch config and describe this machine to asv."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=self.workdir, prefix="asv-"))
        self.results_dir, self.kept = scratch / "results", scratch / "runs"
        self.config = scratch / "asv.conf.json"
        self.machine_file = scratch / "asv-machine.json"
        self.kept.mkdir()
        settings = self.project.elsewhere(self.results_dir, scratch / "html")
        self.config.write_text(json.dumps(settings, indent=1))
        self._asv(["machine", "--yes"], "describing this machine")

    def _asv(self, args: list[str], what: str) -> subprocess.CompletedProcess[str]:
        from torchpulse.results import asv_process

        named = ["--machine", self.machine] if self.machine else []
        log = self.workdir / "asv.log"
        proc = asv_process.run(
            asv_process.command([args[0], "--config", str(self.config), *named, *args[1:]],
                                python=self.python, scratch=True),
            env=asv_process.environment(self.machine_file), cwd=self.project.root,
            capture=True, log=log)
        if proc.returncode not in (0, 2):  # 2: a benchmark failed, which the values show
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            hint = ("; --bench matched no benchmark (a parameterised one is named with its "
                    "parameters: name('a', 1))" if "No benchmarks selected" in tail[0] else "")
            raise RunError(f"asv failed {what} (exit {proc.returncode}): "
                           f"{tail[0].lstrip('· ')}{hint}", log=log)
        return proc

    def __call__(self, commit: str, keys: Sequence[str] | None = None) -> Run:
        return self.many([commit], keys)[0]

    def many(self, commits: Sequence[str], keys: Sequence[str] | None = None) -> list[Run]:
        """Distinct ``commits`` measured in this order by one ``asv run`` (a hash file):
        each is built, installed and measured in fresh processes as a run of its own is,
        and asv's start and its discovery of the suite are paid once."""
        shas = [self.resolve(c) for c in commits]
        if len(set(shas)) != len(shas):
            raise ValueError("one asv run measures a commit once")  # each() runs them apart
        bench = self.bench if keys is None else selection(keys)
        hashes = self.kept.parent / "commits.txt"
        hashes.write_text("".join(f"{sha}\n" for sha in shas))
        self._asv(["run", "--bench", bench, "-a", "rounds=1", "--record-samples",
                   "--show-stderr", f"HASHFILE:{hashes}"],
                  f"measuring {', '.join(sha[:12] for sha in shas)}")
        from torchpulse.analysis.series import declared_benchmarks

        units = {name: str(b.get("unit") or "unit")
                 for name, b in declared_benchmarks(self.results_dir).items()}
        runs = {sha: Run(sha, {}, {}, units=dict(units)) for sha in shas}
        for path in sorted(self.results_dir.glob("*/*.json")):
            if path.name == "machine.json":
                continue
            got = read(path)
            if got.commit not in runs:
                continue
            self.count += 1
            # <machine>/<file> kept as the last two parts: asv's Results takes its name
            # in a results tree from them
            kept = self.kept / f"{self.count:04d}" / path.parent.name / path.name
            kept.parent.mkdir(parents=True)
            shutil.move(str(path), kept)
            run = runs[got.commit]
            run.values.update(got.values)
            run.samples.update(got.samples)
            run.file = kept
        for sha, run in runs.items():
            if run.file is None:
                raise RunError(f"asv measured nothing at {sha[:12]} for --bench {bench!r} "
                               "(no results file)", log=self.workdir / "asv.log")
            if len(shas) > 1 and not any(math.isfinite(v) for v in run.values.values()):
                # nothing measured: a commit that does not build is only skipped when asv
                # discovered the suite at another commit of the batch; alone, it is the
                # error it was before batching (or its benchmarks' failures again)
                runs[sha] = self.many([sha], keys)[0]
        return [runs[sha] for sha in shas]


def each(measure: Measure, commits: Sequence[str], keys: Sequence[str] | None) -> list[Run]:
    """``measure`` of each of ``commits``, in this order: by one asv run where the measure
    can (``AsvRuns.many``) and the commits differ, else a run a commit (a simulation, a
    test's script, BASE and HEAD the same commit)."""
    many = getattr(measure, "many", None)
    if many is not None and len(commits) > 1 and len(set(commits)) == len(commits):
        return many(commits, keys)
    return [measure(commit, keys) for commit in commits]
