"""One series as a small inline SVG for the summary page: its values at the newest commits,
the points measured on a disturbed machine drawn hollow, the change points detection found as
vertical rules, and the baseline with the band of +-threshold around it shaded. Inline SVG,
so the page still loads nothing and runs no script."""

from __future__ import annotations

import math
from html import escape

from torchpulse.analysis.columns import undisturbed, values_of
from torchpulse.analysis.model import Checked
from torchpulse.reports.phrases import human

WIDTH, HEIGHT = 150, 34  # px, the size of a line of the table
PAD = 3  # px around the plot, so dots on the edge stay whole
NEWEST = 60  # commits drawn: the recent past a verdict rests on, not years of history


def baseline(checked: Checked) -> float | None:
    """What the newest level is judged against: the alert's baseline, or else the median of
    the undisturbed values since the last change point (None: none counted)."""
    verdict = checked.verdict
    if checked.alert is not None:
        return checked.alert.before
    counted = values_of(undisturbed(checked.series.points)).tolist()
    if verdict.change_points:
        counted = counted[verdict.change_points[-1].index:]
    counted = [v for v in counted if math.isfinite(v)]
    if not counted:
        return None
    counted.sort()
    mid = len(counted) // 2
    return counted[mid] if len(counted) % 2 else (counted[mid - 1] + counted[mid]) / 2


def render(checked: Checked, threshold: float | None, newest: int = NEWEST) -> str:
    """The chart of ``checked``'s series: ``<svg class="spark">`` or '' when nothing to draw.
    ``threshold`` None (an exact counter: any increase counts): the baseline, with no band."""
    points = checked.series.points
    first = max(0, len(points) - newest)
    shown = [(i, p) for i, p in ((i, points[i]) for i in range(first, len(points)))
             if math.isfinite(p.value)]  # the newest only: a long history's points stay unmade
    if not shown:
        return ""
    unit = checked.series.unit
    base = baseline(checked)
    band = (base * (1 - (threshold or 0.0)), base * (1 + (threshold or 0.0))
            ) if base is not None else None
    values = [p.value for _, p in shown] + (list(band) if band else [])
    log = all(v > 0 for v in values)  # a ratio reads the same at every level
    scaled = [math.log(v) if log else v for v in values]
    low, high = min(scaled), max(scaled)
    if high - low < 1e-12:  # a constant: a flat line through the middle
        low, high = low - 1.0, high + 1.0

    def y(value: float) -> float:
        v = math.log(value) if log else value
        return round(HEIGHT - PAD - (v - low) / (high - low) * (HEIGHT - 2 * PAD), 1)

    span = max(len(points) - 1 - first, 1)

    def x(index: int) -> float:
        return round(PAD + (index - first) / span * (WIDTH - 2 * PAD), 1)

    out = [f'<svg class="spark" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="'
           f'{escape(_label(checked, len(shown), base, unit))}">']
    if band is not None:
        top, bottom = y(band[1]), y(band[0])
        out.append(f'<rect class="band" x="{PAD}" y="{top}" width="{WIDTH - 2 * PAD}" '
                   f'height="{round(bottom - top, 1)}"><title>baseline '
                   f'{escape(human(base, unit))}, '
                   f'{"+-" + format(threshold * 100, "g") + "%" if threshold else "any increase"}'
                   '</title></rect>')
        out.append(f'<line class="baseline" x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(base)}" '
                   f'y2="{y(base)}"/>')
    counted = [i for i, p in enumerate(points) if not p.disturbed]
    for cp in checked.verdict.change_points:
        at = counted[cp.index]
        if at >= first:
            out.append(f'<line class="change" x1="{x(at)}" x2="{x(at)}" y1="0" y2="{HEIGHT}">'
                       f"<title>change point at {escape(points[at].commit[:8])}: "
                       f"{(cp.ratio - 1) * 100:+.1f}%</title></line>")
    line = [(i, p) for i, p in shown if not p.disturbed]
    if line:
        coords = " ".join(f"{x(i)},{y(p.value)}" for i, p in line)
        out.append(f'<polyline class="levels" points="{coords}"/>')
    for i, p in shown:
        if p.disturbed:
            out.append(f'<circle class="disturbed" cx="{x(i)}" cy="{y(p.value)}" r="2.2">'
                       f"<title>{escape(p.commit[:8])}: {escape(human(p.value, unit))}, "
                       "measured on a disturbed machine (not counted)</title></circle>")
    last_i, last = shown[-1]
    if not last.disturbed:
        out.append(f'<circle class="newest" cx="{x(last_i)}" cy="{y(last.value)}" r="2">'
                   f"<title>{escape(last.commit[:8])}: {escape(human(last.value, unit))}"
                   "</title></circle>")
    out.append("</svg>")
    return "".join(out)


def _label(checked: Checked, shown: int, base: float | None, unit: str) -> str:
    parts = [f"{shown} commits", f"{len(checked.verdict.change_points)} change points"]
    disturbed = len(checked.disturbed)
    if disturbed:
        parts.append(f"{disturbed} disturbed")
    if base is not None:
        parts.append(f"baseline {human(base, unit)}")
    return ", ".join(parts)


STYLE = """
svg.spark { display: block; }
svg.spark .band { fill: #e3ecf7; }
svg.spark .baseline { stroke: #8aa6c8; stroke-width: 1; stroke-dasharray: 2 2; }
svg.spark .change { stroke: #b00020; stroke-width: 1; opacity: 0.7; }
svg.spark .levels { fill: none; stroke: #333; stroke-width: 1.2; }
svg.spark .disturbed { fill: #fff; stroke: #d08a00; stroke-width: 1.2; }
svg.spark .newest { fill: #333; }
"""
