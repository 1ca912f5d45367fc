"""Names from results files are anyone's: no report format lets them become markup or
terminal control sequences."""

import re

import pytest

from torchpulse.analysis.detector import Point
from torchpulse.analysis.judge import evaluate
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.reports import render
from torchpulse.results.gitrepo import History

HOSTILE = "<script>alert(1)</script>|`x`\x1b[31mred\x1b]0;title\x07"


@pytest.fixture(scope="module")
def report():
    n = 12
    values = [0.010] * 7 + [0.020] * 5  # an active regression: the name reaches every list
    key = SeriesKey(f"bench.{HOSTILE}.time_x", (f"'{HOSTILE}'",), f"m{HOSTILE}",
                    f"env{HOSTILE}")
    series = Series(key, "seconds", [Point(f"c{i}", v, (v, v * 1.001, v * 0.999))
                                     for i, v in enumerate(values)])
    return evaluate([series], History([f"c{i}" for i in range(n)]))


@pytest.mark.parametrize("fmt", ["text", "markdown", "github", "json"])
def test_no_format_passes_control_characters(report, fmt):
    assert report.alerts
    out = render(report, fmt)
    assert "\x1b" not in out and "\x07" not in out


def test_markdown_shows_names_as_text(report):
    out = render(report, "markdown")
    assert "<script" not in out and "&lt;script&gt;" in out
    header = "| benchmark | machine / env | before | after | change | p | culprits |"
    row = out.splitlines()[out.splitlines().index(header) + 2]
    # the name's pipes and backticks are escaped: the row keeps the table's columns
    assert len(re.findall(r"(?<!\\)\|", row)) == header.count("|")
    assert "\\|\\`x\\`" in row


def test_text_shows_escapes_instead_of_sequences(report):
    out = render(report, "text")
    assert "\\x1b[31mred" in out and "\\x07" in out


@pytest.mark.parametrize("rise_from_zero", [False, True])
def test_a_hostile_unit_stays_text_in_markdown(rise_from_zero):
    """A unit passed merge and publish (or a tree that skipped merge): in a PR comment it must
    not become links, images, HTML or extra table cells."""
    unit = "s | INJECTED [click](https://x.test) ![pixel](https://x.test/p.png) <img src=x " \
           "onerror=alert(1)> | x"
    low = 0.0 if rise_from_zero else 10.0
    values = [low] * 7 + [20.0] * 5
    series = Series(SeriesKey("bench.track_x", (), "m", "env"), unit,
                    [Point(f"c{i}", v, (v, v, v)) for i, v in enumerate(values)])
    out = render(evaluate([series], History([f"c{i}" for i in range(12)])), "markdown")
    header = "| benchmark | machine / env | before | after | change | p | culprits |"
    row = out.splitlines()[out.splitlines().index(header) + 2]
    assert len(re.findall(r"(?<!\\)\|", row)) == header.count("|")
    assert "<img" not in out and "&lt;img" in row
    assert "](" not in out and "![" not in out  # no link or image syntax left whole
