"""Shared libraries the counted process loads, compiled from C with the system's compiler the
first time they are needed and kept in torchpulse's cache (``~/.cache/torchpulse``), each
under a name holding its source's digest, written all or nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from torchpulse.files import write_atomically


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchpulse"


def compiler() -> str | None:
    """$CC, else cc or gcc on PATH; None where there is none."""
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def library(source: str, stem: str, flags: Sequence[str] = ("-O1",)) -> Path | None:
    """``source`` compiled into ``<cache>/<stem>-<digest>.so`` (once: an existing one is
    reused), or None where no compiler is found or the source does not compile here (a
    header missing)."""
    digest = hashlib.sha256("\0".join((source, *flags)).encode()).hexdigest()[:12]
    path = cache_dir() / f"{stem}-{digest}.so"
    if path.exists():
        return path
    cc = compiler()
    if cc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        source_file = Path(tmp) / f"{stem}.c"
        source_file.write_text(source)

        def build(out: Path) -> None:
            subprocess.run([cc, *flags, "-shared", "-fPIC", "-o", str(out), str(source_file)],
                           capture_output=True, check=True)

        try:
            write_atomically(path, build)
        except subprocess.CalledProcessError:
            return None
    return path
