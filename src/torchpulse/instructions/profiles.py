"""Per-commit function profiles of the instruction family, and what changed between two.

When the family is counted for a commit (asv's setup_cache, torchpulse.suite), the top
functions of each workload's median call, by own instructions, are stored in one
gzip-compressed JSON file per (commit, asv environment):
``<project>/.asv/profiles/<commit>-<env>.json.gz`` (``$TORCHPULSE_PROFILES`` names another
folder). The alert reads the two files of a step -- the commit before it and the commit at
it -- and names the functions whose instructions grew most (``differences``).

Beside asv's results, never in them: asv's files hold numbers only, and asv reads every
``*.json`` under its results folder. A profile is derived data: deleting one loses the
function list of that commit's alerts, nothing else. Standard library only (the alert
imports it).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from torchpulse.files import no_link_below, write_atomically

FOLDER_ENV = "TORCHPULSE_PROFILES"
# what a profile holds, and its file's suffix: the instruction counts' functions (own
# instructions a call), or a GPU workload's kernels (device ns a call, launches a call) and
# synchronisation sites (torchpulse.gpu.trace.profile)
INSTRUCTIONS, KERNEL_TIME, KERNEL_LAUNCHES, SYNCS = (
    "instructions", "kernel_time", "kernel_launches", "syncs")
_SUFFIX = {INSTRUCTIONS: "", KERNEL_TIME: ".kernel_time", KERNEL_LAUNCHES: ".kernel_launches",
           SYNCS: ".syncs"}
DEFAULT_FOLDER = Path(".asv") / "profiles"
FORMAT = 1
SHOWN = 5  # functions an alert lists
_SHA = re.compile(r"[0-9a-f]{40}")
# a profile of the default selection is about 180 KB, 1.8 MB inflated (70 workloads, 200
# functions each): anything far larger is not one, and reading it would cost minutes and GBs
MAX_STORED = 16 << 20
MAX_INFLATED = 64 << 20
# asv's environment names: an existing environment's holds its interpreter's path with "_"
# for "/" (existing-py_home_me_.asv_record_python)
_ENV = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}")
# the commit `torchpulse record` files its run at: asv sets no ASV_COMMIT for an existing
# environment (it builds nothing)
RECORD_COMMIT_ENV = "TORCHPULSE_RECORD_COMMIT"
# ... and the environment it files under (asv gives an "existing" one no ASV_ENV_NAME)
RECORD_ENV_NAME_ENV = "TORCHPULSE_RECORD_ENV_NAME"


@dataclass(frozen=True)
class FunctionChange:
    """One function's own instructions per call of a workload's region, before and after;
    ``renamed_from``: the name it had before, where the code moved under another symbol (a
    function only before and one only after whose names differ by lambdas, templates or
    parameters alone, ``same_code``)."""

    name: str
    before: int
    after: int
    renamed_from: str | None = None

    @property
    def change(self) -> int:
        return self.after - self.before


# what a symbol's name says beyond its code's identity: the lambdas and clones the compiler
# made of it, its template arguments and parameters, an anonymous namespace
_LAMBDA = re.compile(r"::\{lambda\([^)]*\)#\d+\}|::'lambda\d*'\([^)]*\)|\[clone [^\]]*\]")
_ANONYMOUS = re.compile(r"\(anonymous namespace\)::")


def _stem(name: str) -> str:
    """A symbol's name without what ``same_code`` ignores: its library suffix kept, the
    first identifier path up to its template arguments or parameters."""
    body, _, library = name.rpartition(" [") if name.endswith("]") else (name, "", "")
    body = _ANONYMOUS.sub("", _LAMBDA.sub("", body))
    depth, out = 0, []
    for char in body:  # drop every <...> and (...) group, nested ones too
        if char in "<(":
            depth += 1
        elif char in ">)" and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    parts = [part.removesuffix(" const").strip() for part in "".join(out).split("::")]
    path = "::".join(part for part in parts if part and part != "operator")
    return path + (f" [{library}" if library else "")


def same_code(a: str, b: str) -> bool:
    """Whether two symbol names name the same code moved under another symbol: the same
    library and the same path of names once lambdas, template arguments, parameters and
    anonymous namespaces are set aside (a kernel moved into a lambda of itself, a function
    given another template argument)."""
    return a != b and _stem(a) == _stem(b) and bool(_stem(a))


def folder(root: Path) -> Path:
    """Where the profiles of the project at ``root`` are."""
    named = os.environ.get(FOLDER_ENV)
    return Path(named) if named else root / DEFAULT_FOLDER


def path(where: Path, commit: str, env: str, kind: str = INSTRUCTIONS) -> Path | None:
    """The ``kind`` profile of ``commit`` measured in asv environment ``env``; None for a
    name that is not a full sha or not a plain environment name (nothing is written or read
    for it)."""
    if not _SHA.fullmatch(commit) or not _ENV.fullmatch(env):
        return None
    return where / f"{commit}-{env}{_SUFFIX[kind]}.json.gz"


def write(target: Path, commit: str, env: str, workloads: Mapping[str, Mapping[str, int]],
          instructions: Mapping[str, int]) -> None:
    """Store each workload's functions (name: own instructions per call; a kernel's device
    ns or launches a call) and its total (kept under "instructions" whatever the kind: the
    format's field), all or nothing."""
    data = {"format": FORMAT, "commit": commit, "env": env,
            "workloads": {name: {"instructions": int(instructions[name]),
                                 "functions": {f: int(n) for f, n in functions.items()}}
                          for name, functions in sorted(workloads.items())}}
    payload = gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0)
    write_atomically(target, lambda tmp: tmp.write_bytes(payload))


def write_from_asv(workloads: Mapping[str, Mapping[str, int]],
                   instructions: Mapping[str, int], kind: str = INSTRUCTIONS) -> Path | None:
    """In asv's benchmark process: store the profiles of the commit asv installed
    ($ASV_COMMIT, or the one `torchpulse record` files its run at) and environment
    ($ASV_ENV_NAME) in the folder of the project asv runs from ($ASV_CONF_DIR). None (nothing
    written) outside such a run."""
    commit = os.environ.get("ASV_COMMIT") or os.environ.get(RECORD_COMMIT_ENV, "")
    env = os.environ.get("ASV_ENV_NAME") or os.environ.get(RECORD_ENV_NAME_ENV, "")
    root = os.environ.get("ASV_CONF_DIR")
    where = Path(os.environ[FOLDER_ENV]) if os.environ.get(FOLDER_ENV) else \
        folder(Path(root)) if root else None
    target = path(where, commit, env, kind) if where is not None else None
    if target is None or not workloads:
        return None
    if not os.environ.get(FOLDER_ENV) and root and not no_link_below(Path(root), target):
        return None  # the project's folder, but a link planted on the way leads elsewhere
    write(target, commit, env, workloads, instructions)
    return target


def read(where: Path, commit: str, env: str, kind: str = INSTRUCTIONS
         ) -> dict[str, dict[str, int]] | None:
    """{workload: {function: own instructions}} (or the ``kind`` profile's figures) of
    ``commit`` in ``env``, or None when there is no readable profile of that commit (not
    measured, deleted, or damaged: a profile is derived data, and its absence only leaves
    an alert without its list)."""
    found = read_with_totals(where, commit, env, kind)
    return found[0] if found is not None else None


def read_with_totals(where: Path, commit: str, env: str, kind: str = INSTRUCTIONS
                     ) -> tuple[dict[str, dict[str, int]], dict[str, int]] | None:
    """``read``'s profile and each workload's total (its instructions, or its kernels'
    device ns, launches or synchronisations a call), or None."""
    target = path(where, commit, env, kind)
    if target is None:
        return None
    try:
        data = json.loads(_bounded_gunzip(target))
        workloads = data["workloads"]
        return ({str(name): {_printable(str(f)): int(n) for f, n in entry["functions"].items()}
                 for name, entry in workloads.items()},
                {str(name): int(entry["instructions"]) for name, entry in workloads.items()})
    except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError,
            OverflowError, zlib.error, RecursionError):
        return None


def _bounded_gunzip(target: Path) -> bytes:
    """The decompressed bytes of ``target`` if it is a regular file (not a link, a FIFO or
    a device, which would block or never end) of at most MAX_STORED bytes that inflates to
    at most MAX_INFLATED (a gzip bomb does not); ValueError or OSError otherwise."""
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_STORED:
            raise ValueError(f"{target}: not a regular file of at most {MAX_STORED} bytes")
        stored = f.read(MAX_STORED + 1)
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip's header and trailer
    out = inflate.decompress(stored, MAX_INFLATED)
    if inflate.unconsumed_tail or len(out) >= MAX_INFLATED:
        raise ValueError(f"{target}: inflates to more than {MAX_INFLATED} bytes")
    return out


def _printable(name: str) -> str:
    """A symbol name with its control characters (a newline among them) as visible escapes:
    it goes to terminals, markdown tables and workflow logs as one line."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)


def differences(before: Mapping[str, int], after: Mapping[str, int],
                shown: int = SHOWN, direction: int = 1) -> tuple[FunctionChange, ...]:
    """The ``shown`` functions whose own instructions grew most from ``before`` to ``after``
    (``direction`` -1: shrank most, for an improvement), largest change first; a function
    absent from one side's top list counts 0 there, but a function only before and one only
    after that are the same code under another symbol (``same_code``) are one change, their
    net. Those that moved the other way are left out."""
    gone = {name: cost for name, cost in before.items() if name not in after}
    changes = [FunctionChange(name, before.get(name, 0), cost) for name, cost in after.items()]
    paired = set()
    for i, change in enumerate(changes):
        if change.before or change.name in before:
            continue
        matches = [name for name in gone if name not in paired and same_code(name, change.name)]
        if matches:  # the closest in cost: the likeliest to be the same code
            old = min(matches, key=lambda name: (abs(gone[name] - change.after), name))
            paired.add(old)
            changes[i] = FunctionChange(change.name, gone[old], change.after, renamed_from=old)
    changes += [FunctionChange(name, cost, 0) for name, cost in gone.items()
                if name not in paired]
    moved = sorted((c for c in changes if c.change * direction > 0),
                   key=lambda c: (-abs(c.change), c.name))
    return tuple(moved[:shown])
