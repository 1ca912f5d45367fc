"""The alert report as GitHub workflow commands: an annotation an alert, a warning for a
disturbed machine and each unstable series; their data escaped as workflow commands ask."""

from __future__ import annotations

from torchpulse.analysis.model import Report
from torchpulse.reports.phrases import (
    behind,
    canary_lines,
    change,
    cut,
    drift_text,
    levels_text,
    p_text,
    repro_command,
    status_text,
    triage_text,
    unstable,
)
from torchpulse.text import workflow_data as _escape


def to_github(report: Report) -> str:
    lines = []
    for a in report.alerts:
        level = "error" if a.direction == "regression" and not a.below_threshold \
            else "notice"
        title = a.direction.capitalize() + (" below threshold" if a.below_threshold else "")
        lines.append(f"::{level} title={_escape(title)} "
                     f"{_escape(change(a))}::{_escape(a.key.name)} on "
                     f"{_escape(a.key.machine)}/"
                     f"{_escape(a.key.env)}: {_escape(levels_text(a.before, a.after, a.unit))} "
                     f"at {a.commit[:12]}"
                     + (f" or at {', '.join(c[:12] for c in a.disturbed_before)} (measured on "
                        "a disturbed machine)" if a.disturbed_before else "")
                     + (f" ({_escape(drift_text(a))})" if a.drifts else "")
                     + (f"; triage: {_escape(triage_text(a.triage))}" if a.triage else "")
                     + (f"; grew most: {_escape(cut(a.functions[0].name, 100))} "
                        f"({a.functions[0].change:+,} "
                        f"{_escape(behind(a)[1])})"
                        if a.functions else "")
                     + f" (p={p_text(a)}{', measured twice' if a.confirmed else ''})"
                     + (f"; measure it again: {_escape(repro_command(a))}"
                        if repro_command(a) else ""))
    if report.disturbed_points:
        said = "; ".join(canary_lines(report))
        lines.append(f"::warning title=Disturbed machine::{_escape(said)}")
    for c in unstable(report):
        lines.append(f"::warning title=Unstable benchmark::{_escape(c.series.key.label())}: "
                     f"{_escape(status_text(c))}")
    return "\n".join(lines) + ("\n" if lines else "")
