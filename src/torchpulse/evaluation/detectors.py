"""The detectors evaluate-detection asks, each run on a project as a user would run it:
torchpulse alert (once, and as make dashboard does: measure again what one run saw, then
alert), asv's publish-time detector and Apache Otava; what each found, per series."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import venv
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from torchpulse.errors import TorchpulseError
from torchpulse.evaluation import project as evaluation_project
from torchpulse.evaluation import synthetic
from torchpulse.evaluation.synthetic import Truth

OTAVA_REQUIREMENT = "apache-otava==0.8.0"
# torchpulse: alert, the steps seen in one run measured again, alert (make dashboard's
# sequence); "torchpulse, one run": the first alert alone, what any single pass says
DETECTORS = ("torchpulse", "torchpulse, one run", "asv", "otava")
# Alerts per series: the index of the first commit at the new (higher) level, per detector.
Found = dict[tuple[str, str], list[int]]


class EvaluationError(TorchpulseError, RuntimeError):
    """A detector could not be run."""


def _run(cmd: list[str], what: str, ok: tuple[int, ...] = (0,),
         **kw: object) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if proc.returncode not in ok:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise EvaluationError(f"{what} failed (exit {proc.returncode}): {tail}")
    return proc


def run_torchpulse(project: Path, history: list[str], options: list[str]) -> Found:
    """``torchpulse alert --format json`` on the project, as a user would run it."""
    position = {c: i for i, c in enumerate(history)}
    found: Found = defaultdict(list)
    for a in alert_json(project, options)["alerts"]:
        found[(a["benchmark"], a["params"][0])].append(position[a["commit"]])
    return found


def confirm_torchpulse(project: Path, history: list[str], truths: list[Truth],
                       options: list[str], seed: int) -> Found:
    """What make dashboard does after measuring: ``torchpulse disturbed --confirm`` names
    the benchmarks whose step rests on one run, asv measures them again at that commit
    (here: synthetic.remeasure, a new draw of every series of those benchmarks), and
    ``torchpulse alert`` judges the results with the second measurement."""
    hashfile = project / "remeasure.txt"
    proc = _run([sys.executable, "-m", "torchpulse.cli", "disturbed", "--config",
                 str(project / "asv.conf.json"), "--hashfile", str(hashfile), "--confirm",
                 str(project / "confirmed.txt")], "torchpulse disturbed")
    commits = hashfile.read_text().split()
    if commits:
        chosen = re.compile(proc.stdout.strip())
        names = {t.benchmark for t in truths if chosen.search(t.benchmark)}
        synthetic.remeasure(project, truths, commits, names, seed)
    return run_torchpulse(project, history, options)


def run_asv(project: Path, history: list[str], truths: list[Truth]) -> Found:
    """``asv publish``, then its html/regressions.json (what the site's regressions page
    shows): the jumps of every regression still present at the newest commit."""
    params: dict[str, list[str]] = defaultdict(list)  # asv names a combination by index
    for t in truths:
        params[t.benchmark].append(t.param)
    from torchpulse.results import asv_process

    proc = asv_process.run(asv_process.command(["publish", "--config",
                                                str(project / "asv.conf.json")]),
                           env=asv_process.base_environment(), cwd=project, capture=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise EvaluationError(f"asv publish failed (exit {proc.returncode}): {tail}")
    html = project / "html"
    revision_to_hash = json.loads((html / "index.json").read_text())["revision_to_hash"]
    position = {c: i for i, c in enumerate(history)}
    found: Found = defaultdict(list)
    for name, _path, _gp, j, _last, _best, jumps in json.loads(
            (html / "regressions.json").read_text())["regressions"]:
        bench = name.split("(", 1)[0]
        for jump in jumps:
            sha = revision_to_hash[str(jump[1])]
            found[(bench, params[bench][j])].append(position[sha])
    return found


def otava_python(venv_dir: Path, progress: Callable[[str], None]) -> Path:
    """The python of a virtual environment holding Apache Otava, made on first use."""
    python = venv_dir / "bin" / "python"
    check = [str(python), "-c", "import otava.analysis"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    progress(f"creating {venv_dir} with {OTAVA_REQUIREMENT} (once; it pins its own numpy)")
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    _run([str(python), "-m", "pip", "install", "--quiet", OTAVA_REQUIREMENT],
         f"pip install {OTAVA_REQUIREMENT}")
    return python


def active_upward(values: list[float], change_points: list[int]) -> list[int]:
    """Of a segmentation, the upward change points whose step is still at least half there
    at the newest point: how Otava's change points are read as alerts (a simple 'still
    present' rule; torchpulse's own is the baseline rule in analysis/detector/changes.py)."""
    edges = [0, *change_points, len(values)]
    means = [float(np.mean(values[a:b])) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return [k for i, k in enumerate(change_points)
            if means[i + 1] > means[i] and means[-1] - means[i] >= (means[i + 1] - means[i]) / 2]


def run_otava(truths: list[Truth], values: dict[tuple[str, str], list[float]],
              python: Path) -> Found:
    """Otava's change points (its defaults) on asv's value per commit, one per commit."""
    keys = [(t.benchmark, t.param) for t in truths]
    worker = Path(__file__).with_name("otava_worker.py")
    proc = _run([str(python), str(worker)], "otava",
                input=json.dumps([values[k] for k in keys]))
    found: Found = {}
    for key, points in zip(keys, json.loads(proc.stdout), strict=True):
        found[key] = active_upward(values[key], sorted(points))
    return found


def asv_values(project: Path, history: list[str]) -> dict[tuple[str, str], list[float]]:
    """asv's stored value (the median of the samples) per series and commit."""
    return {key: [v for v in row if v is not None]
            for key, row in stored_values(project, history).items()}


def stored_values(project: Path, history: list[str]
                  ) -> dict[tuple[str, str], list[float | None]]:
    """asv's stored value per series at every commit of ``history`` (None: none stored)."""
    from torchpulse.analysis.series import load_series
    from torchpulse.results.gitrepo import History

    series, _ = load_series(project / "results", History(history))
    at = {c: i for i, c in enumerate(history)}
    out: dict[tuple[str, str], list[float | None]] = {}
    for s in series:
        row: list[float | None] = [None] * len(history)
        for p in s.points:
            row[at[p.commit]] = p.value
        out[(s.key.benchmark, s.key.params[0])] = row
    return out

def alert_json(project: Path, options: list[str]) -> dict:
    """``torchpulse alert --format json`` on the project (with ``options``), parsed."""
    out = project / "alerts.json"
    _run([sys.executable, "-m", "torchpulse.cli", "alert", "--config",
          str(project / "asv.conf.json"), "--format", "json", "--output", str(out), *options],
         "torchpulse alert", ok=(0, 1))
    return json.loads(out.read_text())


def run_detectors(project: Path, truths: list[Truth], alert_options: list[str],
                  use_asv: bool, otava: Path | None, seed: int,
                  progress: Callable[[str], None]) -> tuple[dict[str, Found], dict[str, float]]:
    """Every detector asked on the project: what each found, and its wall time."""
    history = evaluation_project.history(project)
    runs: list[tuple[str, Callable[[], Found]]] = [
        ("torchpulse, one run", lambda: run_torchpulse(project, history, alert_options))]
    if use_asv:  # asv and Otava judge the project as first measured
        runs.append(("asv", lambda: run_asv(project, history, truths)))
    if otava is not None:
        values = asv_values(project, history)  # read before the clock starts
        runs.append(("otava", lambda: run_otava(truths, values, otava)))
    # last: it measures again what the one-run pass saw once, which changes the project;
    # its time is that of both passes
    runs.append(("torchpulse", lambda: confirm_torchpulse(project, history, truths,
                                                          alert_options, seed)))
    found: dict[str, Found] = {}
    timings: dict[str, float] = {}
    for name, detect in runs:
        progress(f"running {name} ...")
        started = time.perf_counter()
        found[name] = detect()
        timings[name] = time.perf_counter() - started
        progress(f"{name}: {timings[name]:.1f} s")
    timings["torchpulse"] += timings["torchpulse, one run"]
    order = [n for n in DETECTORS if n in found]
    return {n: found[n] for n in order}, {n: timings[n] for n in order}
