"""The process callgrind runs: imports torch and the workloads' code once, warms up the code
most workloads share (``PREWARM``: valgrind's translations of it are then inherited, not made
again in every child), then forks one child per group of workloads (registry.groups: a
runner's or model's, at most four; ``jobs`` at a time), which builds and warms up each,
then counts each in turn.

    python -S -c BOOTSTRAP STAGE CHILDREN JOBS PROGRESS_FD

STAGE (written by instructions.count) holds ``prewarm.json`` (the sizes table and the
callgrind helper's path, the same whatever the selection) and ``in/<index>.json`` per child
(its workloads' names, the sizes table, the windows, the helper's path; ``file_name``);
each child writes ``out/<index>.json``: its pid (its dumps are
``out/dumps/callgrind.out.<pid>.<n>``), for each workload the first dump and the calls of
its counted windows and the seconds of each phase, or its error, and the files and folders
it was made of (``inputs``), or the child's error; each child's end is said on the pipe
PROGRESS_FD (messages.progress_record). CHILDREN, JOBS and PROGRESS_FD are zero-padded
numbers: the parent reads nothing whose size depends on the selection, so a workload's
count does not depend on what else is counted.

Why a child per group: every group starts from the same process (torch imported, the
workloads' modules compiled), whatever the other groups are and in whatever order they
finish, and its workloads are always the same ones in the same order, so a workload's count
depends on nothing else; the children run side by side, since a count does not depend on
the load beside it. A group, not a workload: its workloads share the child's switch to
instrumentation and valgrind's instrumented translations of their common code, which cost a
child per workload 0.5-1 s each (docs/instructions.md, "Cost").
"""

from __future__ import annotations

import array
import gc
import itertools
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

from torchpulse.instructions import messages, windows

MAX_CHILDREN = 4096  # children one count forks at most (all 80 workloads make 38)
CLOSE_WARM_UP = 16  # pipes the parent closes before it forks (_warm_close_each)


# the paths /proc/self/maps names (a file's mapping ends its line with the file's path)
MAPPED = re.compile(r" (/[^\n]*)$", re.MULTILINE)


def inputs(after: tuple[int, int] = (0, 0)) -> dict[str, list[str]]:
    """What this process was made of (instructions.reuse keys a count on it): the files of its
    modules and of its mappings (the interpreter, torch's libraries, the malloc, valgrind's
    own), and the folders its import system listed; {} where that is not known. ``after``:
    the modules and folders a child had when it was forked (both dicts grow in order), whose
    files the parent gives once (instrumented, the whole walk took a child 0.35 s). Taken
    after the counted windows, so that it moves no count."""
    modules, folders = after
    # a module's compiled file too: a stale one is compiled again in memory, laid out otherwise
    files = {path for module in list(sys.modules.values())[modules:]
             for path in (getattr(module, "__file__", None), getattr(module, "__cached__", None))
             if isinstance(path, str)}
    try:
        with open("/proc/self/maps") as maps:
            files.update(p.removesuffix(" (deleted)") for p in MAPPED.findall(maps.read()))
    except OSError:  # no /proc: the libraries are not known, so the count is not reused
        return {}
    return {"files": sorted(files),
            "folders": [p for p in list(sys.path_importer_cache)[folders:] if isinstance(p, str)]}


def file_name(index: int) -> str:
    """A workload's file in the stage's ``in/`` and ``out/``: as long whatever the number of
    workloads, like the counted process's arguments (a child reads its own before it counts;
    its index's digits moved a count by 6 instructions)."""
    return f"{index:06d}.json"


def _child(index: int, stage: Path, forked: tuple[int, int]) -> int:
    spec: messages.ChildRequest = json.loads((stage / "in" / file_name(index)).read_text())
    try:
        workloads = windows.in_fresh_arena(
            lambda: windows.count_group(spec["names"], spec, stage / "out" / "dumps"))
        result = messages.child_result(os.getpid(), workloads, inputs(forked))
        status = 0
    except BaseException as exc:  # noqa: BLE001 (one child's failure is its own)
        result = messages.child_failure(windows.error_text(exc))
        status = 1
    (stage / "out" / file_name(index)).write_text(json.dumps(result))
    return status


# What the parent runs before it forks: the code paths most workloads share (an eager LSTM's
# ops and autograd, convolutions and batch norm forward and backward, functorch's transforms),
# so that valgrind translates them once and every child inherits them. Nothing TorchScript:
# with the TorchScript LSTM warmed up in the parent, the counts of the TorchScript LSTMs'
# forwards took one of two values (0.2-0.45 % apart) from one run to the next.
PREWARM = ("rnns/py/backward", "cnns/resnet18/backward", "autograd/ppl_simple_reg/hessian_fwdrev")


def prewarm(spec: Path) -> None:
    """Discard valgrind's translations of the imports (most of that code never runs again,
    and every child's switch to instrumentation would delete them one by one), then build
    and run PREWARM's workloads at the tables of ``spec`` (the same file whatever the
    selection: the tables and the helper's path), uninstrumented; nothing when ``spec`` is
    absent. A failure only costs time: it is said, and the children translate the code
    themselves."""
    if not spec.exists():
        return
    import torch

    from torchpulse.instructions.client import discard_translations

    started = time.monotonic()
    try:
        settings = json.loads(spec.read_text())
        discard_translations(settings.get("helper"))
        tables = settings["tables"]
        for name in PREWARM:
            torch.manual_seed(0)
            run, warmup = windows.build(name, tables)
            for _ in range(warmup):
                run()
            del run
    except Exception as exc:  # noqa: BLE001 (the counts do not need it)
        print(f"prewarm failed: {''.join(traceback.format_exception_only(exc)).strip()}",
              file=sys.stderr, flush=True)
    gc.collect()
    print(f"prewarmed in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def _close_each(fds: array.array, count: int) -> None:
    """Close the first ``count`` of ``fds``. A function of its own, iterating the array
    (no subscript), and run by the parent before it forks (``_warm_close_each``): Python
    3.11 quickens code after eight runs of a loop and then specialises its instructions,
    and a child that did so in its own loop (the 4th child on) gave a type a version tag
    the others did not, so later method-cache lookups collided otherwise."""
    for fd in itertools.islice(fds, count):
        os.close(fd)


def _warm_close_each() -> None:
    """Quicken and specialise ``_close_each`` in the parent, on pipes of its own."""
    spare = array.array("i", [fd for _ in range(CLOSE_WARM_UP) for fd in os.pipe()])
    _close_each(spare, len(spare))


def main(stage_dir: str, children: str, jobs: str, progress: str) -> int:
    """Fork every child at once, each waiting on a pipe of its own for its turn, then let
    ``jobs`` run at a time, in order. Forked before any of them is reaped, a child's state is
    the same whichever finished first (a reap between forks, with its objects, made the
    native LSTMs' counts differ by 0.2 % between a quiet and a busy run). The bookkeeping
    between forks lives in arrays of a fixed size, allocated before the first: a list and a
    dict that grew with each fork gave the k-th child k more objects, and a workload's count
    followed its place in the selection (docs/instructions.md, "Determinism"). Each child's
    end is said on the descriptor ``progress`` (messages.progress_record)."""
    stage, count, at_once, said = Path(stage_dir), int(children), int(jobs), int(progress)
    os.set_inheritable(said, False)  # a child's helper processes must not hold it open
    if count > MAX_CHILDREN:
        print(f"{count} children: at most {MAX_CHILDREN} a count", file=sys.stderr)
        return 2
    starts = array.array("i", bytes(4 * MAX_CHILDREN))  # the write end of each child's pipe
    pids = array.array("i", bytes(4 * MAX_CHILDREN))
    _warm_close_each()
    prewarm(stage / "prewarm.json")
    gc.collect()
    gc.freeze()
    forked = (len(sys.modules), len(sys.path_importer_cache))  # a child's inputs() after these
    for index in range(count):
        wait_for, start = os.pipe()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _close_each(starts, index)
                os.close(start)
                os.close(said)
                os.read(wait_for, 1)  # its turn, or the parent's end (EOF): go on either way
                code = _child(index, stage, forked)
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(wait_for)
        starts[index] = start
        pids[index] = pid
    released = 0

    def release() -> None:
        nonlocal released
        os.write(starts[released], b"s")
        os.close(starts[released])
        released += 1

    for _ in range(min(at_once, count)):
        release()
    for _ in range(count):
        pid, status = os.wait()
        code = os.waitstatus_to_exitcode(status)
        index = pids.index(pid, 0, count)
        os.write(said, messages.progress_record(index, code))
        if released < count:
            release()
    # what every child inherited, walked once here, where it runs uninstrumented
    (stage / "out" / "parent.json").write_text(json.dumps(inputs()))
    return 0


# What the counted process imports before it forks. The stage's compilation pass
# (process.compile_imports, COMPILE) imports the same ahead of it, natively, to compile these
# modules' byte-code into the stage's own cache (normalised.CACHE): a __pycache__ file of
# the environment holds the path it was compiled at, and two asv environments identical but
# for their paths counted up to 0.63 % apart for that alone (docs/instructions.md,
# "Determinism"); a module imported later (a workload's build) is compiled in memory, from
# the stage's path too. First of all, realpath is kept inside the stage's links, and the
# process's mappings read with the environment named by them (stage_paths.py).
IMPORTS = """\
import sys, threading
import torchpulse.instructions.stage_paths
torchpulse.instructions.stage_paths.stop_at_links(sys.argv[1] + "/p")
torchpulse.instructions.stage_paths.show_maps_in_stage(sys.argv[1] + "/p")
import torch, torch.func, torch.jit, torch.nn.utils.rnn, torch.autograd.functional
torch.set_num_threads(1)
import torchpulse.workloads.regions, torchpulse.autograd.run, torchpulse.fastrnns.runners
import torchpulse.autograd.models, torchpulse.models
import torchpulse.instructions.client, torchpulse.instructions.worker as worker
"""
# What the counted process runs (``python -S -c BOOTSTRAP STAGE WORKLOADS JOBS PROGRESS_FD``).
BOOTSTRAP = IMPORTS + "sys.exit(worker.main(*sys.argv[1:]))\n"
# The compilation pass (``python -S -c COMPILE STAGE``, outside valgrind): the same imports
# and the parent's warm-up, whose builds import more
COMPILE = IMPORTS + "import pathlib\nworker.prewarm(pathlib.Path(sys.argv[1]) / 'prewarm.json')\n"
