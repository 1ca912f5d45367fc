"""What an interpreter's counted process is made of: its base interpreter and the folders it
imports from (every site-packages on its path, and torch's root where it lies elsewhere).

Standard library only, and runnable as a script: ``python probe.py`` prints the same as
``interpreter()`` for that ``python``, so a count can be staged for another environment
than the one torchpulse runs in (``torchpulse compare --python A --python B``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def interpreter() -> dict:
    """{"python": the base interpreter, "roots": [the import roots, in order], "torch": the
    folder torch is imported from, or None}. Only these roots: the folders a test runner or
    asv puts on sys.path would make the environment differ between callers."""
    roots = [str(Path(entry).resolve()) for entry in sys.path
             if entry and Path(entry).name in ("site-packages", "dist-packages")
             and Path(entry).is_dir()]
    torch = None
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        torch = str(Path(next(iter(spec.submodule_search_locations))).resolve())
        roots.append(str(Path(torch).parent))
    return {"python": os.path.realpath(sys.executable), "roots": list(dict.fromkeys(roots)),
            "torch": torch}


if __name__ == "__main__":
    sys.path.pop(0)  # this file's folder: nothing of torchpulse is looked up there
    print(json.dumps(interpreter()))
