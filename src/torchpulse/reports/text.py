"""The alert report for a terminal: one block an alert, the status counts, the canary and
the noisiest series; control characters shown as escapes."""

from __future__ import annotations

from torchpulse.analysis.model import Report
from torchpulse.reports.phrases import (
    after_text,
    below_text,
    bisect_command,
    builds_text,
    canary_lines,
    change,
    counts,
    drift_text,
    function_lines,
    functions_heading,
    gap_text,
    levels_text,
    noise_row,
    noisiest,
    p_text,
    reach_text,
    repro_command,
    thresholds_text,
    triage_text,
    triaged_text,
    what_text,
)
from torchpulse.reports.trust import trust_lines
from torchpulse.results.triage import FIXED
from torchpulse.text import printable


def to_text(report: Report) -> str:
    lines = [f"torchpulse alert: {len(report.alerts)} {what_text(report)} in "
             f"{report.series_count} series (alpha {report.alpha:g}, "
             f"{thresholds_text(report)})"]
    for a in report.alerts:
        lines.append(f"  {a.direction.upper():11} {change(a):>7}  {a.key.name}  "
                     f"[{a.key.machine}/{a.key.env}]")
        culprits = (f"; culprits {', '.join(c[:8] for c in a.culprits)}"
                    if len(a.culprits) > 1 else "")
        lines.append(f"              at {a.commit[:8]} ({after_text(a, lambda c: c[:8])}): "
                     f"{levels_text(a.before, a.after, a.unit)}, p={p_text(a)}"
                     f"{culprits}")
        if a.below_threshold:
            lines.append(f"              {below_text(a)}")
        if a.triage:
            lines.append(f"              triage: {triage_text(a.triage)}"
                         + (" (the level is not back)" if a.triage.state == FIXED
                            and not report.history_mode else ""))
        if a.drifts:
            lines.append(f"              a slow drift, not a step: {drift_text(a)}")
        if builds_text(a):
            lines.append(f"              builds: {builds_text(a)}")
        if a.functions:
            lines.append(f"              {functions_heading(a)}:")
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
    if triaged_text(report):
        lines.append(triaged_text(report))
    reach = reach_text(report)
    if reach:
        lines.append(reach)
    lines += canary_lines(report)
    lines += trust_lines(report)
    noisy = noisiest(report)
    if noisy:
        lines.append(f"  {'noisiest series':70} {'cv':>7} {'within':>7} {'mde':>7}  status")
        for label, cv, within, mde, status in map(noise_row, noisy):
            lines.append(f"  {label[:70]:70} {cv:>7} {within:>7} {mde:>7}  {status}")
    if report.off_branch_files:
        lines.append(f"note: {report.off_branch_files} results file(s) are for commits "
                     "not on the branch's first-parent history and were left out")
    return "\n".join(printable(line) for line in lines) + "\n"
