"""asv started for scratch measurements (fleet nodes, compare and bisect) with a machine file
of its own instead of the user's ~/.asv-machine.json.

asv keeps every machine in ~/.asv-machine.json and rewrites it whole, in place: one `asv run`
read it half written while another process's `asv machine` rewrote it ("No information stored
about machine", or "Error parsing JSON in file '~/.asv-machine.json'"), under load. A
measurement whose results are scratch has no business in the user's file either. asv reads
the path from one static method (MachineCollection.get_machine_file_path), which the launch
program replaces. On Linux the launched asv is also killed when the process that started it
dies (PR_SET_PDEATHSIG, set in the child itself: a preexec_fn is unsafe in Ray's
multithreaded worker), so a lost node or a killed command leaves no asv running behind it.
"""

from __future__ import annotations

from pathlib import Path

from torchpulse.results.record import asv_environment

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


def command(python: str, *args: str) -> list[str]:
    """The command line of ``asv ARGS`` run by ``python`` through the launch program."""
    return [python, "-c", LAUNCH, *args]


def environment(machine_file: Path) -> dict[str, str]:
    """asv's environment (results.record.asv_environment) with ``machine_file`` as its
    machine file."""
    return {**asv_environment(), MACHINE_FILE_ENV: str(machine_file)}
