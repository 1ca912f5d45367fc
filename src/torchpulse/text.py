"""Text from files and clients on its way to a terminal. Standard library only."""

from __future__ import annotations


def printable(text: str) -> str:
    """Control characters (terminal escape sequences among them) as visible escapes; names in
    results files and request lines come from anyone."""
    return "".join(c if c.isprintable() or c == "\n" else ascii(c)[1:-1] for c in text)
