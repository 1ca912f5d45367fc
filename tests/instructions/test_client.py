"""Callgrind's client requests from inside the counted process (instructions/client.py), run
under valgrind for real."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchpulse.instructions import client

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None or client.helper() is None,
                                reason="needs valgrind and its headers, and a C compiler")

SRC = Path(client.__file__).resolve().parents[2]
# valgrind's --stats=yes line: "transtab: discarded  474,434 (11,993,733 -> ??)"
DISCARDED = re.compile(r"transtab: discarded\s+([\d,]+)")
NEW = re.compile(r"transtab: new\s+([\d,]+)")


def translations(call: str) -> tuple[int, int]:
    """(translations made, translations discarded) over a Python process under callgrind,
    instrumentation off as the counted process starts, that runs ``call`` after its
    imports."""
    code = ("import json, sys, ctypes\n"
            "from torchpulse.instructions import client\n"
            f"{call}\n"
            "json.dumps({'after': list(range(100))})\n")
    done = subprocess.run([shutil.which("valgrind"), "--tool=callgrind", "--stats=yes",
                           "--instr-atstart=no", "--collect-atstart=no",
                           "--callgrind-out-file=/dev/null", sys.executable, "-S", "-c", code],
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    new, discarded = NEW.search(done.stderr), DISCARDED.search(done.stderr)
    assert new and discarded, done.stderr[-3000:]
    return int(new.group(1).replace(",", "")), int(discarded.group(1).replace(",", ""))


def test_discarding_drops_the_translations_made_before_it():
    """The parent discards what its imports made before it forks, so that each child's switch
    to instrumentation walks a smaller table (0.17-0.23 s a child instead of 0.44-0.62 s)."""
    made, dropped = translations(f"client.discard_translations({str(client.helper())!r})")
    made_without, dropped_without = translations("client.discard_translations(None)")
    assert dropped_without == 0
    # the imports' translations go (the interpreter's start, the imports); what runs after
    # is translated again
    assert dropped > made_without / 2
    assert made > made_without
