"""The markdown evaluate-detection prints: per family, the tables of what each detector found
and torchpulse against its targets."""

from __future__ import annotations

import os
import sys

from torchpulse.evaluation.scoring import (
    SHAPE_MARGIN,
    Matching,
    Score,
    ShapeScore,
    moving_targets,
    shape_targets,
    targets,
)
from torchpulse.evaluation.synthetic import DISTANCES, NOISE_CVS, QUIET_KINDS, STEP_SIZES


def _pct(x: float) -> str:
    return "  -  " if x != x else f"{x * 100:5.1f}"


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


def shape_table(cells: dict[tuple, ShapeScore], matching: Matching,
                heading: str = "Series shapes the generator does not make") -> str:
    lines = [f"### {heading} (% of series)", "",
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


def shape_report(series: int, commits: int, seed: int, took: float,
                 cells: dict[tuple, ShapeScore], matching: Matching) -> tuple[str, bool]:
    """The shapes family's markdown report, and whether the shape targets were met."""
    met = shape_targets(cells)
    text = [f"## Series shapes: {series} series, {commits} commits, seed {seed}", "",
            f"torchpulse alert, --history and active: {took:.1f} s.",
            "", shape_table(cells, matching), "### torchpulse against the shape targets", "",
            "| target | measured | wanted | |", "|---|---:|---:|---|"]
    text += [f"| {what} | {value * 100:.2f} % | {want} | {'met' if ok else 'MISSED'} |"
             for what, value, want, ok in met]
    return "\n".join(text) + "\n", all(ok for *_, ok in met)


def moving_report(series: int, commits: int, seed: int, took: float,
                  cells: dict[tuple, ShapeScore], matching: Matching) -> tuple[str, bool]:
    """The moving family's markdown report, and whether its targets were met."""
    met = moving_targets(cells)
    text = [f"## Series that move for other reasons: {series} series, {commits} commits, "
            f"seed {seed}", "", f"torchpulse alert, --history and active: {took:.1f} s.", "",
            shape_table(cells, matching, "Series that move for other reasons"),
            "### torchpulse against the moving family's targets", "",
            "| target | measured | wanted | |", "|---|---:|---:|---|"]
    text += [f"| {what} | {value * 100:.2f} % | {want} | {'met' if ok else 'MISSED'} |"
             for what, value, want, ok in met]
    return "\n".join(text) + "\n", all(ok for *_, ok in met)
