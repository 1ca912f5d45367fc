"""Counts reused where nothing they were made of changed.

A count is a function of what the counted process runs: the same interpreter, libraries,
sources, folders and settings give the same instructions, to the instruction (the docs
commits of docs/measurements.md left all 72 counts unchanged). So a commit that changes none
of them need not be counted again: its counts are the last ones taken from the same inputs.

Each counted child says what it was made of (worker.inputs: the files of its modules and
mappings, the folders its import system listed); a run stores its counts with the digests
of those files' contents and of those folders' listings, and with a context (the machine's
processor and kernel, the interpreter, valgrind, torchpulse's counting code, each
workload's settings). The counted process sees the environment only through its stage's
links (normalised.py), so a file is named by its place in the stage (``<stage>/p/01/torch/
...``), not by the environment it lay in: a later count reads each name through its own
stage, that is in the environment it is about to count, and takes a stored figure only
where the context and every digest are the same there; anything else is counted. Two
environments with different files never share a figure (a run of torch 2.13.0's
environment once handed its counts to torch 2.14.1's, whose process never read those
files); the same environment moved to another path does, since its process reads the same
bytes at the same places. What a process reads other than by
importing or mapping it is not followed: the counted workloads read nothing else but the
processor's files under /sys (docs/instructions.md, "Reuse"), which the context holds.

The runs are kept in torchpulse's cache (``<cache>/counts``), the newest KEEP, each written
all or nothing; an unreadable or foreign file there is skipped, never trusted, and only the
regular files named as ``store`` names them are ever removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import stat
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from torchpulse.files import read_regular, write_json_atomically
from torchpulse.instructions import native, normalised

# of the stored runs' format: another is not read (1 named the files of the environment
# that stored a run, and handed its figures to another environment: docs/instructions.md)
VERSION = 2
KEEP = 8  # runs kept: a machine's recent torch builds and environments
PATTERN = "run-*.json"
OURS = re.compile(r"run-\d+-\d+\.json")  # what store() writes
RUN_BYTES = 64 * 2**20  # a stored run is read up to this size (one is about 0.5 MB)
# the processor as the counted libraries see it (oneDNN and ATen pick kernels by its features)
CPU_FILES = ("/sys/devices/system/cpu/possible", "/sys/devices/system/cpu/present",
             "/sys/devices/system/cpu/online")
# files valgrind maps into every process under a name of its own (vgdb-pipe-shared-mem-...)
EPHEMERAL = ("vgdb-pipe-",)
# fields of a stored workload that are taken back
_FIELDS = ("instructions", "counts", "functions", "seconds")


def directory() -> Path:
    return native.cache_dir() / "counts"


class Digests:
    """The sha256 of files' contents and of folders' listings, each computed once. A path is
    named as ``normalised.Stage.key`` names it: with a ``stage``, a name under ``<stage>/``
    is read where *that* stage's process would read it (its copy of torchpulse, its links to
    the environment being counted), so a stored figure is compared with the files of the
    process about to run, never with those of the environment that stored it."""

    def __init__(self, stage: normalised.Stage | None = None) -> None:
        self.stage = stage
        self._seen: dict[str, str] = {}

    def _where(self, key: str) -> str:
        if self.stage is not None:
            return str(self.stage.path(key))
        if key.startswith(f"{normalised.STAGE_KEY}/"):
            return ""  # a place in a stage, and no stage to find it in: never the same
        return key

    def file(self, key: str) -> str:
        """The digest of a regular file's content; of anything else (a device such as
        /dev/zero, which a mapping can name and a read never ends), its kind alone."""
        path = self._where(key)
        cached = f"f:{path}"
        if cached not in self._seen:
            try:  # opened without waiting: a FIFO is not waited on
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                self._seen[cached] = "absent"
                return self._seen[cached]
            with open(fd, "rb") as f:
                mode = os.fstat(fd).st_mode
                self._seen[cached] = hashlib.file_digest(f, "sha256").hexdigest() \
                    if stat.S_ISREG(mode) else f"not a file ({stat.S_IFMT(mode):o})"
        return self._seen[cached]

    def folder(self, key: str) -> str:
        path = self._where(key)
        cached = f"d:{path}"
        if cached not in self._seen:
            try:
                names = sorted(os.listdir(path))
            except OSError:
                self._seen[cached] = "absent"
                return self._seen[cached]
            self._seen[cached] = hashlib.sha256("\0".join(names).encode()).hexdigest()
        return self._seen[cached]

    def of(self, files: Iterable[str], folders: Iterable[str]) -> dict[str, dict[str, str]]:
        """The digests of ``files`` and ``folders`` (their keys), but for valgrind's own
        per-process files (its gdbserver's shared memory), which no later process finds."""
        return {"files": {k: self.file(k) for k in sorted(set(files))
                          if not Path(k).name.startswith(EPHEMERAL)},
                "folders": {k: self.folder(k) for k in sorted(set(folders))}}

    def match(self, inputs: Mapping[str, Mapping[str, str]]) -> bool:
        return all(self.file(k) == d for k, d in inputs["files"].items()) and \
            all(self.folder(k) == d for k, d in inputs["folders"].items())


def _text(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _processor() -> list[str]:
    """The first processor's model and feature flags, from /proc/cpuinfo."""
    wanted = ("vendor_id", "model name", "flags", "cpu family", "model", "stepping")
    first = _text("/proc/cpuinfo").split("\n\n", 1)[0]
    return [line for line in first.splitlines() if line.split(":", 1)[0].strip() in wanted]


def _valgrind_version(valgrind: str) -> str:
    try:
        return subprocess.run([valgrind, "--version"], capture_output=True, text=True,
                              check=False, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def context(command: list[str], environ: Mapping[str, str], root: Path, code: Path) -> str:
    """The digest of what a count depends on besides its inputs: the counted process's
    command and environment (the stage's own path taken out), valgrind's version, the
    machine's processor and kernel (the vDSO is not a file), torchpulse's counting code
    (``code``, which sets the process up outside it)."""
    stage = str(root)
    facts = {
        "version": VERSION,
        "command": [part.replace(stage, "<stage>") for part in command],
        "environ": {k: v.replace(stage, "<stage>") for k, v in sorted(environ.items())},
        "valgrind": _valgrind_version(command[command.index("--tool=callgrind") - 1])
        if "--tool=callgrind" in command else "",
        "machine": [platform.machine(), platform.release(), os.cpu_count(), *_processor(),
                    *(_text(p) for p in CPU_FILES)],
        "code": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted(code.iterdir()) if p.suffix in (".py", ".c")},
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def settings(spec: Mapping) -> str:
    """The digest of one workload's settings: its name, windows and its own sizes (its row
    of the tables: another family's sizes, or a new family, leave its count reusable)."""
    from torchpulse.workloads.registry import row

    kept = {k: v for k, v in spec.items() if k not in ("helper", "tables")}
    kept["helper"] = bool(spec.get("helper"))
    kept["sizes"] = row(spec["name"], spec.get("tables") or {})
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def _load(path: Path) -> dict | None:
    """A stored run, or None for anything that is not one: a link to a device or a FIFO is
    not read, a file past RUN_BYTES not either."""
    try:
        run = json.loads(read_regular(path, RUN_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(run, dict) or run.get("version") != VERSION \
            or not isinstance(run.get("counts"), dict) or not isinstance(run.get("inputs"), dict) \
            or not all(isinstance(run["inputs"].get(k), dict) for k in ("files", "folders")):
        return None
    return run


def _valid(stored: object) -> bool:
    if not isinstance(stored, dict) or not all(k in stored for k in (*_FIELDS, "settings")):
        return False
    counts, functions = stored["counts"], stored["functions"]
    return _positive(stored["instructions"]) and isinstance(counts, list) \
        and bool(counts) and all(_positive(c) for c in counts) \
        and isinstance(functions, dict) and all(isinstance(v, int) for v in functions.values()) \
        and isinstance(stored["seconds"], dict)


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _runs(folder: Path) -> list[Path]:
    """The stored runs, the newest first."""
    def age(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0
    return sorted(folder.glob(PATTERN), key=age, reverse=True)


def lookup(folder: Path, context_digest: str, wanted: Mapping[str, str],
           digests: Digests) -> dict[str, tuple[dict, str]]:
    """{name: (its stored figures, the run's file name)} for each workload of ``wanted``
    ({name: settings digest}) counted before from the same context and inputs."""
    found: dict[str, tuple[dict, str]] = {}
    for path in _runs(folder):
        run = _load(path)
        if run is None or run.get("context") != context_digest:
            continue
        here = [name for name in wanted if name not in found and _valid(run["counts"].get(name))
                and run["counts"][name]["settings"] == wanted[name]]
        if here and digests.match(run["inputs"]):
            found.update({name: (run["counts"][name], path.name) for name in here})
        if len(found) == len(wanted):
            break
    return found


def store(folder: Path, context_digest: str, counted: Mapping[str, dict],
          inputs: Mapping[str, Mapping[str, str]], keep: int = KEEP) -> Path | None:
    """Store a run's ``counted`` figures ({name: its fields and settings digest}) with the
    digests of its ``inputs``, written all or nothing; then remove the oldest runs past
    ``keep``. Nothing when nothing was counted."""
    if not counted:
        return None
    path = folder / f"run-{time.time_ns()}-{os.getpid()}.json"
    write_json_atomically(path, {"version": VERSION, "context": context_digest,
                                 "inputs": inputs, "counts": dict(counted)})
    for old in [run for run in _runs(folder) if _ours(run)][keep:]:
        try:
            old.unlink()
        except OSError:
            pass  # another count removed it first
    return path


def _ours(path: Path) -> bool:
    """A regular file named as ``store`` names them: the only kind pruned."""
    try:
        return bool(OURS.fullmatch(path.name)) and stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
