"""Counting the instructions of the family's workloads: one valgrind process for all of them.

``count`` starts the worker (``worker.BOOTSTRAP``) under callgrind in a normalised process
(normalised.py; importing torch under valgrind costs 12 s: once per commit, not once per
workload), which counts each group of workloads (registry.groups: a runner's or model's, at
most four, the same whatever is asked) in a child of its own, every core busy, in windows of
calls; the workloads asked for are returned, their groups' others counted and kept for reuse
too. Each workload gets the median window's instructions per call with the functions of
that window. The counted process is single-threaded, with a fixed hash seed, a malloc whose
costs do not depend on addresses (allocator.py), the same address-space layout, working
directory, environment and path lengths every time (docs/instructions.md, "Determinism").
With a folder to reuse counts from (reuse.py), a group whose counted process would be made of
the same files and folders as an earlier count's takes that count's figures.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchpulse.instructions import (
    allocator,
    callgrind,
    client,
    messages,
    normalised,
    process,
    reuse,
    worker,
)
from torchpulse.instructions.process import ENVIRONMENT, CountingError

WINDOWS = 3  # counted windows per workload; the median window's per-call figure is stored
WINDOW = 5_000_000  # instructions a window aims at (windows.calls_for): periodic work averages out
TOP_FUNCTIONS = 200  # functions kept per workload's profile, by own instructions
REUSE_ENV = "TORCHPULSE_COUNT_REUSE"  # "no": count every commit, even one that changed nothing


@dataclass
class Counted:
    """One workload's instructions per call of its region (the median of ``counts``, one
    figure per counted window) and the own instructions per call of the functions that ran
    in the median window (the top ones)."""

    name: str
    instructions: int
    counts: list[int]
    functions: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per windows.PHASES
    reused: bool = False  # taken from an earlier count of the same inputs (reuse.py)

    @property
    def spread(self) -> float:
        """(max - min) / median of the counts: how far one window is from the next."""
        return (max(self.counts) - min(self.counts)) / self.instructions


def reuse_folder() -> Path | None:
    """Where the asv suite keeps counts to reuse (reuse.directory()), or None where
    $TORCHPULSE_COUNT_REUSE is ``no``."""
    text = os.environ.get(REUSE_ENV, "").strip().lower()
    if text in ("", "yes"):
        return reuse.directory()
    if text == "no":
        return None
    raise CountingError(f"${REUSE_ENV} must be yes or no, not {text!r}")


def summarise(name: str, dumps: Sequence[callgrind.Dump], calls: int = 1,
              top: int = TOP_FUNCTIONS, seconds: dict[str, float] | None = None) -> Counted:
    """A workload's figure from its windows of ``calls`` calls each: the median window's
    instructions per call, and its functions' own instructions per call (the top ones);
    ``seconds``: where the child's time went (windows.PHASES)."""
    counts = [round(d.total / calls) for d in dumps]
    median = int(statistics.median_low(counts))
    chosen = dumps[counts.index(median)]
    ranked = sorted(chosen.self_cost.items(), key=lambda kv: -kv[1])[:top]
    functions = {fn: round(cost / calls) for fn, cost in ranked}
    return Counted(name, median, counts, functions, dict(seconds or {}))


class _Collected:
    """Each workload's figure from its child's files, read as the child finishes (the
    counted process says so), so that the reading overlaps the children still counting
    instead of following the last one; ``inputs`` gathers what the children that counted
    were made of (worker.inputs). ``groups``: the workloads of each child, in order."""

    def __init__(self, groups: Sequence[Sequence[str]], out: Path,
                 inputs: dict[str, set[str]] | None) -> None:
        self.groups, self.out, self.inputs = groups, out, inputs
        self.counted: dict[str, Counted] = {}
        self.failed: dict[str, str] = {}
        self.read: set[int] = set()

    def child(self, index: int) -> None:
        """Read the files of child ``index``, once; it has exited."""
        if index in self.read:
            return
        self.read.add(index)
        names = self.groups[index]
        result = messages.read_child(self.out / worker.file_name(index))
        if result.error is not None:
            self.failed.update(dict.fromkeys(names, result.error))
            return
        for one in result.workloads:
            if one.error is not None:
                self.failed[one.name] = one.error
                continue
            numbers = range(one.first, one.first + one.windows)
            dumps = [callgrind.read(self.out / "dumps" / f"callgrind.out.{result.pid}.{n}")
                     for n in numbers]
            self.counted[one.name] = summarise(one.name, dumps, one.calls, seconds=one.seconds)
        if self.inputs is not None:
            _gather(self.inputs, result.inputs, names[0])

    def finish(self) -> tuple[dict[str, Counted], dict[str, str]]:
        """After the counted process: the children not read yet, then what they inherited
        from the parent; the figures in the order of the groups."""
        for index in range(len(self.groups)):
            self.child(index)
        if self.inputs is not None and self.counted:
            _gather(self.inputs, messages.read_inputs(self.out / "parent.json"), "parent")
        names = [name for group in self.groups for name in group]
        counted = {n: self.counted[n] for n in names if n in self.counted}
        return counted, {n: self.failed[n] for n in names if n in self.failed}


def _gather(inputs: dict[str, set[str]], made_of: dict | None, whose: str) -> None:
    """Add what one process was made of (worker.inputs) to ``inputs``; unknown, nothing of
    the run is kept for reuse."""
    for kind, paths in (made_of or {"unknown": [whose]}).items():
        inputs.setdefault(kind, set()).update(paths)


def count(workloads: Sequence[str], tables: dict, *, windows: int = WINDOWS,
          window: int = WINDOW, processes: int | None = None, timeout: float | None = None,
          log=None, reuse_in: Path | None = None, python: str | None = None
          ) -> tuple[dict[str, Counted], dict[str, str]]:
    """Count every workload under one callgrind process, with the rest of its group
    (registry.groups), ``processes`` children at a time (``jobs()`` by default):
    ({name: Counted}, {name: error} for the workloads asked for that failed on their own).
    CountingError when the process fails as a whole. With ``reuse_in`` (a folder,
    reuse.directory()), a group counted before from the same inputs takes those figures
    (``Counted.reused``), and what is counted, the groups' others too, is stored there.
    ``python``: the environment whose torch is counted (an interpreter of it; this one by
    default), with this torchpulse's workloads."""
    process.valgrind()  # before the libraries are built (and cached) for nothing
    malloc = allocator.library()
    if malloc is None:
        raise CountingError("instruction counts need a C compiler (cc) to build the "
                            "allocator they count under (Debian/Ubuntu: apt install gcc)")
    every = _groups(workloads)
    with normalised.stage(ENVIRONMENT, preload=malloc, helper=client.helper(),
                          python=python) as stage:
        specs = {name: {"name": name, "windows": windows, "window": window, "tables": tables,
                        "helper": str(stage.helper) if stage.helper else None}
                 for group in every for name in group}
        past = _Past(stage, specs, reuse_in)
        groups = past.keep_whole(every, log)
        counted, failed = {}, {}
        if groups:
            counted, failed = _count_staged(stage, groups, specs, tables, processes, timeout,
                                            log, past.inputs, malloc)
            past.store(counted, log)
        got = {**past.reused, **counted}
        return ({name: got[name] for name in workloads if name in got},
                {name: failed[name] for name in workloads if name in failed})


def _groups(workloads: Sequence[str]) -> list[list[str]]:
    """The children that count ``workloads`` (registry.groups): each with the other workloads
    of its group, which are counted too (and kept for reuse) but not returned."""
    from torchpulse.autograd import choices as autograd_choices
    from torchpulse.fastrnns import choices as fastrnns_choices
    from torchpulse.workloads import registry

    every = registry.workloads(fastrnns_choices, autograd_choices)
    return registry.groups(every, list(dict.fromkeys(workloads)))


class _Past:
    """The counts of ``specs`` taken before from the same inputs (reuse.py), found when made;
    ``store`` keeps this run's. Nothing either way without a folder."""

    def __init__(self, stage: normalised.Stage, specs: dict[str, dict],
                 folder: Path | None) -> None:
        self.stage, self.folder = stage, folder
        self.reused: dict[str, Counted] = {}
        self.found: dict[str, tuple[dict, str]] = {}
        self.inputs: dict[str, set[str]] | None = None
        if folder is None:
            return
        self.inputs = {}
        self.digests = reuse.Digests(stage)
        cmd = process.command(stage, 0, 0, instr_at_start=stage.helper is None)[:-2]
        self.context = reuse.context(cmd, stage.environ, stage.root, Path(__file__).parent)
        self.settings = {name: reuse.settings(spec) for name, spec in specs.items()}
        self.found = reuse.lookup(folder, self.context, self.settings, self.digests)
        self.reused = {name: Counted(name, stored["instructions"], stored["counts"],
                                     stored["functions"], stored["seconds"], reused=True)
                       for name, (stored, _) in self.found.items()}

    def keep_whole(self, groups: list[list[str]], log) -> list[list[str]]:
        """The groups to count: those not every workload of which was found. A group is
        counted whole or not at all: its workloads' figures follow one another. Says what
        is reused."""
        counted = [group for group in groups if not all(n in self.reused for n in group)]
        recounted = {name for group in counted for name in group}
        self.reused = {n: c for n, c in self.reused.items() if n not in recounted}
        if self.reused and log is not None:
            runs = sorted({self.found[name][1] for name in self.reused})
            log(f"reused {len(self.reused)} of {sum(map(len, groups))} counts: nothing they "
                f"were made of has changed since {', '.join(runs)} (in {self.folder})")
        return counted

    def store(self, counted: dict[str, Counted], log) -> None:
        """Keep ``counted`` for later counts; a cache that cannot be written costs only the
        reuse (it is said), never the counts."""
        if self.folder is None or self.inputs is None or self.inputs.get("unknown"):
            return
        files = _keys(self.stage, self.inputs.get("files", ()))
        folders = _keys(self.stage, self.inputs.get("folders", ()))
        try:
            reuse.store(self.folder, self.context,
                        {name: {"settings": self.settings[name], "instructions": c.instructions,
                                "counts": c.counts, "functions": c.functions,
                                "seconds": c.seconds} for name, c in counted.items()},
                        self.digests.of(files, folders))
        except OSError as exc:
            if log is not None:
                log(f"counts not kept for reuse: {exc}")


def _keys(stage: normalised.Stage, seen: Iterable[str]) -> list[str]:
    """The names (``Stage.key``) of the paths the counted process saw, the stage's own files
    left out. torchpulse's sources are named, and read, as the stage copied them: that copy
    is what was counted, and the original may have been edited since (stored under the
    edited file's digest, a count would have been taken for that edit)."""
    return [key for key in map(stage.key, seen) if key is not None]


def _count_staged(stage: normalised.Stage, groups: list[list[str]], specs: dict[str, dict],
                  tables: dict, processes: int | None, timeout: float | None, log,
                  inputs: dict[str, set[str]] | None, malloc: Path
                  ) -> tuple[dict[str, Counted], dict[str, str]]:
    inputs_dir, out = stage.root / "in", stage.root / "out"
    inputs_dir.mkdir()
    (out / "dumps").mkdir(parents=True)
    # the parent's warm-up: the same file whatever the selection (worker.prewarm)
    (stage.root / "prewarm.json").write_text(json.dumps(messages.PrewarmRequest(
        tables=tables, helper=str(stage.helper) if stage.helper else None)))
    process.prepare(stage, malloc, log)
    for index, group in enumerate(groups):  # one file each: nothing shared grows with more
        (inputs_dir / worker.file_name(index)).write_text(
            json.dumps(messages.child_request(group, specs[group[0]])))
    cmd = process.command(stage, len(groups), processes or process.jobs(),
                          instr_at_start=stage.helper is None)

    collected = _Collected(groups, out, inputs)

    def ended(record: bytes) -> None:  # the worker says indexes: the names are here
        said = messages.read_progress(record, len(groups))
        if said is None:
            if log is not None:
                log(f"not a child's end, on the progress pipe: {record[:200]!r}")
            return
        collected.child(said.index)
        if log is not None:
            exit_code = f" (exit {said.exit_code})" if said.exit_code else ""
            for name in groups[said.index]:
                verb = "failed" if name in collected.failed else "counted"
                log(f"{verb} {name}{exit_code}")

    # the lock goes with it: a counted process that outlives this one keeps its stage
    returncode, tail = process.run(cmd, dict(stage.environ), stage.root, timeout, log, ended,
                                   (stage.lock,))
    if returncode != 0:
        raise CountingError(f"the counted process failed (exit {returncode}): {tail}")
    return collected.finish()
