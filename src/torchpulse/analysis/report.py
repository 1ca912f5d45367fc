"""The alert report in four formats: text (terminal), markdown (PR comment, step summary),
json (the contract other tools read) and github (workflow annotation lines)."""

from __future__ import annotations

import json
from collections import defaultdict

from torchpulse.analysis.alert import Alert, Checked, Report

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
    return f"{value:.4g}" + ("" if unit == "unit" else f" {unit}")


def _change(alert: Alert) -> str:
    return f"{(alert.ratio - 1) * 100:+.1f}%"


def _p(alert: Alert) -> str:
    return "n/a" if alert.pvalue is None else f"{alert.pvalue:.2g}"


def _name(alert: Alert) -> str:
    key = alert.key
    return key.benchmark + (f"({', '.join(key.params)})" if key.params else "")


def _what(report: Report) -> str:
    return "change points" if report.history_mode else "active regressions"


def _unstable(report: Report) -> list[Checked]:
    return [c for c in report.checked if c.verdict.noise.unstable]


def _noisiest(report: Report) -> list[Checked]:
    return sorted(report.checked, key=lambda c: -c.verdict.noise.cv)[:NOISY_SHOWN]


def _noise_line(c: Checked) -> tuple[str, str, str, str, str]:
    n = c.verdict.noise
    within = "-" if n.within_cv is None else f"{n.within_cv * 100:.1f}%"
    mde = "inf" if n.mde == float("inf") else f"{n.mde * 100:.1f}%"
    return (c.series.key.label(), f"{n.cv * 100:.2f}%", within, mde,
            "unstable" if n.unstable else "ok")


def to_json(report: Report) -> str:
    alerts = [{
        "benchmark": a.key.benchmark, "params": list(a.key.params), "machine": a.key.machine,
        "env": a.key.env, "commit": a.commit, "previous_commit": a.previous_commit,
        "before": a.before, "after": a.after, "ratio": a.ratio, "unit": a.unit,
        "pvalue": a.pvalue, "direction": a.direction,
    } for a in report.alerts]
    return json.dumps({"alerts": alerts, "series": report.series_count}, indent=2) + "\n"


def to_text(report: Report) -> str:
    lines = [f"torchpulse alert: {len(report.alerts)} {_what(report)} in "
             f"{report.series_count} series (alpha {report.alpha:g}, threshold "
             f"{report.threshold * 100:g}%)"]
    for a in report.alerts:
        lines.append(f"  {a.direction.upper():11} {_change(a):>7}  {_name(a)}  "
                     f"[{a.key.machine}/{a.key.env}]")
        lines.append(f"              at {a.commit[:8]} (after {a.previous_commit[:8]}): "
                     f"{human(a.before, a.unit)} -> {human(a.after, a.unit)}, p={_p(a)}")
    unstable = _unstable(report)
    lines.append(f"noise: {len(unstable)} of {report.series_count} series too noisy for the "
                 f"threshold (smallest detectable step above {report.threshold * 100:g}%)")
    if report.checked:
        lines.append(f"  {'series':60} {'cv':>7} {'within':>7} {'mde':>7}")
        for label, cv, within, mde, flag in map(_noise_line, _noisiest(report)):
            lines.append(f"  {label[:60]:60} {cv:>7} {within:>7} {mde:>7}  {flag}")
    if report.off_branch_files:
        lines.append(f"note: {report.off_branch_files} results file(s) are for commits "
                     "not on the branch's first-parent history and were left out")
    return "\n".join(lines) + "\n"


def to_markdown(report: Report) -> str:
    lines = [f"## torchpulse: {len(report.alerts)} {_what(report)}", "",
             f"{report.series_count} series checked; false-discovery rate {report.alpha:g}, "
             f"practical threshold {report.threshold * 100:g}%.", ""]
    by_commit: dict[str, list[Alert]] = defaultdict(list)
    for a in report.alerts:
        by_commit[a.commit].append(a)
    for commit, alerts in by_commit.items():
        noun = "change" if len(alerts) == 1 else "changes"
        lines += [f"### `{commit[:12]}` ({len(alerts)} {noun}, previous "
                  f"`{alerts[0].previous_commit[:12]}`)", "",
                  "| benchmark | machine / env | before | after | change | p |",
                  "|---|---|---:|---:|---:|---:|"]
        for a in alerts:
            lines.append(f"| `{_name(a)}` | {a.key.machine} / {a.key.env} | "
                         f"{human(a.before, a.unit)} | {human(a.after, a.unit)} | "
                         f"{_change(a)} | {_p(a)} |")
        lines.append("")
    if not report.alerts:
        lines += ["No regression is active at the newest commit.", ""]
    unstable = _unstable(report)
    lines += ["<details><summary>Noise: "
              f"{len(unstable)} of {report.series_count} series flagged unstable</summary>", "",
              "| series | cv | within-run cv | min. detectable step | |",
              "|---|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in map(_noise_line, _noisiest(report))]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _escape(text: str) -> str:
    """GitHub workflow-command data: %, CR and LF must be escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def to_github(report: Report) -> str:
    lines = []
    for a in report.alerts:
        level = "error" if a.direction == "regression" else "notice"
        lines.append(f"::{level} title={_escape(a.direction.capitalize())} "
                     f"{_escape(_change(a))}::{_escape(_name(a))} on {_escape(a.key.machine)}/"
                     f"{_escape(a.key.env)}: {_escape(human(a.before, a.unit))} -> "
                     f"{_escape(human(a.after, a.unit))} at {a.commit[:12]} (p={_p(a)})")
    for c in _unstable(report):
        n = c.verdict.noise
        lines.append(f"::warning title=Unstable benchmark::{_escape(c.series.key.label())}: "
                     f"noise {_escape(f'{n.cv * 100:.1f}%')} hides steps under "
                     f"{_escape(f'{n.mde * 100:.1f}%')}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(report: Report, fmt: str) -> str:
    return {"text": to_text, "markdown": to_markdown, "json": to_json,
            "github": to_github}[fmt](report)
