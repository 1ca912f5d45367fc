"""Counting the instructions of the family's workloads: one valgrind process for all of them.

``count`` starts ``python -m torchpulse.instructions.worker`` under callgrind (importing torch
under valgrind costs 12 s: once per commit, not once per workload), reads the dump of every
counted region and gives each workload the median of its ``repeats`` counts with the
functions of that median call. The counted process is single-threaded, with a fixed hash
seed, the suites' allocation policy and the same address-space layout every time, so two
runs of a commit count the same to the instruction (docs/instructions.md).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse import allocation
from torchpulse.errors import TorchpulseError
from torchpulse.instructions import callgrind, client

REPEATS = 5  # counted calls per workload; the median is stored
TOP_FUNCTIONS = 200  # functions kept per workload's profile, by own instructions
# what the counted process gets besides the caller's environment: one thread everywhere, a
# fixed string hash (dict and set layouts, hence instruction paths, repeat across processes)
ENVIRONMENT = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TORCHPULSE_DEVICE": "cpu"}


class CountingError(TorchpulseError, RuntimeError):
    """valgrind is missing, or the counted process failed as a whole."""


@dataclass
class Counted:
    """One workload's instructions per call of its region (the median of ``counts``) and the
    own instructions of the functions that ran in the median call (the top ones)."""

    name: str
    instructions: int
    counts: list[int]
    functions: dict[str, int] = field(default_factory=dict)

    @property
    def spread(self) -> float:
        """(max - min) / median of the counts: how far one call is from the next."""
        return (max(self.counts) - min(self.counts)) / self.instructions


def valgrind() -> str:
    path = shutil.which("valgrind")
    if path is None:
        raise CountingError("valgrind is not installed: instruction counts need callgrind "
                            "(Debian/Ubuntu: apt install valgrind)")
    return path


def _fixed_layout() -> list[str]:
    """setarch's --addr-no-randomize where it exists: with the address space laid out the
    same in every process, pointer-keyed hash tables, Python's method cache and malloc's
    bins take the same paths, and the counts of two processes agree to the instruction
    (with randomisation they differed by up to 1.4 %, docs/instructions.md)."""
    setarch = shutil.which("setarch")
    return [setarch, platform.machine(), "--addr-no-randomize"] if setarch else []


def command(spec: Path, manifest: Path, out_dir: Path, *, instr_at_start: bool,
            python: str = sys.executable) -> list[str]:
    return [*_fixed_layout(), valgrind(), "--tool=callgrind", "--quiet",
            f"--instr-atstart={'yes' if instr_at_start else 'no'}", "--collect-atstart=no",
            f"--callgrind-out-file={out_dir / 'callgrind.out.%p'}",
            python, "-m", "torchpulse.instructions.worker", str(spec), str(manifest)]


def _dumps(out_dir: Path) -> list[Path]:
    """The region dumps in the order they were written (``callgrind.out.<pid>.<n>``, n from
    1); the final dump at exit (no suffix) holds nothing counted."""
    numbered = [p for p in out_dir.iterdir()
                if p.name.count(".") == 3 and p.suffix[1:].isdigit()]
    return sorted(numbered, key=lambda p: int(p.suffix[1:]))


def summarise(name: str, dumps: Sequence[callgrind.Dump], top: int = TOP_FUNCTIONS) -> Counted:
    counts = [d.total for d in dumps]
    median = int(statistics.median_low(counts))
    chosen = dumps[counts.index(median)]
    functions = dict(sorted(chosen.self_cost.items(), key=lambda kv: -kv[1])[:top])
    return Counted(name, median, counts, functions)


def _run(cmd: list[str], env: dict, timeout: float | None, log) -> tuple[int, str]:
    """Run the counted process, passing each line it writes to ``log`` as it comes (a count
    of the whole family takes minutes); (exit status, its last line)."""
    last = "no output"
    with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as proc:
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        try:
            for line in proc.stderr:
                line = line.rstrip()
                if line:
                    last = line
                    if log is not None:
                        log(line)
            proc.wait()
        finally:
            if timer:
                timer.cancel()
    return proc.returncode, last


def count(workloads: Sequence[str], tables: dict, *, repeats: int = REPEATS,
          timeout: float | None = None, log=None) -> tuple[dict[str, Counted], dict[str, str]]:
    """Count every workload in one callgrind process: ({name: Counted}, {name: error} for the
    workloads that failed on their own). CountingError when the process fails as a whole."""
    valgrind()  # before the helper is built (and cached) for nothing
    helper = client.helper()
    with tempfile.TemporaryDirectory(prefix="torchpulse-callgrind-") as tmp:
        out = Path(tmp)
        spec, manifest = out / "spec.json", out / "manifest.json"
        spec.write_text(json.dumps({"workloads": list(workloads), "repeats": repeats,
                                    "tables": tables,
                                    "helper": str(helper) if helper else None}))
        dumps_dir = out / "dumps"
        dumps_dir.mkdir()
        cmd = command(spec, manifest, dumps_dir, instr_at_start=helper is None)
        env = {**os.environ, **allocation.ENVIRONMENT, **ENVIRONMENT}
        returncode, tail = _run(cmd, env, timeout, log)
        if returncode != 0 or not manifest.exists():
            raise CountingError(f"the counted process failed (exit {returncode}): {tail}")
        written = json.loads(manifest.read_text())
        files = _dumps(dumps_dir)
        if len(files) != len(written["dumps"]):
            raise CountingError(f"{len(files)} callgrind dumps for {len(written['dumps'])} "
                                "counted regions")
        per: dict[str, list[callgrind.Dump]] = {}
        for name, path in zip(written["dumps"], files, strict=True):
            if name not in written["failed"]:
                per.setdefault(name, []).append(callgrind.read(path))
    return {name: summarise(name, d) for name, d in per.items()}, dict(written["failed"])
