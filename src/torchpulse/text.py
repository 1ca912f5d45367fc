"""Text from files and clients on its way to a terminal, a markdown report or a GitHub
workflow log. Standard library only."""

from __future__ import annotations

import html

_MD_SPECIAL = "\\`*_{}[]()#+-.!|~"


def printable(text: str) -> str:
    """Control characters (terminal escape sequences among them) as visible escapes; names in
    results files and request lines come from anyone."""
    return "".join(c if c.isprintable() or c == "\n" else ascii(c)[1:-1] for c in text)


def one_line(text: str) -> str:
    """``printable`` with line breaks escaped too: a message that must stay one line."""
    return printable(text).replace("\n", "\\n")


def markdown_cell(text: str) -> str:
    """Text for a markdown cell: HTML escaped, markdown punctuation and table pipes
    backslash-escaped, so a name renders as itself and never as markup."""
    text = html.escape(printable(text), quote=False)
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in text)


def workflow_data(text: str) -> str:
    """GitHub workflow-command data: %, CR and LF must be escaped; other control
    characters are shown as escapes (the line lands in a terminal-like log)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable(text)
