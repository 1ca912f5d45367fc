"""The counted process: its command line under callgrind, what is checked and compiled
before it starts (its malloc loads; its imports compiled into the stage), and its run, a
process group stopped whole on a timeout or an interrupt, its lines passed on as they come.
count.py plans what it counts and reads what it wrote (messages.py)."""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from torchpulse.errors import TorchpulseError
from torchpulse.instructions import normalised, worker

# what the counted process gets besides its fixed environment (normalised.py): one thread
# everywhere; a fixed string hash (dict and set layouts, hence instruction paths, repeat
# across processes). Its malloc is torchpulse's (allocator.py), preloaded: glibc's costs
# moved with the heap's layout (docs/instructions.md)
ENVIRONMENT = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "TORCHPULSE_DEVICE": "cpu"}
JOBS_ENV = "TORCHPULSE_COUNT_JOBS"  # workloads counted at once; the machine's cores if unset


class CountingError(TorchpulseError, RuntimeError):
    """valgrind is missing, or the counted process failed as a whole."""


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


def jobs() -> int:
    """Workloads counted at once: $TORCHPULSE_COUNT_JOBS, else every core (a count does not
    depend on the load beside it)."""
    text = os.environ.get(JOBS_ENV, "")
    if text:
        if not text.isdigit() or int(text) < 1:
            raise CountingError(f"${JOBS_ENV} must be a whole number of processes, "
                                f"not {text!r}")
        return int(text)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)


def command(stage: normalised.Stage, workloads: int, processes: int, *,
            instr_at_start: bool) -> list[str]:
    return [*_fixed_layout(), valgrind(), "--tool=callgrind", "--quiet",
            f"--instr-atstart={'yes' if instr_at_start else 'no'}", "--collect-atstart=no",
            f"--callgrind-out-file={stage.root / 'out' / 'dumps' / 'callgrind.out.%p'}",
            *stage.python, "-c", worker.BOOTSTRAP, str(stage.root), f"{workloads:06d}",
            f"{processes:06d}"]


def run(cmd: list[str], env: dict, cwd: Path, timeout: float | None, log,
        progress=None, keep: tuple[int, ...] = ()) -> tuple[int, str]:
    """Run the counted process (in a process group of its own: its forked children go with
    it on a timeout or an interrupt), passing each line it writes on stderr to ``log`` and
    each record it writes on its progress pipe (messages.progress_record; the pipe's
    descriptor is its last argument) to ``progress``, as they come (a count of the whole
    family takes minutes); (exit status, its last line on stderr). ``keep``: file
    descriptors it inherits (the stage's lock)."""
    read_end, write_end = os.pipe()
    last = ["no output"]
    try:
        with subprocess.Popen([*cmd, f"{write_end:06d}"], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              pass_fds=(*keep, write_end), start_new_session=True) as proc:
            os.close(write_end)
            write_end = -1
            said = threading.Thread(target=_pass_lines, args=(proc.stderr, log, last),
                                    daemon=True)
            said.start()
            timer = threading.Timer(timeout, _kill_group, (proc,)) if timeout else None
            if timer:
                timer.start()
            try:
                with os.fdopen(read_end, "rb") as records:
                    read_end = -1
                    for record in records:  # until every holder of its write end is gone
                        if progress is not None:
                            progress(record)
                said.join()
                proc.wait()
            finally:
                if timer:
                    timer.cancel()
                if proc.poll() is None:  # interrupted: leave nothing running
                    _kill_group(proc)
                    proc.wait()
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    return proc.returncode, last[0]


def _pass_lines(stream, log, last: list[str]) -> None:
    for line in stream:
        line = line.rstrip()
        if line:
            last[0] = line
            if log is not None:
                log(line)


# run in the stage's surroundings, outside valgrind: is the preloaded malloc the one in use?
PRELOAD_CHECK = ("import os, sys; sys.exit(0 if os.path.realpath(os.environ['LD_PRELOAD']) in "
                 "open('/proc/self/maps').read() else 3)")


def prepare(stage: normalised.Stage, built: Path, log=None) -> None:
    """Before the counted process, natively: its malloc loads, its imports are compiled."""
    _check_preload(stage, built)
    compile_imports(stage, log)


def _check_preload(stage: normalised.Stage, built: Path) -> None:
    """CountingError unless a process started as the counted one loads torchpulse's
    malloc: the dynamic loader only warns when it cannot (a /tmp mounted noexec, a broken
    build), and glibc's malloc would then give counts of another level."""
    done = subprocess.run([*stage.python, "-c", PRELOAD_CHECK], env=dict(stage.environ),
                          cwd=stage.root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise CountingError(f"the counted process cannot load torchpulse's malloc (built at "
                            f"{built}; remove it to build it again) from "
                            f"{stage.environ.get('LD_PRELOAD')}: {why}")


def compile_imports(stage: normalised.Stage, log=None) -> None:
    """Compile what the counted process imports before it forks into the stage's byte-code
    cache (normalised.CACHE), by importing it and running the parent's warm-up natively
    from the stage's paths (about 6 s on 2 cores; worker.COMPILE): the counted process then
    reads byte-code that holds the stage's paths, the same whatever environment it comes
    from, and compiles under valgrind only what a workload's build alone imports.
    CountingError where those imports fail."""
    environ = {k: v for k, v in stage.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([*stage.python, "-c", worker.COMPILE, str(stage.root)], env=environ,
                          cwd=stage.root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise CountingError(f"the counted process cannot import what it counts: {why}")
    if log is not None:
        log("compiled the counted process's imports into its stage")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
