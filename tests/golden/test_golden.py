"""Every report, byte for byte, on the golden project (tests/golden/project.py): the alert in
each format, now and over the history, evaluate-detection on a fixed seed, and the published
site's pages. A change of any is either a change of what torchpulse says -- the reference is
then written again, on purpose, and the diff reviewed with the code
(``TORCHPULSE_UPDATE_GOLDEN=1 pytest tests/golden``) -- or a move of code that changed what
it should not have.

JSON reports are compared as data, each number to 12 significant digits: the last digits of
a float move with the BLAS kernel the processor gets (this project's golden JSON moved in
its 16th digit on a fresh install on another host, at fec814d), which is not a change of what
torchpulse says."""

import json
import os
import re
from pathlib import Path

import pytest
from golden import project

from torchpulse.cli import main

EXPECTED = Path(__file__).parent / "expected"
UPDATE = os.environ.get("TORCHPULSE_UPDATE_GOLDEN") == "1"
FORMATS = ("text", "markdown", "json", "github")
PAGES = ("torchpulse.html", "torchpulse-alerts.json", "regressions.json", "regressions.xml",
         "index.json")


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("golden") / "project"
    project.build(root)
    return root


def _rounded(value):
    """``value`` (parsed JSON) with each float to 12 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _comparable(name: str, text: str):
    """What is compared: the text, or for JSON (after an "exit N" line, if any) the data."""
    if not name.endswith(".json"):
        return text
    head, _, body = text.partition("\n") if text.startswith("exit ") else ("", "", text)
    return head, _rounded(json.loads(body))


def _same(name: str, text: str) -> None:
    path = EXPECTED / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    assert _comparable(name, expected) == _comparable(name, text), (
        f"{name} is not what tests/golden/expected/{name} holds; if the change is meant, "
        "write it again with TORCHPULSE_UPDATE_GOLDEN=1 and review the diff")


def _alert(golden: Path, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "out"
    code = main(["alert", "--config", str(golden / "asv.conf.json"), "--output", str(out),
                 *args])
    return f"exit {code}\n" + out.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_alert_says_what_it_said(golden, tmp_path, fmt):
    _same(f"alert.{fmt}", _alert(golden, tmp_path, "--format", fmt))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_alert_over_the_history_says_what_it_said(golden, tmp_path, fmt):
    _same(f"alert-history.{fmt}", _alert(golden, tmp_path, "--history", "--format", fmt))


def test_the_published_pages_say_what_they_said(golden, capsys):
    assert main(["publish", "--config", str(golden / "asv.conf.json")]) == 0
    capsys.readouterr()
    for page in PAGES:
        _same(f"site-{page}", (golden / "html" / page).read_text(encoding="utf-8"))


def test_evaluate_detection_on_a_fixed_seed_says_what_it_said(tmp_path, capsys):
    out = tmp_path / "evaluation.md"
    code = main(["evaluate-detection", "--commits", "30", "--per-cell", "1",
                 "--noise-series", "4", "--seed", "3", "--no-otava", "--no-asv",
                 "--shape-commits", "40", "--output", str(out)])
    capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    # what the machine says about itself: its speed, its Python, its cores
    text = re.sub(r"\b\d+(\.\d+)? s\b", "<t> s", text)
    text = re.sub(r"\(python [^)]*\)", "(<python>)", text)
    _same("evaluate-detection.md", f"exit {code}\n{text}")
