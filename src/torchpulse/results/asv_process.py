"""Every asv command torchpulse runs starts here (the dashboard's runs, `record`, `publish`,
compare and bisect's scratch runs, fleet nodes, evaluate-detection): one way to start it,
one way to stop it, one message when it cannot start.

asv runs in a process group of its own. Leaving a ``started`` block by an exception
(Ctrl-C, SIGTERM or SIGHUP read as one, an error of ours) stops the whole group, SIGTERM
then SIGKILL after STOP_GRACE_S, before the exception goes on: no benchmark process asv
started outlives the command and writes results after it has rolled back or cleaned up.

Scratch measurements (fleet nodes, compare and bisect) name a ``machine_file``: asv keeps
every machine in ~/.asv-machine.json and rewrites it whole, in place, and one `asv run` read
it half written while another process's `asv machine` rewrote it ("No information stored
about machine") under load; a measurement whose results are scratch has no business in the
user's file either. asv reads the path from one static method
(MachineCollection.get_machine_file_path), which the launch program below replaces. On
Linux that asv is also killed when the process that started it dies (PR_SET_PDEATHSIG, set
in the child itself: a preexec_fn is unsafe in Ray's multithreaded worker).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torchpulse.errors import TorchpulseError

STOP_GRACE_S = 10  # what asv and its benchmark processes get to stop before SIGKILL
MACHINE_FILE_ENV = "TORCHPULSE_ASV_MACHINE_FILE"
LAUNCH = ("import ctypes, os, signal, sys\n"
          "try:\n    ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
          "except (OSError, AttributeError):\n    pass\n"
          "import asv.machine\n"
          f"own = os.environ['{MACHINE_FILE_ENV}']\n"
          "asv.machine.MachineCollection.get_machine_file_path = staticmethod(lambda: own)\n"
          "from asv.main import main\n"
          "sys.argv = ['asv', *sys.argv[1:]]\n"
          "sys.exit(main())")


class AsvLaunchError(TorchpulseError):
    """asv could not be started at all (no such interpreter, not executable)."""


def command(args: Sequence[str], *, python: str = sys.executable,
            scratch: bool = False) -> list[str]:
    """The command line of ``asv ARGS`` run by ``python``; with ``scratch``, through the
    launch program that reads the machine file environment() names."""
    if scratch:
        return [python, "-c", LAUNCH, *args]
    return [python, "-m", "asv", *args]


def base_environment() -> dict[str, str]:
    """This process's environment for asv, with PYTHONPATH kept for the benchmarks (asv drops
    it unless it comes as ASV_PYTHONPATH): they must see what this process sees."""
    env = dict(os.environ)
    if env.get("PYTHONPATH") and "ASV_PYTHONPATH" not in env:
        env["ASV_PYTHONPATH"] = env["PYTHONPATH"]
    return env


def environment(machine_file: Path) -> dict[str, str]:
    """asv's environment for a scratch measurement, ``machine_file`` its machine file."""
    return {**base_environment(), MACHINE_FILE_ENV: str(machine_file)}


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to ``proc``'s process group, then, after STOP_GRACE_S or as soon as asv has
    gone, SIGKILL to whatever of the group is left; asv reaped."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass  # past its grace: killed next


@contextmanager
def started(line: Sequence[str], *, env: Mapping[str, str], cwd: Path | str | None = None,
            **streams: Any) -> Iterator[subprocess.Popen]:
    """``line`` (command()'s) started in a process group of its own, with ``streams``
    (stdout, stderr, text) as subprocess takes them; stopped, group and all, when the block
    is left by an exception. AsvLaunchError when it cannot start."""
    try:
        proc = subprocess.Popen(list(line), env=dict(env), cwd=cwd, start_new_session=True,
                                **streams)
    except OSError as exc:
        raise AsvLaunchError(f"cannot run asv ({' '.join(line[:3])}): {exc.strerror}") \
            from None
    try:
        yield proc
    except BaseException:
        stop(proc)
        raise


def run(line: Sequence[str], *, env: Mapping[str, str], cwd: Path | str | None = None,
        capture: bool = False, quiet: bool = False, log: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``line`` run to its end: its output streamed to ours, or with ``capture`` returned
    (stdout and stderr), or with ``quiet`` kept and written to our stderr only when it
    fails (`asv machine --yes` prints thirty lines of questions and answers). ``log`` (with
    ``capture``): the command's asv arguments and its output appended there."""
    kept = capture or quiet
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE,
                             "text": True, "errors": "replace"} if kept else {}
    with started(line, env=env, cwd=cwd, **pipes) as proc:
        out, err = proc.communicate()
    done = subprocess.CompletedProcess(list(line), proc.returncode, out or "", err or "")
    if log is not None:  # line[3:]: what follows `python -c LAUNCH` or `python -m asv`
        with log.open("a") as file:
            file.write(f"$ asv {' '.join(line[3:])}\n{done.stdout}{done.stderr}\n")
    if quiet and done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
    return done
