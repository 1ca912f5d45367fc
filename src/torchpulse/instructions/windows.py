"""Inside a child of the counted process: each workload of its group built and warmed up
uninstrumented, then, with instrumentation switched on once, counted in windows of calls.

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

import gc
import math
import os
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
            results.append({"name": name, "error": error_text(exc)})
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
            result["error"] = error_text(exc)
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


def error_text(exc: BaseException) -> str:
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
