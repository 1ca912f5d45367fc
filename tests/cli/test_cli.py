"""The command line as a whole: fast help, one error base, the same exit codes everywhere."""

import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys

from clirun import exit_code
from paths import ROOT

import torchpulse
from torchpulse.cli import build_parser, main
from torchpulse.cli.args import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from torchpulse.errors import TorchpulseError

# exceptions that never leave their module: turned into a status where they are raised
# caught where raised: eager failing beside compile; a file past its reader's bound (an
# OSError every caller of files.read_input turns into its own one-line error)
INTERNAL_SIGNALS = {"torchpulse.compile.performance.EagerError", "torchpulse.files.FileTooLong"}
HEAVY = ("torch", "scipy", "numpy", "asv")


def commands() -> list[list[str]]:
    """Every command and subcommand of the parser, as argv prefixes."""
    found = []
    parser = build_parser()
    top = next(a for a in parser._actions if a.dest == "command")  # argparse's subparsers
    for name, sub in top.choices.items():
        found.append([name])
        for action in sub._actions:
            if getattr(action, "choices", None) and action.dest == "action":
                found += [[name, child] for child in action.choices]
    return found


def test_every_command_is_listed():
    names = {c[0] for c in commands()}
    assert names == {"check", "runners", "bench", "profile", "import", "merge", "alert",
                     "disturbed", "evaluate-detection", "publish", "serve", "autograd",
                     "dynamo", "record", "init", "compare", "bisect", "fleet", "export",
                     "dashboard", "triage"}
    assert ["autograd", "compare"] in commands() and ["fleet", "run"] in commands()
    assert ["triage", "accept"] in commands() and ["triage", "stats"] in commands()


def test_help_imports_neither_torch_nor_scipy():
    """`torchpulse --help` and every COMMAND --help, in a fresh interpreter: none of them may
    import torch, scipy, numpy or asv (each costs seconds or tenths on 2 cores)."""
    script = f"""
import contextlib, io, json, sys
from torchpulse.cli import main
codes = []
for argv in {[[], *commands()]!r}:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main([*argv, "--help"])
        except SystemExit as exc:
            codes.append(exc.code)
print(json.dumps({{"codes": codes, "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    out = json.loads(proc.stdout)
    assert out["codes"] == [0] * (len(commands()) + 1)
    assert out["heavy"] == []


def _classes():
    for info in pkgutil.walk_packages(torchpulse.__path__, "torchpulse."):
        if info.name.endswith(("otava_worker", "__main__")):  # runs elsewhere / exits
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and issubclass(cls, BaseException):
                yield f"{cls.__module__}.{cls.__qualname__}", cls


def test_every_error_of_torchpulse_has_the_one_base():
    """main() catches TorchpulseError alone: an error class outside it would reach the user
    as a traceback."""
    errors = dict(_classes())
    assert len(errors) > 20
    outside = {name for name, cls in errors.items() if not issubclass(cls, TorchpulseError)}
    assert outside == INTERNAL_SIGNALS


def test_a_library_error_is_one_line_and_exit_2(capsys, tmp_path):
    # a config that is not there: the error comes from deep in results/, not from the CLI
    assert main(["alert", "--config", str(tmp_path / "missing" / "asv.conf.json")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("torchpulse alert: error: ") and err.count("\n") == 1
    # what the user typed, a line break and an escape sequence in it, stays one plain line
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "asv.conf.json").write_text('{"version": 1, "repo": ".", "branches": ["main"]}')
    assert main(["record", "--config", str(tmp_path / "asv.conf.json"),
                 "--commit", "HEAD\nx\x1b[2J"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "HEAD\\nx" in err


def test_usage_errors_are_one_line_and_exit_2(capsys):
    assert exit_code(["bench", "--preset", "huge"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "invalid choice: 'huge'" in err and err.count("\n") == 1 and "usage:" not in err


def test_exit_codes_are_documented_in_the_dashboard_guide():
    guide = (ROOT / "docs" / "dashboard.md").read_text()
    section = guide.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows[1:]] == \
        [str(EXIT_OK), str(EXIT_FAILED), str(EXIT_USAGE)]


def test_the_readmes_table_of_commands_is_the_parsers():
    """Every command the parser knows has one row in the README's table, and no row names a
    command the parser does not know."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `torchpulse ([a-z-]+)` \|", section, re.M)
    assert sorted(rows) == sorted(c[0] for c in commands() if len(c) == 1)


def test_module_entry_point_and_version():
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "--version"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == f"torchpulse {torchpulse.__version__}"


def test_a_closed_pipe_is_no_traceback():
    """`torchpulse runners | head -1`: the reader is gone before the output is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "runners"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, check=False)
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == ""
