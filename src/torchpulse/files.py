"""Writing files all or nothing: the content goes to a temporary file beside the target, which
is flushed and then renamed over it, so a reader sees the old file or the new one, never half
of one. Standard library only."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Let ``write`` fill a temporary path beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str) -> None:
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json_atomically(path: Path, data: object) -> None:
    write_text_atomically(path, json.dumps(data, indent=4, sort_keys=True) + "\n")
