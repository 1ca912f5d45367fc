"""``asv publish``, made self-contained: asv builds the site into a scratch folder, the CDN
assets are copied in, torchpulse's summary page is added and linked, and only then does the
scratch folder replace html/ in one step (a failure leaves the previous site as it was).
Where a site may go, the lock and the swap: ``torchpulse.site.target``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from torchpulse.errors import TorchpulseError
from torchpulse.files import locked_folder
from torchpulse.results import asv_process, asv_results
from torchpulse.results.project import Project
from torchpulse.site import assets, sanitize, target
from torchpulse.site.names import ALERTS_JSON, PAGE

if TYPE_CHECKING:
    from torchpulse.site.summary import Summary

# The analysis and the pages (numpy, scipy: most of a second to import) are imported once
# asv publish has started, so that its graphs and that import overlap.

# asv's navigation bar (on every asv view, all in index.html) gets a link to our page.
_NAV_ANCHOR = '<li id="nav-li-regressions"><a href="#/regressions">Regressions</a></li>'
NAV_LINK = (f'<li id="nav-li-torchpulse"><a href="{PAGE}">torchpulse summary'
            "</a></li>")


class PublishError(TorchpulseError, RuntimeError):
    """asv publish failed, or the site could not be completed."""


def add_nav_link(index: Path) -> None:
    """Link the summary page from asv's navigation bar (idempotent)."""
    text = index.read_text(encoding="utf-8")
    if NAV_LINK in text:
        return
    if _NAV_ANCHOR not in text:
        raise PublishError(f"{index}: asv's navigation bar has no Regressions entry to put "
                           "the torchpulse link after (asv changed its site?)")
    index.write_text(text.replace(_NAV_ANCHOR, f"{_NAV_ANCHOR}\n\t{NAV_LINK}"),
                     encoding="utf-8")


def _asv_publish(config: Path, out: Path, range_spec: str | None,
                 pull: bool) -> AbstractContextManager[subprocess.Popen]:
    """asv publish started (results.asv_process): stopped, group and all, when the block
    is left by an exception, so that it never writes on into the scratch."""
    args = ["publish", "--config", str(config.resolve()), "--html-dir", str(out.resolve())]
    args += [] if pull else ["--no-pull"]
    args += [range_spec] if range_spec else []
    # asv resolves the config's relative paths against the working directory
    return asv_process.started(asv_process.command(args), env=asv_process.base_environment(),
                               cwd=config.parent)


def _finish_asv_publish(proc: subprocess.Popen) -> None:
    proc.wait()
    if proc.returncode != 0:
        raise PublishError(f"asv publish failed (exit {proc.returncode}; its output is above)")


def _summarise(project: Project, settings: dict[str, object] | None = None
               ) -> tuple[Summary | None, str | None]:
    from torchpulse.site.summary import build

    try:
        return build(project, **(settings or {})), None
    except TorchpulseError as exc:  # a remote repo, an unreadable results file ...
        return None, str(exc)


def _write_summary(out: Path, summary: Summary | None, error: str | None) -> None:
    from torchpulse.reports.json_format import to_json
    from torchpulse.site import page

    if summary is None:
        (out / PAGE).write_text(page.unavailable(str(error)), encoding="utf-8")
        return
    (out / PAGE).write_text(page.render(summary), encoding="utf-8")
    (out / ALERTS_JSON).write_text(to_json(summary.report), encoding="utf-8")


def publish(project: Project, node_modules: Path, *,
            range_spec: str | None = None, pull: bool = True,
            progress: Callable[[str], None] = print,
            alert_settings: dict[str, object] | None = None) -> Path:
    """Publish ``project``'s site into its html directory, which it returns.
    ``alert_settings``: the verdicts' settings (``pipeline.run``'s keywords: thresholds, alpha,
    noise floor, branch, ledger), so that the site says what the alert beside it says."""
    assets.check(node_modules)  # a missing asset stops us before anything changes
    html = target.check(project, project.html_dir)
    with locked_folder(html.parent):  # a second publish to it waits for the first
        target.check(project, project.html_dir)  # again: what the lock waited for changed it
        target.remove_leftovers(html)  # of publishes killed before: none can be live now
        return _publish(project, node_modules, html, range_spec, pull, progress,
                        alert_settings or {})


def _publish(project: Project, node_modules: Path, html: Path, range_spec: str | None,
             pull: bool, progress: Callable[[str], None],
             alert_settings: dict[str, object]) -> Path:
    scratch = target.scratch(html)
    try:
        progress("== asv publish")
        asv_results.check_tree(project.results_dir)
        with _asv_publish(project.config, scratch, range_spec, pull) as proc:
            # while asv draws its graphs: the check that stops it on an infinity (it would
            # never end), and torchpulse's verdicts, which read the same results (through
            # the index) and write nothing of the site until asv is done
            sanitize.check_results(project.results_dir)
            summary, error = _summarise(project, alert_settings)
            _finish_asv_publish(proc)
        from torchpulse.site import regressions

        vendored = assets.vendor(scratch, node_modules)
        same = sum(v.identical for v in vendored)
        progress(f"== {len(vendored)} assets copied into {html.name}/{assets.VENDOR_DIR}"
                 f" ({same} byte-identical to what asv's page asks for, "
                 f"{len(vendored) - same} from npm with their own integrity hash)")
        add_nav_link(scratch / "index.html")
        _write_summary(scratch, summary, error)
        listed = regressions.rewrite(scratch, summary.report if summary else None,
                                     summary.branch if summary else project.default_branch,
                                     str(project.settings.get("project") or "project"))
        progress(f"== asv's Regressions tab and feed: {listed} regression(s), torchpulse's "
                 "verdicts (asv's own detector's list replaced)")
        checked = sanitize.sanitize_index(scratch)
        progress(f"== {checked} benchmarks' names checked; their code, pretty names and the "
                 "machine details escaped for asv's HTML tooltips")
        if summary is not None:
            progress(f"== summary page {PAGE}: {summary.report.series_count} "
                     f"series on {len(summary.machines)} machine(s), "
                     f"{len(summary.report.alerts)} active regression(s)")
        else:
            progress(f"== summary page {PAGE}: not built ({error})")
        target.put(scratch, html)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return html

