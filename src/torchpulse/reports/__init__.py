"""Every word a user reads about an alert: ``phrases`` holds what the formats share, and one
module a format renders a ``Report``: ``text`` (terminal), ``markdown`` (PR comment, step
summary), ``github`` (workflow annotations) and ``json_format`` (the contract other tools
read); the site's pages (torchpulse.site) use the same phrases."""

from __future__ import annotations

from torchpulse.analysis.model import Report
from torchpulse.reports.github import to_github
from torchpulse.reports.json_format import to_json
from torchpulse.reports.markdown import to_markdown
from torchpulse.reports.text import to_text

FORMATS = ("text", "markdown", "json", "github")


def render(report: Report, fmt: str) -> str:
    """``report`` in the format ``fmt`` (one of FORMATS)."""
    return {"text": to_text, "markdown": to_markdown, "json": to_json,
            "github": to_github}[fmt](report)
