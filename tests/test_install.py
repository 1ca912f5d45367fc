"""The package asks for torch without pinning it; this project's machines pin it in one place
(constraints.txt), which asv's environments agree with."""

import json
import re
from importlib.metadata import requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            pins[req.name] = str(req.specifier)
    return pins


def test_installed_metadata_has_a_torch_lower_bound_and_no_pin():
    torch = [Requirement(r) for r in requires("torchpulse") or []
             if Requirement(r).name == "torch"]
    assert len(torch) == 1
    operators = {spec.operator for spec in torch[0].specifier}
    assert operators == {">="}, torch[0]


def test_constraints_pin_torch_and_asv_environments_agree():
    assert _pins()["torch"] == "==2.13.0"
    text = (ROOT / "asv.conf.json").read_text()
    conf = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    assert "==" + conf["matrix"]["req"]["torch"] == _pins()["torch"]
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_make_clean_removes_what_the_dashboard_rebuilds_and_keeps_the_records(tmp_path):
    """`make clean` deletes the site, asv's environments and the re-measure list; the results
    and the confirmation ledger (which steps were measured twice) are records, not builds."""
    import shutil
    import subprocess

    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    made = ["html/index.html", ".asv/env/abc/bin/python", ".asv/disturbed.txt",
            ".asv/confirmed.txt", "results/vm/machine.json", "mine.txt"]
    for name in made:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    subprocess.run(["make", "-s", "clean"], cwd=tmp_path, check=True, capture_output=True)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == [".asv/confirmed.txt", "Makefile", "mine.txt", "results/vm/machine.json"]


FAKE_TORCHPULSE = """#!/bin/sh
# stands in for torchpulse: logs its arguments, exits $FAKE_RC
echo "torchpulse $*" >> "$FAKE_LOG"
exit "${FAKE_RC:-0}"
"""


def _dashboard(tmp_path, *make_args, **env):
    """`make dashboard` of this project's Makefile with torchpulse stood in for: (exit code,
    the commands it ran in order)."""
    import os
    import shutil
    import subprocess

    for name in ("Makefile", "pyproject.toml", "constraints.txt", "package.json",
                 "package-lock.json"):
        shutil.copy(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "torchpulse").write_text(FAKE_TORCHPULSE)
    (bin_dir / "torchpulse").chmod(0o755)
    for stamp in (tmp_path / ".venv" / ".installed", tmp_path / "node_modules" /
                  ".package-lock.json"):  # set up already: newer than what they depend on
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    log = tmp_path / "log.txt"
    log.touch()
    proc = subprocess.run(["make", "-s", "dashboard", *make_args], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={**os.environ, "FAKE_LOG": str(log), **env}, timeout=600)
    return proc.returncode, log.read_text().splitlines()


@pytest.mark.parametrize("rc, ok", [(0, True), (1, True), (2, False), (3, False)])
def test_make_dashboard_is_the_dashboard_command(tmp_path, rc, ok):
    """The Makefile runs the one pipeline, `torchpulse dashboard`, with its N and PRESET; a
    regression (1) is the job's answer, bad input (2) or a failed benchmark (3) fail make."""
    code, commands = _dashboard(tmp_path, "N=7", "PRESET=smoke", FAKE_RC=str(rc))
    assert commands == ["torchpulse dashboard -n 7 --preset smoke"]
    assert (code == 0) == ok
