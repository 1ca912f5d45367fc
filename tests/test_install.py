"""The package asks for torch without pinning it; this project's machines pin it in one place
(constraints.txt), which asv's environments agree with."""

import json
import re
from importlib.metadata import requires
from pathlib import Path

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


FAKE_ASV = """#!/bin/sh
# stands in for asv: logs its arguments; a run of a HASHFILE exits $FAKE_REMEASURE_RC
echo "asv $*" >> "$FAKE_LOG"
case "$*" in *HASHFILE:*) exit "${FAKE_REMEASURE_RC:-0}" ;; esac
exit 0
"""

FAKE_TORCHPULSE = """#!/bin/sh
# stands in for torchpulse: `disturbed` lists a commit to measure again for its first
# $FAKE_DISTURBED_CALLS calls, then nothing; every call is logged
echo "torchpulse $1" >> "$FAKE_LOG"
if [ "$1" = disturbed ]; then
  calls=$(grep -c '^torchpulse disturbed' "$FAKE_LOG")
  while [ $# -gt 0 ]; do [ "$1" = --hashfile ] && file=$2; shift; done
  if [ "$calls" -le "${FAKE_DISTURBED_CALLS:-0}" ]; then echo abc > "$file"; else : > "$file"; fi
  echo '^bench_rnns\\.'
fi
exit 0
"""


def _dashboard(tmp_path, **env):
    """`make dashboard` of this project's Makefile with asv and torchpulse stood in for:
    (exit code, the commands it ran in order)."""
    import os
    import shutil
    import subprocess

    for name in ("Makefile", "pyproject.toml", "constraints.txt", "package.json",
                 "package-lock.json"):
        shutil.copy(ROOT / name, tmp_path / name)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("asv", FAKE_ASV), ("torchpulse", FAKE_TORCHPULSE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for stamp in (tmp_path / ".venv" / ".installed", tmp_path / "node_modules" /
                  ".package-lock.json"):  # set up already: newer than what they depend on
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    log = tmp_path / "log.txt"
    log.touch()
    proc = subprocess.run(["make", "-s", "dashboard"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "FAKE_LOG": str(log), **env},
                          timeout=600)
    return proc.returncode, log.read_text().splitlines()


def _remeasures(commands):
    return [c for c in commands if "HASHFILE:.asv/disturbed.txt" in c]


def test_the_dashboard_re_measures_in_two_passes_at_most(tmp_path):
    """What the canary marks disturbed is measured again; what is disturbed after that once
    more; then the site is published and the alert printed, whatever is left."""
    for calls, passes in ((0, 0), (1, 1), (2, 2), (5, 2)):
        work = tmp_path / f"calls{calls}"
        work.mkdir()
        code, commands = _dashboard(work, FAKE_DISTURBED_CALLS=str(calls))
        assert code == 0, commands
        assert len(_remeasures(commands)) == passes, commands
        assert all("--bench ^bench_rnns\\." in c for c in _remeasures(commands))
        assert commands[-2:] == ["torchpulse publish", "torchpulse alert"]
        assert sum(c == "torchpulse disturbed" for c in commands) == min(calls + 1, 2)


def test_a_failed_re_measurement_stops_the_dashboard_before_publishing(tmp_path):
    code, commands = _dashboard(tmp_path, FAKE_DISTURBED_CALLS="5", FAKE_REMEASURE_RC="2")
    assert code != 0
    assert len(_remeasures(commands)) == 1
    assert "torchpulse publish" not in commands
