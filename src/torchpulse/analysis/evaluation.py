"""How well detectors find planted regressions: torchpulse alert, asv's publish-time detector
and Apache Otava, run on the same synthetic project and scored against its truth."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from torchpulse.analysis import synthetic
from torchpulse.analysis.defaults import DEFAULT_ALPHA, DEFAULT_THRESHOLD
from torchpulse.analysis.synthetic import DISTANCES, NOISE_CVS, QUIET_KINDS, STEP_SIZES, Truth
from torchpulse.analysis.synthetic import history as synthetic_history
from torchpulse.errors import TorchpulseError

OTAVA_REQUIREMENT = "apache-otava==0.8.0"
# the patterns of real histories that are no regression (a dip that recovers, toggling
# between two levels, orders-of-magnitude jumps that come back)
REAL_HISTORY_KINDS = ("dip", "toggle", "magnitude")
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
    _run([sys.executable, "-m", "asv", "publish", "--config", str(project / "asv.conf.json")],
         "asv publish", cwd=project)
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
    present' rule; torchpulse's own is the baseline rule in detect.py)."""
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


@dataclass
class Score:
    """Counts for one detector over one group of series."""

    series: int = 0
    alarmed: int = 0  # series with at least one alert
    located: int = 0  # ... with an alert within one commit of the planted step

    def rate(self) -> float:
        return self.alarmed / self.series if self.series else float("nan")

    def location(self) -> float:
        return self.located / self.alarmed if self.alarmed else float("nan")


def score(truths: list[Truth], found: Found) -> dict[tuple, Score]:
    """Scores keyed by ("step", size, distance, cv) and (kind, cv) for the other kinds."""
    scores: dict[tuple, Score] = defaultdict(Score)
    for t in truths:
        hits = found.get((t.benchmark, t.param), [])
        key = ("step", t.size, t.distance, t.cv) if t.kind == "step" else (t.kind, t.cv)
        s = scores[key]
        s.series += 1
        if hits:
            s.alarmed += 1
            if t.kind == "step" and any(abs(h - t.at) <= 1 for h in hits):
                s.located += 1
    return scores


def _pct(x: float) -> str:
    return "  -  " if x != x else f"{x * 100:5.1f}"


def pooled(scores: dict[tuple, Score], keys: list[tuple]) -> Score:
    total = Score()
    for k in keys:
        s = scores.get(k, Score())
        total.series += s.series
        total.alarmed += s.alarmed
        total.located += s.located
    return total


def table(results: dict[str, dict[tuple, Score]]) -> str:
    """Markdown tables: recall and location by step size and distance per noise level,
    then false alarms per kind of series without a regression."""
    names = list(results)
    lines = []
    for cv in NOISE_CVS:
        lines += [f"### Steps up, noise cv {cv * 100:g} % (recall % / located within one "
                  "commit %)", "",
                  "| step | commits after | " + " | ".join(names) + " |",
                  "|---:|---:|" + "---:|" * len(names)]
        for size in STEP_SIZES:
            for d in DISTANCES:
                cells = [f"{_pct(r[('step', size, d, cv)].rate())} / "
                         f"{_pct(r[('step', size, d, cv)].location())}"
                         for r in results.values()]
                lines.append(f"| +{size * 100:g} % | {d} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["### False alarms (% of series with any alert)", "",
              "| series | noise cv | count | " + " | ".join(names) + " |",
              "|---|---:|---:|" + "---:|" * len(names)]
    for kind in QUIET_KINDS:
        for cv in NOISE_CVS:
            count = next(iter(results.values()))[(kind, cv)].series
            if not count:
                continue
            cells = [_pct(r[(kind, cv)].rate()) for r in results.values()]
            lines.append(f"| {kind} | {cv * 100:g} % | {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def targets(scores: dict[tuple, Score]) -> list[tuple[str, float, str, bool]]:
    """torchpulse's targets: (what, measured, target, met)."""
    five = [("step", 0.05, d, 0.02) for d in DISTANCES if d >= 3]
    big = [("step", s, d, cv) for s in STEP_SIZES if s >= 0.10 for d in DISTANCES if d >= 3
           for cv in NOISE_CVS]
    f5, fb = pooled(scores, five), pooled(scores, big)
    located = f5.located / f5.alarmed if f5.alarmed else 0.0
    noise = pooled(scores, [("noise", cv) for cv in NOISE_CVS])
    other = pooled(scores, [(k, cv) for k in ("improvement", "spike") for cv in NOISE_CVS])
    real = pooled(scores, [(k, cv) for k in REAL_HISTORY_KINDS for cv in NOISE_CVS])
    return [
        ("+5 % steps at 2 % noise, 3+ commits after: found", f5.rate(), ">= 96 %",
         f5.rate() >= 0.96),
        ("... located within one commit", located, ">= 95 %", located >= 0.95),
        ("+10 % or more, 3+ commits after: found", fb.rate(), ">= 99 %", fb.rate() >= 0.99),
        ("pure-noise series with a false alarm", noise.rate(), "<= 0.5 %",
         noise.rate() <= 0.005),
        ("improvement/spike series with a false alarm", other.rate(), "<= 5 %",
         other.rate() <= 0.05),
        ("dip/toggle/magnitude series with a false alarm", real.rate(), "<= 1 %",
         real.rate() <= 0.01),
    ]


def run_detectors(project: Path, truths: list[Truth], alert_options: list[str],
                  use_asv: bool, otava: Path | None, seed: int,
                  progress: Callable[[str], None]) -> tuple[dict[str, Found], dict[str, float]]:
    """Every detector asked on the project: what each found, and its wall time."""
    history = synthetic_history(project)
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


def report(title: str, scores: dict[str, dict[tuple, Score]],
           timings: dict[str, float]) -> tuple[str, bool]:
    """The markdown report, and whether torchpulse met every target."""
    met = targets(scores["torchpulse"])
    text = [title, "",
            "Detector run time: " + ", ".join(f"{n} {t:.1f} s" for n, t in timings.items())
            + f" (python {sys.version.split()[0]}, {os.cpu_count()} cpus).", "",
            table(scores), "### torchpulse against the targets", "",
            "| target | measured | wanted | |", "|---|---:|---:|---|"]
    text += [f"| {what} | {value * 100:.2f} % | {want} | {'met' if ok else 'MISSED'} |"
             for what, value, want, ok in met]
    return "\n".join(text) + "\n", all(ok for *_, ok in met)


@dataclass(frozen=True)
class Options:
    """What `torchpulse evaluate-detection` builds and runs."""

    commits: int = 60
    per_cell: int = 40
    noise_series: int = 400
    seed: int = 0
    alpha: float = DEFAULT_ALPHA
    threshold: float = DEFAULT_THRESHOLD
    use_asv: bool = True
    otava_venv: Path | None = Path(".venv-otava")  # None: leave Otava out
    keep: Path | None = None  # build the project here and keep it
    families: tuple[str, ...] = ("synthetic", "shapes")  # which families of series to run
    shape_commits: int = 100  # commits of the shapes family (per_cell series a cell)


def evaluate(options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """Run each family of ``options``: the markdown report, and whether torchpulse met
    every target."""
    if options.keep is not None and options.keep.exists() and any(options.keep.iterdir()):
        raise EvaluationError(f"{options.keep}: not empty (give --keep a new directory)")
    texts, met = [], True
    if "synthetic" in options.families:
        text, ok = evaluate_synthetic(options, progress)
        texts.append(text)
        met = met and ok
    if "shapes" in options.families:
        text, ok = evaluate_shapes(options, progress)
        texts.append(text)
        met = met and ok
    return "\n".join(texts), met


def evaluate_synthetic(options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """Build a synthetic project, run every detector on it and score them: the markdown
    report, and whether torchpulse met its targets."""
    with tempfile.TemporaryDirectory(prefix="torchpulse-eval-") as tmp:
        project = (options.keep / "synthetic") if options.keep is not None else Path(tmp)
        project.mkdir(parents=True, exist_ok=True)
        otava = (otava_python(options.otava_venv, progress)
                 if options.otava_venv is not None else None)
        started = time.perf_counter()
        truths = synthetic.build(project, commits=options.commits, per_cell=options.per_cell,
                                 noise_series=options.noise_series, seed=options.seed)
        progress(f"{len(truths)} series x {options.commits} commits written to {project} "
                 f"({time.perf_counter() - started:.0f} s)")
        alert_options = ["--alpha", str(options.alpha), "--threshold", str(options.threshold)]
        found, timings = run_detectors(project, truths, alert_options, options.use_asv, otava,
                                       options.seed, progress)
    scores = {name: score(truths, f) for name, f in found.items()}
    return report(f"# Detection quality: {len(truths)} synthetic series, {options.commits} "
                  f"commits, seed {options.seed}", scores, timings)


# --- the second family: series shapes the synthetic generator never makes (shapes.py) ---

SHAPE_MARGIN = 5  # the all-change-points view: a finding within this many commits is a hit
SHAPE_LOCATED = 3  # a planted step is found when a change point lies within this many


def alert_json(project: Path, options: list[str]) -> dict:
    """``torchpulse alert --format json`` on the project (with ``options``), parsed."""
    out = project / "alerts.json"
    _run([sys.executable, "-m", "torchpulse.cli", "alert", "--config",
          str(project / "asv.conf.json"), "--format", "json", "--output", str(out), *options],
         "torchpulse alert", ok=(0, 1))
    return json.loads(out.read_text())


@dataclass
class ShapeScore:
    """One (shape, change, size) cell: how the history view and the active view read it."""

    series: int = 0
    any_change: int = 0  # series with at least one change point (not counting drifts)
    change_points: int = 0
    located: int = 0  # planted steps with a change point within SHAPE_LOCATED commits
    bound: int = 0  # ... that the best single split (shapes.best_split) locates as closely
    drift_found: int = 0  # planted drifts with a drift finding overlapping them
    active: int = 0  # series with an active regression

    def share(self, count: int) -> float:
        return count / self.series if self.series else float("nan")


@dataclass
class Matching:
    """The all-change-points view against the truth, every series pooled."""

    findings: int = 0
    hits: int = 0  # findings that match a planted change
    truths: int = 0
    found: int = 0  # planted changes matched by a finding

    def f1(self) -> tuple[float, float, float]:
        p = self.hits / self.findings if self.findings else float("nan")
        r = self.found / self.truths if self.truths else float("nan")
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score_shapes(truths: list, history_view: dict, active_view: dict,
                 history: list[str], values: dict[tuple[str, str], list[float | None]]
                 ) -> tuple[dict[tuple, ShapeScore], Matching]:
    """Scores per (shape, change, size) cell, and the pooled matching of every finding;
    ``values``: each series' stored value per commit of ``history`` (None: none stored)."""
    from torchpulse.analysis.shapes import best_split

    position = {c: i for i, c in enumerate(history)}
    findings: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    for a in history_view["alerts"]:
        key = (a["benchmark"], a["params"][0])
        if a.get("drifts"):
            for d in a["drifts"]:
                findings[key].append(("drift", position[d["first"]], position[d["last"]]))
        else:
            findings[key].append(("change", position[a["commit"]], position[a["commit"]]))
    active = {(a["benchmark"], a["params"][0]) for a in active_view["alerts"]
              if a["direction"] == "regression"}
    cells: dict[tuple, ShapeScore] = defaultdict(ShapeScore)
    matching = Matching()
    for t in truths:
        key = (t.benchmark, t.param)
        got = findings.get(key, [])
        changes = [at for kind, at, _ in got if kind == "change"]
        drifts = [(a, b) for kind, a, b in got if kind == "drift"]
        after = len(history) - t.at if t.shape == "count" and t.change == "step" else 0
        cell = cells[(t.shape, t.change, t.size, after)]
        cell.series += 1
        cell.any_change += bool(changes)
        cell.change_points += len(changes)
        cell.active += key in active
        planted = []  # (kind, first, last) of every planted change
        if t.change == "step":
            planted.append(("change", t.at, t.at))
            cell.located += any(abs(c - t.at) <= SHAPE_LOCATED for c in changes)
            cell.bound += abs(best_split(values[key]) - t.at) <= SHAPE_LOCATED
        if t.change == "drift" or t.shape == "stepdrift":
            a, b = (t.at, t.end) if t.change == "drift" else (0, len(history) - 1)
            planted.append(("drift", a, b))
            cell.drift_found += t.change == "drift" and any(
                first <= b + SHAPE_MARGIN and last >= a - SHAPE_MARGIN for first, last in drifts)
        matching.truths += len(planted)
        matching.findings += len(got)
        used = [False] * len(got)
        for kind, a, b in planted:
            hit = False
            for i, (fkind, f, last) in enumerate(got):
                near = (abs(f - a) <= SHAPE_MARGIN if kind == "change"
                        else f <= b + SHAPE_MARGIN and last >= a - SHAPE_MARGIN)
                if fkind == kind and near and (not used[i] or kind == "drift"):
                    used[i], hit = True, True
            matching.found += hit
        matching.hits += sum(used)
    return cells, matching


def shape_table(cells: dict[tuple, ShapeScore], matching: Matching) -> str:
    lines = ["### Series shapes the generator does not make (% of series)", "",
             "| shape | planted | series | any change point | change points a series | "
             "step located within 3 | best single split within 3 | drift found | "
             "active regression |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (shape, change, size, after), c in sorted(cells.items()):
        what = ("nothing" if change == "none" else
                f"+{size:g} unit, {after} commits after" if shape == "count"
                else f"{change} +{size * 100:g} %")
        lines.append(
            f"| {shape} | {what} | {c.series} | {_pct(c.share(c.any_change))} | "
            f"{c.change_points / c.series:.2f} | "
            f"{_pct(c.share(c.located)) if change == 'step' else '  -  '} | "
            f"{_pct(c.share(c.bound)) if change == 'step' else '  -  '} | "
            f"{_pct(c.share(c.drift_found)) if change == 'drift' else '  -  '} | "
            f"{_pct(c.share(c.active))} |")
    p, r, f1 = matching.f1()
    lines += ["", f"All-change-points view, every finding (change point or drift) against every "
              f"planted change within {SHAPE_MARGIN} commits: precision {p * 100:.1f} %, recall "
              f"{r * 100:.1f} %, F1 {f1 * 100:.1f} % ({matching.findings} findings, "
              f"{matching.truths} planted changes).", ""]
    return "\n".join(lines)


def shape_targets(cells: dict[tuple, ShapeScore]) -> list[tuple[str, float, str, bool]]:
    from torchpulse.analysis import shapes
    from torchpulse.analysis.shapes import NULL_SHAPES

    nulls = [c for (shape, change, *_), c in cells.items() if change == "none"]
    worst_shape, worst = max(((shape, c.share(c.any_change)) for (shape, change, *_), c
                              in cells.items() if change == "none" and shape in NULL_SHAPES),
                             key=lambda x: x[1], default=("-", 0.0))
    constant = cells.get(("constant", "none", 0.0, 0), ShapeScore())
    count = cells.get(("count", "step", 1.0, max(shapes.COUNT_AFTER)), ShapeScore())
    located = count.share(count.located)
    bound = count.share(count.bound)
    return [
        (f"null series of a new shape with any change point (worst: {worst_shape})", worst,
         "< 1 %", worst < 0.01 and bool(nulls)),
        ("exactly constant series with any change point",
         constant.share(constant.any_change), "0 %", constant.series > 0
         and constant.any_change == 0),
        (f"+1 unit on a count that moves by one, {max(shapes.COUNT_AFTER)} commits after: "
         "located within 3 commits", located,
         ">= 95 %", located >= 0.95),
        (f"... the same, against the best single split ({bound * 100:.1f} %, what the data "
         "allow): located within 3 commits", located, f">= {bound * 100:.1f} % - 2.5",
         located >= bound - 0.025),
    ]


def evaluate_shapes(options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """Build the shapes project, run torchpulse alert (active and --history) on it and score
    it: the markdown report, and whether the shape targets were met."""
    from torchpulse.analysis import shapes

    with tempfile.TemporaryDirectory(prefix="torchpulse-shapes-") as tmp:
        project = (options.keep / "shapes") if options.keep is not None else Path(tmp)
        project.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        truths = shapes.build(project, commits=options.shape_commits,
                              per_cell=options.per_cell, seed=options.seed,
                              nulls=options.noise_series)
        progress(f"{len(truths)} shaped series x {options.shape_commits} commits written to "
                 f"{project} ({time.perf_counter() - started:.0f} s)")
        alert_options = ["--alpha", str(options.alpha), "--threshold", str(options.threshold)]
        started = time.perf_counter()
        history_view = alert_json(project, [*alert_options, "--history"])
        active_view = alert_json(project, alert_options)
        took = time.perf_counter() - started
        progress(f"torchpulse on the shapes: {took:.1f} s")
        history = synthetic_history(project)
        cells, matching = score_shapes(truths, history_view, active_view, history,
                                       stored_values(project, history))
    met = shape_targets(cells)
    text = [f"## Series shapes: {len(truths)} series, {options.shape_commits} commits, seed "
            f"{options.seed}", "", f"torchpulse alert, --history and active: {took:.1f} s.",
            "", shape_table(cells, matching), "### torchpulse against the shape targets", "",
            "| target | measured | wanted | |", "|---|---:|---:|---|"]
    text += [f"| {what} | {value * 100:.2f} % | {want} | {'met' if ok else 'MISSED'} |"
             for what, value, want, ok in met]
    return "\n".join(text) + "\n", all(ok for *_, ok in met)
