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
