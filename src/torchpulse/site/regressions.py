"""asv's Regressions tab, made to say what torchpulse says.

`asv publish` runs its own step detector and writes html/regressions.json (the tab) and
html/regressions.xml (its Atom feed). That detector flags every jump of a noisy series, so
the tab and torchpulse's report would disagree. After asv publishes, both files are
rewritten here from torchpulse's report: the same active regressions, in asv's own format,
so asv's page draws them (one row per regression: its culprit commit, or the range from the
commit before the first culprit to the last, and the net change; a range too when commits
measured on a disturbed machine lie just before the culprit, as the step may be at those).

asv's site format (graph paths, the feed) comes from asv itself: this module and
results/asv_results.py are where torchpulse touches asv's code.
"""

from __future__ import annotations

import datetime
import html
import itertools
import json
from pathlib import Path
from urllib.parse import urlencode

from asv.feed import FeedEntry, write_atom
from asv.graph import Graph

from torchpulse.analysis.columns import values_of
from torchpulse.analysis.model import Alert, Report
from torchpulse.analysis.series import Series
from torchpulse.files import write_atomically, write_json_atomically
from torchpulse.reports.phrases import change, human, p_text, triage_text

JSON = "regressions.json"
FEED = "regressions.xml"


def _graph_params(series: Series, graph_params: list[dict], branch: str) -> dict | None:
    """The full parameters of the asv graph that draws ``series`` (asv's index.json
    graph_param_list entry: machine fields, environment, branch), or None."""
    for entry in graph_params:
        if entry.get("branch") not in (branch, None):
            continue
        if all(str(entry.get(k) or "") == str(v or "") for k, v in series.params.items()):
            return entry
    return None


def _entry(alert: Alert, series: Series, index: dict, revision: dict[str, int],
           branch: str) -> list | None:
    """asv's regressions.json row: [name, graph path, graph params, parameter index, latest
    value, best value, [[rev before or None, rev, before, after]]]; None when asv's site has
    no graph of the series (an older environment, a benchmark no longer declared)."""
    benchmark = index["benchmarks"].get(alert.key.benchmark)
    full = _graph_params(series, index["graph_param_list"], branch)
    if benchmark is None or full is None:
        return None
    combos = [tuple(c) for c in itertools.product(*benchmark.get("params") or [])]
    j = None
    if alert.key.params:
        if alert.key.params not in combos:
            return None
        j = combos.index(alert.key.params)
    if alert.commit not in revision or alert.last not in revision:
        return None
    # a range when the rise spans several commits or may lie at a disturbed one before it
    if (len(alert.culprits) > 1 or alert.disturbed_before or alert.drifts) and \
            alert.previous_commit in revision:
        jump = [revision[alert.previous_commit], revision[alert.last]]
    else:
        jump = [None, revision[alert.commit]]
    shown = {k: v for k, v in full.items() if len(index["params"].get(k) or []) > 1}
    name = alert.key.name + _triage_said(alert)
    values = values_of(series.points).tolist()
    return [name, Graph.get_file_path(full, alert.key.benchmark) + ".json", shown, j,
            values[-1], min(values), [[*jump, alert.before, alert.after]]]


TAB_NOTE = 80  # characters of a triage note the tab's name cell shows; the summary has it all


def _triage_said(alert: Alert) -> str:
    """What the repository's triage file says of an active regression (investigating; fixed
    while the level is not back), put after its name: asv's tab has no column for it, and
    shows the name as text, looking the benchmark up by what precedes the first "(" (so
    the note's own brackets are turned to square ones)."""
    if alert.triage is None:
        return ""
    said = triage_text(alert.triage)
    if len(said) > TAB_NOTE:
        said = said[:TAB_NOTE - 1] + "\u2026"
    return f" [triage: {said.translate(str.maketrans('()', '[]'))}]"


def _feed_entry(alert: Alert, row: list, index: dict) -> FeedEntry:
    _name, _path, shown, _j, _last, _best, [(rev1, rev2, _b, _a)] = row
    name = alert.key.name  # the feed says the triage in its summary
    params = dict(shown)
    params.update({f"p-{n}": v for n, v in zip(
        index["benchmarks"][alert.key.benchmark].get("param_names") or [], alert.key.params,
        strict=False)})
    params["commits"] = alert.commit if rev1 is None else \
        f"{alert.previous_commit}-{alert.last}"
    link = f"index.html#{alert.key.benchmark}?{urlencode(params)}"
    when = datetime.datetime.fromtimestamp(index["revision_to_date"][str(rev2)] / 1000,
                                           datetime.timezone.utc)
    commits = ", ".join(c[:8] for c in alert.culprits)
    if rev1 is not None and (alert.disturbed_before or alert.drifts):
        commits = f"{alert.previous_commit[:8]}..{alert.last[:8]}"
    summary = (f'<a href="{html.escape(link)}">{html.escape(change(alert))} regression</a> '
               f"in {html.escape(commits)} (torchpulse alert, p={p_text(alert)}).<br>"
               f"Now {html.escape(human(alert.after, alert.unit, alert.before))}, before "
               f"{html.escape(human(alert.before, alert.unit, alert.after))}."
               + (f"<br>Triage: {html.escape(triage_text(alert.triage))}." if alert.triage
                  else ""))
    return FeedEntry(f"{change(alert)} {name}", when, link, summary,
                     [name, alert.previous_commit, alert.commit], when)


def rewrite(html_dir: Path, report: Report | None, branch: str, project: str) -> int:
    """Replace asv's regressions.json and regressions.xml in ``html_dir`` with ``report``'s
    active regressions (none when there is no report: torchpulse could not judge, so
    nothing is claimed). Returns the number of regressions written."""
    index = json.loads((html_dir / "index.json").read_text(encoding="utf-8"))
    rows, entries = [], []
    if report is not None and not report.history_mode:
        by_key = {c.series.key: c.series for c in report.checked}
        revision = {h: int(r) for r, h in index["revision_to_hash"].items()}
        for alert in report.alerts:
            row = _entry(alert, by_key[alert.key], index, revision, branch)
            if row is not None:
                rows.append(row)
                entries.append(_feed_entry(alert, row, index))
    write_json_atomically(html_dir / JSON, {"regressions": rows})
    entries.sort(key=lambda e: e.updated, reverse=True)
    # the feed's date: its newest entry's, else the newest commit's (never "now": publishing
    # the same results twice gives the same files)
    newest = max(index["revision_to_date"].values(), default=0)
    updated = max((e.updated for e in entries), default=datetime.datetime.fromtimestamp(
        newest / 1000, datetime.timezone.utc))
    write_atomically(html_dir / FEED, lambda tmp: write_atom(
        str(tmp), entries, title=f"{project} performance regressions (torchpulse)",
        author="torchpulse", address=f"{project}.torchpulse", updated=updated))
    return len(rows)
