"""The alert report in four formats: text (terminal), markdown (PR comment, step summary),
json (the contract other tools read) and github (workflow annotation lines)."""

from __future__ import annotations

import json
import math
import re
import shlex
from collections import defaultdict
from collections.abc import Callable

from torchpulse.analysis.alert import (
    STATUSES,
    TOO_FEW,
    UNSTABLE,
    Alert,
    Checked,
    Report,
    percent,
)
from torchpulse.analysis.series import COUNT, EXACT, INVERSE_CALLS, TIME, rule_of
from torchpulse.text import markdown_cell as _md
from torchpulse.text import printable
from torchpulse.text import workflow_data as _escape

NOISY_SHOWN = 10  # noisiest series listed in the noise report


def human(value: float, unit: str) -> str:
    """A value in its unit, scaled to read well (seconds -> ms/us, bytes -> MiB ...)."""
    if unit == "seconds":
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value * 1e9:.3g} ns"
    if unit == "bytes":
        for scale, suffix in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value:.0f} B"
    if unit == INVERSE_CALLS and value > 0:  # stored inverted (lower is better): show calls
        return f"{1.0 / value:.4g} calls captured"
    if rule_of(unit) != TIME:  # a count, every digit (6,494,123, not 6.494e+06): a median
        return f"{value:,.0f} {unit}"  # per call may end in .5, which no reader needs
    return f"{value:.4g}" + ("" if unit == "unit" else f" {unit}")


def change(alert: Alert) -> str:
    """The change an alert reports: relative, or absolute when it rose from zero."""
    if not alert.before or alert.unit == INVERSE_CALLS:
        if alert.unit == INVERSE_CALLS and alert.before and alert.after:
            return f"{round(1 / alert.after - 1 / alert.before):+d} calls captured"
        return f"+{human(alert.after - alert.before, alert.unit)}"
    return f"{(alert.ratio - 1) * 100:+.1f}%"


def drift_text(alert: Alert) -> str:
    """'' or the drifts a change is made of: 'drift over 1a2b3c4d..5e6f7a8b'."""
    return ", ".join(f"drift over {a[:8]}..{b[:8]}" for a, b in alert.drifts)


def function_lines(alert: Alert, width: int = 100) -> list[str]:
    """The functions that grew most in the step, one line each: '+41,200  name (1,200 ->
    42,400)'; names longer than ``width`` are cut (C++ templates run to pages)."""
    return [f"{f.change:+,}  {_cut(f.name, width)} ({f.before:,} -> {f.after:,})"
            for f in alert.functions]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _p(alert: Alert) -> str:
    return "n/a" if alert.pvalue is None else f"{alert.pvalue:.2g}"


def qualifiers(alert: Alert) -> str:
    """What the change cell adds to a change: ' (noisy series, measured twice)'."""
    said = [text for flag, text in ((alert.noisy, "noisy series"),
                                    (alert.confirmed, "measured twice")) if flag]
    return f" ({', '.join(said)})" if said else ""


def _name(alert: Alert) -> str:
    key = alert.key
    return key.benchmark + (f"({', '.join(key.params)})" if key.params else "")


def unmeasured(report: Report, alert: Alert) -> int:
    """First-parent commits between the alert's commit and the measured one before it."""
    position = report.history.position if report.history else {}
    if alert.commit not in position or alert.previous_commit not in position:
        return 0
    return max(0, position[alert.commit] - position[alert.previous_commit] - 1)


def gap_text(report: Report, alert: Alert, it: str = "it") -> str:
    """What lies between the alert's commit and the measured one before it: '2 unmeasured
    commit(s) before it', or that some were measured on a disturbed machine (not counted),
    so the step may lie at those as well."""
    n, k = unmeasured(report, alert), len(alert.disturbed_before)
    if not k:
        return f"{n} unmeasured commit(s) before {it}"
    if k >= n:
        return f"{k} commit(s) before {it} measured on a disturbed machine"
    return f"{n} commit(s) before {it} unmeasured or measured on a disturbed machine ({k})"


def bisect_command(report: Report, alert: Alert) -> str | None:
    """The command that finds the culprit among unmeasured commits, when there are any and
    the series is one torchpulse measures (not an imported one)."""
    if not unmeasured(report, alert) or alert.key.benchmark.startswith("external."):
        return None
    return (f"torchpulse bisect {alert.previous_commit[:12]} {alert.commit[:12]} --bench "
            f"{shlex.quote(_name(alert))} --machine {shlex.quote(alert.key.machine)}")


def repro_command(alert: Alert) -> str | None:
    """The one command that measures the change again on the user's machine: the commit
    before it against the newest commit it spans (its commit, or the end of its drift or its
    last culprit, as asv's Regressions tab shows it), this benchmark alone (an exact asv
    --bench). None for an imported series, which torchpulse cannot run."""
    if alert.key.benchmark.startswith("external."):
        return None
    name = _name(alert)
    bench = "^" + re.escape(name) + "$"
    return (f"torchpulse compare {alert.previous_commit[:12]} {alert.last[:12]} --bench "
            f"{shlex.quote(bench)}")


def after_text(alert: Alert, commit: Callable[[str], str]) -> str:
    """'after P' (``commit`` renders a hash), or, for a drift that rises from the first
    commit the series has, that it has none before."""
    if alert.previous_commit == alert.commit:
        return "the series' first commit"
    return f"after {commit(alert.previous_commit)}"


def thresholds_text(report: Report) -> str:
    """'threshold 5%', with the other rules the series checked are judged by:
    'threshold 5%, 1% on instruction counts, any increase on exact counters'."""
    parts = [f"threshold {report.threshold * 100:g}%"]
    if COUNT in report.rules:
        parts.append(f"{report.count_threshold * 100:g}% on instruction counts")
    if EXACT in report.rules:
        parts.append("any increase on exact counters")
    return ", ".join(parts)


def _what(report: Report) -> str:
    return "change points" if report.history_mode else "active regressions"


def _unstable(report: Report) -> list[Checked]:
    return [c for c in report.checked if c.status == UNSTABLE]


def upper_first(text: str) -> str:
    """``text`` as a sentence's start (str.capitalize would lower every other letter)."""
    return text[:1].upper() + text[1:]


def reach_text(report: Report) -> str:
    """'' or what more commits would do for the unstable series, at the noise measured so
    far: how many would then detect a threshold-size step, and from how many commits."""
    unstable = _unstable(report)
    if not unstable:
        return ""
    reach = sorted(c.verdict.noise.reach for c in unstable if c.verdict.noise.reach is not None)
    toggling = sum(c.verdict.noise.toggling for c in unstable)
    never = len(unstable) - len(reach) - toggling
    parts = []
    if reach:
        span = f"{reach[0]}" if reach[0] == reach[-1] else f"{reach[0]} to {reach[-1]}"
        parts.append(f"{len(reach)} would be within the threshold from {span} commits")
    if never:
        parts.append(f"{never} would not at any number (they need a quieter machine or a "
                     "larger threshold)")
    if toggling:
        parts.append(f"{toggling} toggle between levels")
    return f"of {len(unstable)} unstable series, at the noise measured so far: {', '.join(parts)}"


def _noisiest(report: Report) -> list[Checked]:
    judged = [c for c in report.checked if c.status != TOO_FEW]
    return sorted(judged, key=lambda c: -c.verdict.noise.cv)[:NOISY_SHOWN]


def _noise_line(c: Checked) -> tuple[str, str, str, str, str]:
    n = c.verdict.noise
    return (c.series.key.label(), percent(n.cv, 2), percent(n.within_cv), percent(n.mde),
            c.status_text())


def counts(report: Report) -> str:
    """'2 regression, 150 ok, 5 unstable, 6 too few commits (of 163 series)'."""
    parts = [f"{report.count(s)} {s}" for s in STATUSES]
    return f"{', '.join(parts)} (of {report.series_count} series)"


def _span(texts: list[str]) -> str:
    """'a' when every text is the same, else 'lowest to highest' (texts sorted by value)."""
    return texts[0] if len(set(texts)) == 1 else f"{texts[0]} to {texts[-1]}"


def canary_lines(report: Report, only: str | None = None) -> list[str]:
    """What the machine canary said, per machine (or on machine ``only``) and environment,
    and how many points it marked disturbed."""
    canary = report.canary
    places: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    for where in sorted(canary.levels):
        if only is None or where[0] == only:
            places[where[:2]].append(where)
    lines = []
    for (machine, env), keys in places.items():
        readings = [r for r in canary.readings if (r.machine, r.env) == (machine, env)]
        slow = [r for r in readings if r.slow]
        usual = _span([human(v, "seconds") for v in sorted(canary.levels[k] for k in keys)])
        over = _span([percent(v - 1, 0) for v in sorted(canary.limits[k] for k in keys)])
        lines.append(f"machine canary on {machine}/{env}: {len(readings)} readings at "
                     f"{len(keys)} place(s), usually {usual}, {len(slow)} slow (over +{over})"
                     + (f" at {', '.join(sorted({r.commit[:8] for r in slow}))}" if slow
                        else ""))
    disturbed = sum(len(c.disturbed) for c in report.checked
                    if only is None or c.series.key.machine == only)
    if disturbed:
        lines.append(f"{disturbed} point(s) measured next to a slow reading are marked "
                     "disturbed and not counted")
    return lines


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: a number that is not finite is written as null."""
    return value if value is not None and math.isfinite(value) else None


def to_json(report: Report) -> str:
    alerts = [{
        "benchmark": a.key.benchmark, "params": list(a.key.params), "machine": a.key.machine,
        "env": a.key.env, "commit": a.commit, "previous_commit": a.previous_commit,
        "culprits": list(a.culprits), "before": a.before, "after": a.after,
        "ratio": _finite(a.ratio), "unit": a.unit, "pvalue": a.pvalue,
        "direction": a.direction, "noisy": a.noisy,
        "unmeasured_commits": unmeasured(report, a),
        "disturbed_before": list(a.disturbed_before), "confirmed": a.confirmed,
        "bisect": bisect_command(report, a),
        "repro": repro_command(a),
        "drifts": [{"first": first, "last": last} for first, last in a.drifts],
        "functions": [{"name": f.name, "before": f.before, "after": f.after,
                       "change": f.change} for f in a.functions],
    } for a in report.alerts]
    verdicts = [{
        "benchmark": c.series.key.benchmark, "params": list(c.series.key.params),
        "machine": c.series.key.machine, "env": c.series.key.env, "status": c.status,
        "commits": c.commits, "commits_needed": c.needed, "latest": c.series.points[-1].value,
        "unit": c.series.unit, "cv": _finite(c.verdict.noise.cv),
        "within_cv": _finite(c.verdict.noise.within_cv), "mde": _finite(c.verdict.noise.mde),
        "toggling": c.verdict.noise.toggling, "reach": c.verdict.noise.reach,
        "disturbed": list(c.disturbed),
        "status_text": c.status_text(), "rule": c.series.rule,
        "threshold": report.threshold_for(c.series),
    } for c in report.checked]
    canary = {
        "levels": [{"machine": m, "env": e, "benchmark": b, "seconds": level,
                    "slow_above": report.canary.limits[(m, e, b)]}
                   for (m, e, b), level in sorted(report.canary.levels.items())],
        "readings": [{"machine": r.machine, "env": r.env, "commit": r.commit,
                      "benchmark": r.benchmark, "seconds": r.value, "ratio": r.ratio,
                      "slow": r.slow} for r in report.canary.readings],
        "disturbed_points": report.disturbed_points,
    }
    return json.dumps({"alerts": alerts, "series": report.series_count,
                       "thresholds": {"time": report.threshold,
                                      "count": report.count_threshold, "exact": None},
                       "counts": {s: report.count(s) for s in STATUSES},
                       "verdicts": verdicts, "canary": canary}, indent=2) + "\n"


def to_text(report: Report) -> str:
    lines = [f"torchpulse alert: {len(report.alerts)} {_what(report)} in "
             f"{report.series_count} series (alpha {report.alpha:g}, "
             f"{thresholds_text(report)})"]
    for a in report.alerts:
        lines.append(f"  {a.direction.upper():11} {change(a):>7}  {_name(a)}  "
                     f"[{a.key.machine}/{a.key.env}]")
        culprits = (f"; culprits {', '.join(c[:8] for c in a.culprits)}"
                    if len(a.culprits) > 1 else "")
        lines.append(f"              at {a.commit[:8]} ({after_text(a, lambda c: c[:8])}): "
                     f"{human(a.before, a.unit)} -> {human(a.after, a.unit)}, p={_p(a)}"
                     f"{culprits}")
        if a.drifts:
            lines.append(f"              a slow drift, not a step: {drift_text(a)}")
        if a.functions:
            lines.append("              functions that grew most (own instructions a call):")
            lines += [f"                {line}" for line in function_lines(a)]
        if a.noisy:
            lines.append("              on a noisy series: the step clearly exceeds its noise")
        if a.confirmed:
            lines.append(f"              measured twice at {a.commit[:8]}: the step showed "
                         "again")
        command = repro_command(a)
        if command:
            lines.append(f"              measure it again: {command}")
        command = bisect_command(report, a)
        if command:
            lines.append(f"              {gap_text(report, a)}; find the culprit: {command}")
    lines.append(f"status: {counts(report)}")
    reach = reach_text(report)
    if reach:
        lines.append(reach)
    lines += canary_lines(report)
    noisiest = _noisiest(report)
    if noisiest:
        lines.append(f"  {'noisiest series':70} {'cv':>7} {'within':>7} {'mde':>7}  status")
        for label, cv, within, mde, status in map(_noise_line, noisiest):
            lines.append(f"  {label[:70]:70} {cv:>7} {within:>7} {mde:>7}  {status}")
    if report.off_branch_files:
        lines.append(f"note: {report.off_branch_files} results file(s) are for commits "
                     "not on the branch's first-parent history and were left out")
    return "\n".join(printable(line) for line in lines) + "\n"


def to_markdown(report: Report) -> str:
    lines = [f"## torchpulse: {len(report.alerts)} {_what(report)}", "",
             f"{report.series_count} series checked; false-discovery rate {report.alpha:g}, "
             f"practical {thresholds_text(report)}. Status: {counts(report)}.", ""]
    reach = reach_text(report)
    if reach:
        lines += [f"{upper_first(reach)}.", ""]
    by_commit: dict[str, list[Alert]] = defaultdict(list)
    for a in report.alerts:
        by_commit[a.commit].append(a)
    for commit, alerts in by_commit.items():
        noun = "change" if len(alerts) == 1 else "changes"
        lines += [f"### `{commit[:12]}` ({len(alerts)} {noun}, previous "
                  f"`{alerts[0].previous_commit[:12]}`)", "",
                  "| benchmark | machine / env | before | after | change | p | culprits |",
                  "|---|---|---:|---:|---:|---:|---|"]
        for a in alerts:
            culprits = ", ".join([*(f"`{c[:12]}`" for c in a.culprits),
                                  *(f"drift `{f[:12]}`..`{t[:12]}`" for f, t in a.drifts)])
            lines.append(f"| {_md(_name(a))} | {_md(a.key.machine)} / {_md(a.key.env)} | "
                         f"{_md(human(a.before, a.unit))} | {_md(human(a.after, a.unit))} | "
                         f"{_md(change(a))}{qualifiers(a)} | {_p(a)} | "
                         f"{culprits} |")
        lines.append("")
        for a in alerts:
            if a.functions:
                lines += [f"Functions of {_md(_name(a))} that grew most (own instructions a "
                          "call):", "", "| function | before | after | change |",
                          "|---|---:|---:|---:|",
                          *(f"| {_md(_cut(f.name, 200))} | {f.before:,} | {f.after:,} | "
                            f"{f.change:+,} |" for f in a.functions), ""]
            command = repro_command(a)
            if command:
                lines += [f"To measure {_md(_name(a))} again: {_md(command)}", ""]
            command = bisect_command(report, a)
            if command:
                lines += [f"{gap_text(report, a, f'`{commit[:12]}`')}; to find the culprit "
                          f"of {_md(_name(a))}: {_md(command)}", ""]
    if not report.alerts:
        lines += ["No regression is active at the newest commit.", ""]
    if report.canary.levels:
        lines += [*(f"{_md(line)}." for line in canary_lines(report)), ""]
    lines += ["<details><summary>Noise: "
              f"{report.count(UNSTABLE)} of {report.series_count} series unstable, "
              f"{report.count(TOO_FEW)} with too few commits</summary>", "",
              "| series | cv | within-run cv | min. detectable step | status |",
              "|---|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(map(_md, row)) + " |"
              for row in map(_noise_line, _noisiest(report))]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def to_github(report: Report) -> str:
    lines = []
    for a in report.alerts:
        level = "error" if a.direction == "regression" else "notice"
        lines.append(f"::{level} title={_escape(a.direction.capitalize())} "
                     f"{_escape(change(a))}::{_escape(_name(a))} on {_escape(a.key.machine)}/"
                     f"{_escape(a.key.env)}: {_escape(human(a.before, a.unit))} -> "
                     f"{_escape(human(a.after, a.unit))} at {a.commit[:12]}"
                     + (f" or at {', '.join(c[:12] for c in a.disturbed_before)} (measured on "
                        "a disturbed machine)" if a.disturbed_before else "")
                     + (f" ({_escape(drift_text(a))})" if a.drifts else "")
                     + (f"; grew most: {_escape(_cut(a.functions[0].name, 100))} "
                        f"({a.functions[0].change:+,} instructions a call)"
                        if a.functions else "")
                     + f" (p={_p(a)}{', measured twice' if a.confirmed else ''})"
                     + (f"; measure it again: {_escape(repro_command(a))}"
                        if repro_command(a) else ""))
    if report.disturbed_points:
        said = "; ".join(canary_lines(report))
        lines.append(f"::warning title=Disturbed machine::{_escape(said)}")
    for c in _unstable(report):
        lines.append(f"::warning title=Unstable benchmark::{_escape(c.series.key.label())}: "
                     f"{_escape(c.status_text())}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(report: Report, fmt: str) -> str:
    return {"text": to_text, "markdown": to_markdown, "json": to_json,
            "github": to_github}[fmt](report)
