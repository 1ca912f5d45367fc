"""`torchpulse evaluate-detection`: build each family's project, ask every detector, score
them and write the report (experiments/diary/detection.md)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchpulse.analysis.defaults import DEFAULT_ALPHA, DEFAULT_THRESHOLD
from torchpulse.evaluation import moving, shapes, synthetic
from torchpulse.evaluation import project as evaluation_project
from torchpulse.evaluation.detectors import (
    EvaluationError,
    alert_json,
    otava_python,
    run_detectors,
    stored_values,
)
from torchpulse.evaluation.scoring import score, score_shapes
from torchpulse.evaluation.tables import moving_report, report, shape_report


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
    shape_commits: int = 100  # commits of the shapes and moving families


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
    if "moving" in options.families:
        text, ok = evaluate_moving(options, progress)
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


def evaluate_shapes(options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """Build the shapes project, run torchpulse alert (active and --history) on it and score
    it: the markdown report, and whether the shape targets were met."""
    return _evaluate_family("shapes", shapes.build, shape_report, options, progress)


def evaluate_moving(options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """The same for the moving family (torchpulse.evaluation.moving)."""
    return _evaluate_family("moving", moving.build, moving_report, options, progress)


def _evaluate_family(name: str, build: Callable[..., list], write: Callable[..., tuple],
                     options: Options, progress: Callable[[str], None]) -> tuple[str, bool]:
    """Build a family's project, run torchpulse alert (active and --history) on it and score
    it with the shapes' scoring: ``write``'s report, and whether its targets were met."""
    with tempfile.TemporaryDirectory(prefix=f"torchpulse-{name}-") as tmp:
        project = (options.keep / name) if options.keep is not None else Path(tmp)
        project.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        truths = build(project, commits=options.shape_commits, per_cell=options.per_cell,
                       seed=options.seed, nulls=options.noise_series)
        noun = "shaped series" if name == "shapes" else f"{name} series"
        progress(f"{len(truths)} {noun} x {options.shape_commits} commits written to "
                 f"{project} ({time.perf_counter() - started:.0f} s)")
        alert_options = ["--alpha", str(options.alpha), "--threshold", str(options.threshold)]
        started = time.perf_counter()
        history_view = alert_json(project, [*alert_options, "--history"])
        active_view = alert_json(project, alert_options)
        took = time.perf_counter() - started
        progress(f"torchpulse on the {name}: {took:.1f} s")
        history = evaluation_project.history(project)
        cells, matching = score_shapes(truths, history_view, active_view, history,
                                       stored_values(project, history))
    return write(len(truths), options.shape_commits, options.seed, took, cells, matching)
