"""The alert report as markdown, for a pull request's comment or a job's step summary:
every name, unit and command escaped as a table cell or text."""

from __future__ import annotations

from collections import defaultdict

from torchpulse.analysis.model import TOO_FEW, UNSTABLE, Alert, Report
from torchpulse.reports.phrases import (
    behind,
    bisect_command,
    builds_text,
    canary_lines,
    change,
    counts,
    cut,
    gap_text,
    human,
    noise_row,
    noisiest,
    p_text,
    qualifiers,
    reach_text,
    repro_command,
    share_text,
    thresholds_text,
    triage_text,
    triaged_text,
    upper_first,
    what_text,
)
from torchpulse.reports.trust import trust_lines
from torchpulse.text import markdown_cell as _md


def to_markdown(report: Report) -> str:
    lines = [f"## torchpulse: {len(report.alerts)} {what_text(report)}", "",
             f"{report.series_count} series checked; false-discovery rate {report.alpha:g}, "
             f"practical {thresholds_text(report)}. Status: {counts(report)}.", ""]
    reach = reach_text(report)
    if reach:
        lines += [f"{upper_first(reach)}.", ""]
    if triaged_text(report):
        lines += [f"{_md(upper_first(triaged_text(report)))}.", ""]
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
            lines.append(f"| {_md(a.key.name)} | {_md(a.key.machine)} / {_md(a.key.env)} | "
                         f"{_md(human(a.before, a.unit, a.after))} | "
                         f"{_md(human(a.after, a.unit, a.before))} | "
                         f"{_md(change(a))}{qualifiers(a)} | {p_text(a)} | "
                         f"{culprits} |")
        lines.append("")
        for a in alerts:
            if a.triage:
                lines += [f"Triage of {_md(a.key.name)}: {_md(triage_text(a.triage))}", ""]
            if builds_text(a):
                lines += [f"Builds of {_md(a.key.name)}: {_md(builds_text(a))}", ""]
            lines += _functions(a)
            command = repro_command(a)
            if command:
                lines += [f"To measure {_md(a.key.name)} again: {_md(command)}", ""]
            command = bisect_command(report, a)
            if command:
                lines += [f"{gap_text(report, a, f'`{commit[:12]}`')}; to find the culprit "
                          f"of {_md(a.key.name)}: {_md(command)}", ""]
    if not report.alerts:
        lines += ["No regression is active at the newest commit.", ""]
    if report.canary.levels:
        lines += [*(f"{_md(line)}." for line in canary_lines(report)), ""]
    lines += _trust(report)
    lines += ["<details><summary>Noise: "
              f"{report.count(UNSTABLE)} of {report.series_count} series unstable, "
              f"{report.count(TOO_FEW)} with too few commits</summary>", "",
              "| series | cv | within-run cv | min. detectable step | status |",
              "|---|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(map(_md, row)) + " |"
              for row in map(noise_row, noisiest(report))]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _was(f) -> str:
    """' (was NAME)' for a function that moved under another symbol."""
    return f" (was {_md(cut(f.renamed_from, 200))})" if f.renamed_from else ""


def _trust(report: Report) -> list[str]:
    """On a GPU machine, what its series can be trusted for, as a list."""
    said = trust_lines(report)
    return [*(f"- {_md(line.strip())}" if line.startswith("  ") else _md(line)
              for line in said), ""] if said else []


def _functions(a) -> list[str]:
    """The functions (or kernels) behind an alert, as a table; none without them."""
    if not a.functions:
        return []
    what, measure = behind(a)
    return [f"{upper_first(what)} of {_md(a.key.name)} that grew most ({measure}):", "",
            "| name | before | after | change |", "|---|---:|---:|---:|",
            *(f"| {_md(cut(f.name, 200))}{_was(f)} | {f.before:,} | {f.after:,} | "
              f"{f.change:+,}{share_text(a, f.change)} |" for f in a.functions), ""]
