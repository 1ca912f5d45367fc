"""The site's torchpulse page: the summary per machine and the alert report, as one static
HTML file next to asv's index.html (no scripts, nothing loaded from elsewhere): each series
with a small inline chart of its recent values, and a filter by status made of radio buttons
and CSS alone."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from torchpulse.analysis.detector import least_points
from torchpulse.analysis.model import STATUSES, Alert, Report
from torchpulse.analysis.series import SeriesKey
from torchpulse.analysis.triage import Mark
from torchpulse.kinds import COUNT
from torchpulse.reports.phrases import (
    after_text,
    build_name,
    builds_text,
    canary_lines,
    change,
    counts,
    function_lines,
    functions_heading,
    human,
    p_text,
    qualifiers,
    reach_text,
    repro_command,
    status_text,
    thresholds_said,
    thresholds_text,
    triage_text,
    triaged_text,
    upper_first,
)
from torchpulse.reports.trust import trust_lines
from torchpulse.results.triage import FILE as TRIAGE_FILE
from torchpulse.results.triage import FIXED
from torchpulse.site import sparkline
from torchpulse.site.names import ALERTS_JSON, PAGE  # noqa: F401 (page.PAGE, as before)
from torchpulse.site.summary import NOTABLE_SIGMAS, MachineSummary, Row, Summary

_ICON = '<link rel="icon" href="swallow.ico">'  # asv's, beside index.html

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: left; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td { overflow-wrap: anywhere; }  /* long dotted names break, so the status stays in view */
td.status { min-width: 14em; max-width: 30em; overflow-wrap: normal; }
td.env { font-size: 0.8em; }
.regression, .up { color: #b00020; font-weight: 600; }
.down { color: #1b7a1b; }
.unstable { color: #9a6700; }
.muted { color: #777; }
.disturbed { background: #fff4d6; }
code { font-size: 0.95em; }
td.chart { padding: 0.1em 0.5em; }
.triage { font-weight: 600; }
td.triage { white-space: nowrap; }
.triage.accepted, .triage.fixed { color: #1b5e20; }
.triage.invalid, .triage.infrastructure { color: #555; }
.triage.investigating { color: #8a5a00; }
form.filter { margin: 0.5em 0 1em; }
form.filter label { margin-right: 1em; }
"""


_LEGEND = ('<p class="muted legend">Recent commits: the values at the newest commits, oldest on '
           "the left; a hollow orange dot was measured on a disturbed machine (not counted), a "
           "red rule is a change point, the dashed line is the baseline the newest value is "
           "judged against, and the shaded band the threshold around it.</p>")


def _status_id(status: str) -> str:
    return "show-" + status.replace(" ", "-")


def _filter_style() -> str:
    """Checking a status's radio button hides the series rows of every other status."""
    return "".join(
        f"body:has(#{_status_id(s)}:checked) tr.series:not([data-status=\"{s}\"]) "
        "{ display: none; }\n" for s in STATUSES)


def _filter(report: Report) -> str:
    tally = {s: sum(c.status == s for c in report.checked) for s in STATUSES}
    buttons = ['<label><input type="radio" name="status" id="show-all" checked> all '
               f"({len(report.checked)})</label>"]
    buttons += [f'<label><input type="radio" name="status" id="{_status_id(s)}"> '
                f"{escape(s)} ({n})</label>" for s, n in tally.items()]
    return f'<form class="filter">Show series: {"".join(buttons)}</form>'


def _hash_url(key: SeriesKey, names: tuple[str, ...]) -> str:
    """asv's graph page for one series (index.html#name?machine=...&p-param=value)."""
    def enc(text: str) -> str:  # JavaScript's encodeURIComponent, which asv decodes
        return quote(text, safe="-_.!~*'()")

    args = [f"machine={enc(key.machine)}"]
    args += [f"p-{enc(n)}={enc(v)}" for n, v in zip(names, key.params, strict=False)]
    return f"index.html#{enc(key.benchmark)}?{'&'.join(args)}"


def _params(row: Row) -> str:
    if not row.key.params:
        return ""
    names = row.param_names or tuple(f"#{i}" for i in range(len(row.key.params)))
    return ", ".join(f"{n}={v}" for n, v in zip(names, row.key.params, strict=False))


def _pct(value: float, signed: bool = False) -> str:
    if value == float("inf"):
        return "inf"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _commit(sha: str) -> str:
    return f'<code title="{escape(sha)}">{escape(sha[:8])}</code>'


def _alert_rows(alerts: list[Alert], names: dict[str, tuple[str, ...]],
                charts: dict[SeriesKey, str]) -> list[str]:
    rows = []
    for a in alerts:
        name = a.key.name
        url = _hash_url(a.key, names.get(a.key.benchmark, ()))
        rows.append(
            f'<tr class="alert"><td class="num {"up" if a.direction == "regression" else "down"}">'
            f"{escape(change(a) + qualifiers(a))}</td>"
            f'<td><a href="{escape(url)}">{escape(name)}</a></td>'
            f'<td class="chart">{charts.get(a.key, "")}</td><td>{escape(a.key.env)}</td>'
            f"<td>{_commit(a.commit)} ({after_text(a, _commit)})"
            + (f"; culprits {', '.join(_commit(c) for c in a.culprits)}"
               if len(a.culprits) > 1 else "")
            + "".join(f"; drift over {_commit(f)}..{_commit(t)}" for f, t in a.drifts)
            + (f"; {', '.join(_commit(c) for c in a.disturbed_before)} between, measured on a "
               "disturbed machine" if a.disturbed_before else "")
            + (f'<br>measure it again: <code class="repro">{escape(repro_command(a))}</code>'
               if repro_command(a) else "")
            + (f"<br>builds: {escape(builds_text(a))}" if builds_text(a) else "")
            + (f'<br><span class="triage {escape(a.triage.state)}">triage: '
               f"{escape(triage_text(a.triage))}"
               + (" (the level is not back)" if a.triage.state == FIXED else "") + "</span>"
               if a.triage else "")
            + (f'<details class="functions"><summary>{escape(functions_heading(a))}'
               "</summary><ul>"
               + "".join(f"<li><code>{escape(line)}</code></li>"
                         for line in function_lines(a, 200)) + "</ul></details>"
               if a.functions else "") + "</td>"
            f'<td class="num">{escape(human(a.before, a.unit, a.after))}</td>'
            f'<td class="num">{escape(human(a.after, a.unit, a.before))}</td>'
            f'<td class="num">{p_text(a)}</td></tr>')
    return rows


def _series_row(row: Row, show_env: bool, chart: str) -> str:
    change = row.change
    if change is None:
        change_cell = '<td class="num muted">-</td>'
    else:
        direction = "up" if change > 0 else "down"
        cls = f"num {direction}" if row.notable else "num"
        change_cell = f'<td class="{cls}">{_pct(change, signed=True)}</td>'
    noise = row.noise
    cv = _pct(noise.cv) if noise else "-"
    mde = _pct(noise.mde) if noise else "-"
    env = f'<td class="env">{escape(row.key.env)}</td>' if show_env else ""
    status_cls = row.status.replace(" ", "-")
    latest = (f'<td class="num disturbed" title="measured on a disturbed machine: not counted">'
              f"{escape(human(row.latest, row.unit))} (disturbed)</td>" if row.latest_disturbed
              else f'<td class="num">{escape(human(row.latest, row.unit))}</td>')
    return (f'<tr class="series" data-status="{escape(row.status)}" '
            f'data-disturbed="{len(row.checked.disturbed)}">'
            f'<td><a href="{escape(_hash_url(row.key, row.param_names))}">'
            f"{escape(row.key.benchmark)}</a></td><td>{escape(_params(row))}</td>{env}"
            f'<td class="chart">{chart}</td>'
            f"{latest}{change_cell}"
            f'<td class="num">{cv}</td><td class="num">{mde}</td>'
            f'<td class="num">{row.commits}</td>'
            f'<td class="status {status_cls}">{escape(status_text(row.checked))}</td></tr>')


def _described(info: dict[str, str]) -> str:
    ram = info.get("ram", "")
    if ram.isdigit():  # asv records bytes
        ram = human(float(ram), "bytes")
    parts = (info.get("cpu", ""), f"{info['num_cpu']} cores" if info.get("num_cpu") else "",
             info.get("os", ""), f"{ram} RAM" if ram else "")
    return " · ".join(escape(x) for x in parts if x)


def _series_table(rows: list[Row], charts: dict[SeriesKey, str]) -> list[str]:
    show_env = len({r.key.env for r in rows}) > 1
    env_head = "<th>environment</th>" if show_env else ""
    return [f'<table class="series"><thead><tr><th>benchmark</th><th>parameters</th>{env_head}'
            f'<th title="the newest {sparkline.NEWEST} commits">recent commits</th>'
            "<th>latest</th><th>change since previous commit</th><th>noise (cv)</th>"
            "<th>smallest detectable step</th><th>commits</th><th>status</th></tr></thead>"
            "<tbody>", *(_series_row(r, show_env, charts[r.key]) for r in rows), "</tbody></table>"]


def _counted_text(m: MachineSummary, threshold: float) -> str:
    """What the instruction family holds for this machine, or why it holds nothing."""
    counted = sum(r.checked.series.rule == COUNT for r in m.current)
    if counted:
        return (f"{counted} series count instructions under callgrind (CPU workloads, a "
                f"{threshold * 100:g}% step is worth an alert; the compile zoo is not "
                "counted).")
    return ("No instruction counts at the newest commit: CUDA runs, machines without "
            "valgrind and the compile zoo are not counted (docs/instructions.md).")


def _trust_html(report: Report, machine: str) -> str:
    """On a GPU machine: which of its series to trust at which threshold, and why not wall
    time where it cannot be (reports.trust)."""
    lines = trust_lines(report, machine)
    if not lines:
        return ""
    return (f'<div class="trust"><p>{escape(lines[0])}</p><ul>'
            + "".join(f"<li>{escape(line.strip())}</li>" for line in lines[1:]) + "</ul></div>")


def _machine(m: MachineSummary, report: Report) -> list[str]:
    described = _described(m.info)
    names = {r.key.benchmark: r.param_names for r in m.rows}
    charts = {r.key: sparkline.render(r.checked, report.threshold_for(r.checked.series))
              for r in m.rows}
    out = [f'<section class="machine" id="machine-{escape(m.name)}">',
           f"<h2>{escape(m.name)}</h2>",
           f'<p class="muted">{described}</p>' if described else "",
           f"<p>{len(m.current)} series measured at the newest commit, "
           f"{_commit(m.newest_commit)}{_built_with(m, m.newest_commit)}.</p>",
           f'<p class="muted instructions">{_counted_text(m, report.settings.count_threshold)}</p>',
           _trust_html(report, m.name),
           "<h3>Alerts</h3>"]
    if m.alerts:
        out += ['<table class="alerts"><thead><tr><th>change</th><th>benchmark</th>'
                "<th>recent commits</th><th>environment</th><th>first commit at the new level</th>"
                "<th>before</th><th>after</th><th>p</th></tr></thead><tbody>",
                *_alert_rows(m.alerts, names, charts), "</tbody></table>"]
    else:
        out.append("<p>No regression is active at the newest commit.</p>")
    out += _triaged_table([t for t in report.marks if t.detected and t.key.machine == m.name],
                          {a.key for a in report.alerts})
    tally = ", ".join(f"{sum(r.status == s for r in m.current)} {s}" for s in STATUSES)
    out += ["<h3>Benchmarks</h3>",
            f'<p class="status-counts">Status of the {len(m.current)} series measured at the '
            f"newest commit: {tally}.</p>",
            f'<p class="muted">unstable: too noisy for its threshold '
            f"({escape(thresholds_said(report.settings, exact=False))}; its "
            "smallest detectable step is shown). too few commits: fewer than "
            f"{least_points(False)} commits, so its noise is unknown (an exact counter needs "
            f"{least_points(True)}: any increase in one is a regression). A change since the "
            f"previous commit is coloured when it exceeds {NOTABLE_SIGMAS:g} standard deviations "
            "of the difference of two runs. disturbed: measured while the machine canary ran slow "
            "(another job, throttling); shown, but not counted by the detection.</p>",
            *(f'<p class="canary">{escape(line)}.</p>' for line in canary_lines(report, m.name)),
            *_series_table(m.current, charts)]
    if m.builds:
        out += _builds_table(m)
    if m.stale:
        out += [f"<details><summary>{len(m.stale)} series not measured at the newest commit "
                "(renamed or removed benchmarks, older environments)</summary>",
                *_series_table(m.stale, charts), "</details>"]
    out.append("</section>")
    return [line for line in out if line]


def _triaged_table(marks: list[Mark], alerting: set[SeriesKey]) -> list[str]:
    """The changes of this machine's series the repository's triage file speaks of: what
    each was, what the team said, whether it still alerts, and how to change that."""
    if not marks:
        return []
    quiet = sum(m.absorbed or m.key not in alerting for m in marks)

    def state(m: Mark) -> str:
        if m.entry.state != FIXED:
            return m.entry.state
        return f"fixed by {m.entry.fixed_by[:8]}" + (
            " (the level is not back)" if m.key in alerting else " (the level is back)")

    return [f"<details class=\"triaged\"><summary>{len(marks)} change(s) triaged in "
            f"{TRIAGE_FILE}, {quiet} not alerting</summary>",
            '<p class="muted">Accepted: the new level is the baseline from its commit on. '
            "Invalid or infrastructure: the change is not the code's and is taken out of the "
            "series. Investigating, and fixed until the level is back: still alerting. To "
            f"change one, edit its entry in {TRIAGE_FILE} (a pull request) or run "
            "<code>torchpulse triage list</code> and <code>torchpulse triage remove "
            "N</code>.</p>",
            '<table class="triaged"><thead><tr><th>state</th><th>benchmark</th>'
            "<th>environment</th><th>commit</th><th>before</th><th>after</th><th>note</th>"
            "</tr></thead><tbody>",
            *(f'<tr><td class="triage {escape(t.entry.state)}">{escape(state(t))}</td>'
              f"<td>{escape(t.key.name)}</td><td>{escape(t.key.env)}</td>"
              f"<td>{_commit(t.commit)}</td>"
              f'<td class="num">{escape(human(t.before, t.unit, t.after))}</td>'
              f'<td class="num">{escape(human(t.after, t.unit, t.before))}</td>'
              f"<td>{escape(t.entry.note)}</td></tr>" for t in marks),
            "</tbody></table></details>"]


def _built_with(m: MachineSummary, commit: str) -> str:
    build = m.builds.get(commit)
    return f" ({escape(build_name(build))})" if build else ""


BUILDS_SHOWN = 20


def _builds_table(m: MachineSummary) -> list[str]:
    """The torch build of each recorded commit, newest first (``m.builds``' order): which
    series' points are which build (`torchpulse record`)."""
    commits = list(m.builds)
    shown = commits[:BUILDS_SHOWN]
    more = f", the newest {BUILDS_SHOWN} shown" if len(commits) > BUILDS_SHOWN else ""
    return [f"<details><summary>Torch builds of {len(commits)} recorded commit(s){more}"
            "</summary>", '<table class="builds"><thead><tr><th>commit</th><th>torch</th>'
            "<th>kind</th><th>git</th></tr></thead><tbody>",
            *(f"<tr><td>{_commit(c)}</td><td>{escape(m.builds[c].version)}</td>"
              f"<td>{escape(m.builds[c].kind)}</td>"
              f"<td>{escape((m.builds[c].git_version or '')[:12])}</td></tr>" for c in shown),
            "</tbody></table></details>"]


def render(summary: Summary) -> str:
    report = summary.report
    regressions = report.regressions
    verdict = (f'<p class="regression">{len(regressions)} active regression(s).</p>'
               if regressions else "<p>No regression is active at the newest commit.</p>")
    body = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>torchpulse summary</title>", _ICON,
        f"<style>{_STYLE}{sparkline.STYLE}{_filter_style()}</style></head><body>",
        '<nav><a href="index.html">asv: benchmark grid</a>'
        '<a href="index.html#/regressions">asv: regressions</a>'
        f'<a href="{ALERTS_JSON}">alerts as JSON</a></nav>',
        "<h1>torchpulse summary</h1>",
        f"<p>Branch <code>{escape(summary.branch)}</code>: "
        f"{sum(len(m.rows) for m in summary.machines)} series on {len(summary.machines)} "
        "machine(s). Alerts as "
        f"<code>torchpulse alert</code> reports them: regressions still present at the "
        f"newest commit, false-discovery rate {report.alpha:g}, practical "
        f"{escape(thresholds_text(report))}.</p>", verdict,
        f'<p class="status-counts">Status: {escape(counts(report))}.</p>']
    reach = reach_text(report)
    if reach:
        body.append(f'<p class="reach">{escape(upper_first(reach))}.</p>')
    if triaged_text(report):
        body.append(f'<p class="triaged">{escape(upper_first(triaged_text(report)))}.</p>')
    if report.off_branch_files:
        body.append(f'<p class="muted">{report.off_branch_files} results file(s) are for '
                    "commits off the branch's first-parent history and are left out.</p>")
    if not summary.machines:
        body.append("<p>No results on this branch yet.</p>")
    else:
        body += [_filter(report), _LEGEND]
    for m in summary.machines:
        body += _machine(m, report)
    body.append("</body></html>")
    return "\n".join(body) + "\n"


def unavailable(reason: str) -> str:
    """The page when no summary can be built (say, the config's repo is remote)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>torchpulse summary</title>{_ICON}<style>{_STYLE}</style></head><body>"
            '<nav><a href="index.html">asv: benchmark grid</a></nav>'
            "<h1>torchpulse summary</h1>"
            f'<p class="regression">No summary: {escape(reason)}</p></body></html>\n')
