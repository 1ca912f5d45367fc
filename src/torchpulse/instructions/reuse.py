"""Counts reused where nothing they were made of changed.

A count is a function of what the counted process runs: the same interpreter, libraries,
sources, folders and settings give the same instructions, to the instruction (the docs
commits of docs/measurements.md left all 72 counts unchanged). So a commit that changes none
of them need not be counted again: its counts are the last ones taken from the same inputs.

Each counted child says what it was made of (worker.inputs: the files of its modules and
mappings, the folders its import system listed); a run stores its counts with the digests
of those files' contents and of those folders' listings, and with a context (the machine's
processor and kernel, the interpreter, valgrind, torchpulse's counting code, each
workload's settings). A later count takes a stored figure only where the context and every
digest are the same now; anything else is counted. What a process reads other than by
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

VERSION = 1  # of the stored runs' format: another is not read
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
    """The sha256 of files' contents and of folders' listings, each computed once."""

    def __init__(self, copied: Path | None = None) -> None:
        # a folder under ``copied`` is listed as the stage copies it (sources only)
        self.copied = copied
        self._seen: dict[str, str] = {}

    def file(self, path: str) -> str:
        """The digest of a regular file's content; of anything else (a device such as
        /dev/zero, which a mapping can name and a read never ends), its kind alone."""
        key = f"f:{path}"
        if key not in self._seen:
            try:  # opened without waiting: a FIFO is not waited on
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                self._seen[key] = "absent"
                return self._seen[key]
            with open(fd, "rb") as f:
                mode = os.fstat(fd).st_mode
                self._seen[key] = hashlib.file_digest(f, "sha256").hexdigest() \
                    if stat.S_ISREG(mode) else f"not a file ({stat.S_IFMT(mode):o})"
        return self._seen[key]

    def folder(self, path: str) -> str:
        key = f"d:{path}"
        if key not in self._seen:
            try:
                names = sorted(os.listdir(path))
            except OSError:
                self._seen[key] = "absent"
                return self._seen[key]
            if self.copied is not None and _within(Path(path), self.copied):
                names = normalised.sources_only(path, names)
            self._seen[key] = hashlib.sha256("\0".join(names).encode()).hexdigest()
        return self._seen[key]

    def of(self, files: Mapping[str, str], folders: Iterable[str]
           ) -> dict[str, dict[str, str]]:
        """The digests of ``files`` ({path: the path to read it by, such as the stage's copy
        of it, what was counted}) and ``folders``, but for valgrind's own per-process files
        (its gdbserver's shared memory), which no later process finds."""
        return {"files": {p: self.file(files[p]) for p in sorted(files)
                          if not Path(p).name.startswith(EPHEMERAL)},
                "folders": {p: self.folder(p) for p in sorted(set(folders))}}

    def match(self, inputs: Mapping[str, Mapping[str, str]]) -> bool:
        return all(self.file(p) == d for p, d in inputs["files"].items()) and \
            all(self.folder(p) == d for p, d in inputs["folders"].items())


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


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
    """The digest of one workload's settings (its name, sizes, windows)."""
    kept = {k: v for k, v in spec.items() if k != "helper"}
    kept["helper"] = bool(spec.get("helper"))
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
