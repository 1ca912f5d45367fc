"""Inside the counted process: ``os.path.realpath`` stops at the stage's links.

The counted process imports the environment being counted through fixed-length links
(``<stage>/p/01`` -> the environment's site-packages, normalised.py), so every path it builds
has the same length wherever that environment lies. ``inspect.getmodule`` resolves the file
of every module it meets (about a thousand during torch's import and the workloads' builds)
and keeps each resolved path in a dict for the life of the process: through the links, those
paths carried the environment's own location, and the heap they lay on was laid out by its
length. Two fresh clones' asv environments, identical but for their paths, counted up to
0.085 % apart for that (docs/instructions.md, "Determinism"). Here a path behind a link
resolves to its place in the stage, as if the environment lay there; anything else, and a
path whose resolution leads out of its link, resolves as before.

Standard library only, imported before torch (worker.BOOTSTRAP).
"""

from __future__ import annotations

import os
import posixpath


def stop_at_links(links: str) -> None:
    """Make ``os.path.realpath`` keep paths behind the links in ``links`` (the stage's
    links folder) at their place there."""
    resolve = posixpath.realpath
    prefix = links.rstrip("/") + "/"

    def realpath(filename, *, strict: bool = False):
        path = os.fspath(filename)
        if isinstance(path, str):
            # not abspath: it would fold a ".." lexically, where realpath follows the link
            full = path if path.startswith("/") else posixpath.join(os.getcwd(), path)
            if full.startswith(prefix):
                kept = _below(full, prefix, strict)
                if kept is not None:
                    return kept
        return resolve(filename, strict=strict)

    realpath.__doc__ = resolve.__doc__
    posixpath.realpath = realpath  # os.path is posixpath


def _below(full: str, prefix: str, strict: bool) -> str | None:
    """``full`` resolved from its link on, the link itself taken as a folder; None where a
    step is itself a link (rare below site-packages): the caller then resolves it whole."""
    link, _, rest = full[len(prefix):].partition("/")
    current = prefix + link
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            return None  # up out of the environment, perhaps: resolved whole
        current = f"{current}/{part}"
        if posixpath.islink(current):
            return None
    if strict:
        os.stat(current)  # FileNotFoundError, as realpath(strict=True) raises it
    return current
