"""The process callgrind runs: imports torch and the workloads' code once, warms up the code
most workloads share (``PREWARM``: valgrind's translations of it are then inherited, not made
again in every child), then forks one child per group of workloads (registry.groups: a
runner's or model's, at most four; ``jobs`` at a time), which builds and warms up each,
then counts each in turn.

    python -S -c BOOTSTRAP STAGE CHILDREN JOBS

STAGE (written by instructions.count) holds ``prewarm.json`` (the sizes table and the
callgrind helper's path, the same whatever the selection) and ``in/<index>.json`` per child
(its workloads' names, the sizes table, the windows, the helper's path; ``file_name``);
each child writes ``out/<index>.json``: its pid (its dumps are
``out/dumps/callgrind.out.<pid>.<n>``), for each workload the first dump and the calls of
its counted windows and the seconds of each phase, or its error, and the files and folders
it was made of (``inputs``), or the child's error. CHILDREN and JOBS are zero-padded
numbers: the parent reads nothing whose size depends on the selection, so a workload's
count does not depend on what else is counted.

Why a child per group: every group starts from the same process (torch imported, the
workloads' modules compiled), whatever the other groups are and in whatever order they
finish, and its workloads are always the same ones in the same order, so a workload's count
depends on nothing else; the children run side by side, since a count does not depend on
the load beside it. A group, not a workload: its workloads share the child's switch to
instrumentation and valgrind's instrumented translations of their common code, which cost a
child per workload 0.5-1 s each (docs/instructions.md, "Cost").

Why windows: a single call's count moves with periodic work (malloc consolidating its bins,
Python's specialising interpreter, pymalloc taking a new arena), which lands in some calls and
not others; a window of calls averages it. A child counts one call to size the window
(``calls_for``), runs that many calls more uncounted (Python 3.11 quickens code run eight
times and keeps specialising its instructions for a while), then counts ``windows`` windows of
that many calls, one callgrind dump each, with the garbage collector off inside them. A
workload whose one call fills a window (a ResNet) uses its sizing call as the first window.

The builds and the first calls run uninstrumented (valgrind's plain translation is several
times faster than callgrind's): the child switches instrumentation on only then.
"""

from __future__ import annotations

import array
import gc
import itertools
import json
import math
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from torchpulse.instructions.callgrind import read_total

# Calls before the counted ones. Python 3.11 quickens a function after its first few calls and
# specialises its instructions as they run: a count taken earlier includes that work. One call
# of a heavy model (registry.HEAVY) runs each layer's code many times over, so one call past its
# settling is enough there, and each call more costs 0.2-4 s (docs/instructions.md, "Cost").
EXTRA_WARMUP = 3
EXTRA_WARMUP_HEAVY = 1
MAX_CALLS = 64  # calls in one window at most (a workload of a few thousand instructions)
PID_DIGITS = 7  # of the largest pid Linux gives (pid_max at most 2**22)
PARKING = 60.0  # seconds: the switch interval while the main thread parks (in_fresh_arena)
THREAD_STACK = 64 << 20  # the counted thread's stack: room for TorchScript's recursion
# a workload's phases, each timed (wall seconds under valgrind): the build, the uninstrumented
# warm-up, the sizing call (with the switch to instrumentation, for a child's first), the
# settling and counted windows
PHASES = ("build", "warm-up", "sizing", "windows")
MAX_CHILDREN = 4096  # children one count forks at most (the family's 78 workloads make 37)
CLOSE_WARM_UP = 16  # pipes the parent closes before it forks (_warm_close_each)


def calls_for(one_call: int, window: int) -> int:
    """Calls a window holds: the power of two that brings it to ``window`` instructions (so a
    count that moves a little does not change it), between 1 and MAX_CALLS."""
    if one_call <= 0:
        return 1
    return max(1, min(MAX_CALLS, 2 ** math.ceil(math.log2(max(1.0, window / one_call)))))


def build(name: str, tables: dict) -> tuple[Callable, int]:
    """(run(clock), warm-up calls) of a workload, built afresh on the CPU at ``tables``
    (sizes.counting()); ValueError for a name this package lacks."""
    from torchpulse.workloads.regions import build as build_region

    region = build_region(name, tables, "cpu", "instructions")
    return region.run, warm_up_calls(name, region.settle)


def warm_up_calls(name: str, settle: int) -> int:
    """The uninstrumented calls before ``name`` is counted: its settling and a few more, one
    more only for a heavy model (a name, so that the same workload always gets the same)."""
    from torchpulse.workloads.registry import HEAVY

    return settle + (EXTRA_WARMUP_HEAVY if name.startswith(HEAVY) else EXTRA_WARMUP)


def own_dump(dumps_dir: Path, number: int) -> str:
    """This process's dump ``number``, which callgrind names by the pid, as a path of the
    same length whatever the pid's digits (slashes make up the difference). The child makes
    it after its warm-up, before its windows: a path as long as the pid once laid the heap
    out otherwise, and 24 of the 72 default counts moved by up to 0.05 % with 3-digit pids
    against 4- and 5-digit ones (docs/instructions.md, "Determinism")."""
    pid = str(os.getpid())
    return f"{dumps_dir}{'/' * (1 + PID_DIGITS - len(pid))}callgrind.out.{pid}.{number}"


def count_group(names: list[str], spec: dict, dumps_dir: Path) -> list[dict]:
    """In the child: build and warm up each of ``names`` uninstrumented, in order, switch
    instrumentation on once, then count each in turn (``count_one``): one result each, its
    error where it failed (the others are still counted)."""
    import torch

    from torchpulse.instructions.client import start_instrumentation

    built: list[tuple[Callable, float, float] | None] = []  # run, build and warm-up seconds
    results: list[dict] = []
    for name in names:
        started = time.monotonic()  # where the child's wall time goes (docs: "Cost")
        try:
            torch.manual_seed(0)  # each model as it would be built alone
            run, warmup = build(name, spec["tables"])
            made = time.monotonic()
            for _ in range(warmup):
                run()
        except Exception as exc:  # noqa: BLE001 (one workload's failure is its own)
            results.append({"name": name, "error": _error(exc)})
            built.append(None)
            continue
        results.append({"name": name})
        built.append((run, made - started, time.monotonic() - made))
    started = time.monotonic()  # the first counted workload's sizing includes the switch
    gc.collect()
    gc.freeze()  # what the builds made is not scanned again: the collections stay small
    gc.disable()
    start_instrumentation(spec.get("helper"))
    dumps = [0]  # the number of this process's last dump, as each region leaves it
    clocks = []
    for result, entry in zip(results, built, strict=True):
        if entry is None:
            continue
        run, building, warming = entry
        try:
            result.update(count_one(run, spec, dumps_dir, dumps))
        except Exception as exc:  # noqa: BLE001
            result["error"] = _error(exc)
        done = time.monotonic()
        clocks.append((result, building, warming, started, done))
        started = done
    # rounded only now: rounding a float takes a path (and memory) that depends on its
    # value, and the next workload's count would follow the clock
    for result, building, warming, started, done in clocks:
        if "error" not in result:
            sized = result.pop("sized")
            result["seconds"] = dict(zip(PHASES, (round(t, 2) for t in (
                building, warming, sized - started, done - sized)), strict=True))
    return results


def count_one(run: Callable, spec: dict, dumps_dir: Path, dumps: list[int]) -> dict:
    """Instrumented: size the window with one call, run a window's worth more, count
    ``windows`` windows; ``dumps[0]`` follows this process's dumps."""
    from torchpulse.instructions.client import CountedRegion

    sizing = CountedRegion(calls_per_dump=1, dumps=dumps[0])
    try:
        run(sizing)
    finally:
        dumps[0] = sizing.dumps
    gc.collect()
    calls = calls_for(read_total(own_dump(dumps_dir, sizing.dumps)), spec["window"])
    sized = time.monotonic()
    windows = spec["windows"]
    if calls == 1:  # a call fills a window: the sizing call is the first
        first, windows = sizing.dumps, windows - 1
    else:  # a window's worth more, instrumented and uncounted: the counts settle
        first = sizing.dumps + 1
        for _ in range(calls):
            run()
            gc.collect()
    counted = CountedRegion(calls_per_dump=calls, dumps=sizing.dumps)
    try:
        for _ in range(windows):
            for _ in range(calls):
                run(counted)
                gc.collect()  # outside the region: every call starts from the same heap
    finally:
        dumps[0] = counted.dumps
    return {"first": first, "calls": calls, "windows": spec["windows"], "sized": sized}


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(exc)).strip()


def in_fresh_arena(work: Callable[[], dict]) -> dict:
    """``work()`` in a new thread. Under glibc's malloc a thread that allocates gets its own
    arena and cache, empty, so what the workload allocated landed the same way whatever the
    process allocated before (in the main arena, a different history moved the counts by up
    to 0.4 %, docs/instructions.md). Counted processes now run under torchpulse's malloc
    (allocator.c), whose costs depend on neither; the thread stays, as the counts of API 9
    were taken with it. The stack size is fixed: the default follows ``ulimit -s``.

    The thread starts its work only once the main thread is parked: threading.Thread's
    start and join ran Python code in the main thread after the work had begun, at a point
    set by the interpreter's 5 ms switch interval, so wall-clock time decided where the
    main thread's objects landed among the workload's, and a count took one of several
    values from run to run (0.04-0.44 %, docs/instructions.md)."""
    import _thread

    outcome: dict = {}
    gate, done = _thread.allocate_lock(), _thread.allocate_lock()
    gate.acquire()
    done.acquire()

    def target() -> None:
        gate.acquire()  # the main thread has nothing left to run but its wait
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 (reported by the caller)
            outcome["error"] = exc
        finally:
            done.release()

    switch = sys.getswitchinterval()
    # the main thread is never asked for the GIL between its two last calls, however late
    # the machine runs it
    sys.setswitchinterval(PARKING)
    try:
        _thread.stack_size(THREAD_STACK)
        _thread.start_new_thread(target, ())
        gate.release()
        done.acquire()
    finally:
        sys.setswitchinterval(switch)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


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
    spec = json.loads((stage / "in" / file_name(index)).read_text())
    try:
        workloads = in_fresh_arena(
            lambda: count_group(spec["names"], spec, stage / "out" / "dumps"))
        result = {"pid": os.getpid(), "workloads": workloads, "inputs": inputs(forked)}
        status = 0
    except BaseException as exc:  # noqa: BLE001 (one child's failure is its own)
        result = {"error": _error(exc)}
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
            run, warmup = build(name, tables)
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


def main(stage_dir: str, children: str, jobs: str) -> int:
    """Fork every child at once, each waiting on a pipe of its own for its turn, then let
    ``jobs`` run at a time, in order. Forked before any of them is reaped, a child's state is
    the same whichever finished first (a reap between forks, with its objects, made the
    native LSTMs' counts differ by 0.2 % between a quiet and a busy run). The bookkeeping
    between forks lives in arrays of a fixed size, allocated before the first: a list and a
    dict that grew with each fork gave the k-th child k more objects, and a workload's count
    followed its place in the selection (docs/instructions.md, "Determinism")."""
    stage, count, at_once = Path(stage_dir), int(children), int(jobs)
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
        print(f"counted {index}" if code == 0 else f"failed {index} (exit {code})",
              file=sys.stderr, flush=True)
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
# What the counted process runs (``python -S -c BOOTSTRAP STAGE WORKLOADS JOBS``).
BOOTSTRAP = IMPORTS + "sys.exit(worker.main(*sys.argv[1:]))\n"
# The compilation pass (``python -S -c COMPILE STAGE``, outside valgrind): the same imports
# and the parent's warm-up, whose builds import more
COMPILE = IMPORTS + "import pathlib\nworker.prewarm(pathlib.Path(sys.argv[1]) / 'prewarm.json')\n"
