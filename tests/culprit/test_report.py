"""What compare and bisect print, with benchmark names from a hostile suite."""

import json
import re

from torchpulse.analysis import sequential
from torchpulse.culprit.bisect import Bisection, Probe
from torchpulse.culprit.compare import NOT_COMPARED, Comparison, Outcome
from torchpulse.culprit.report import bisection_text, render_comparison
from torchpulse.culprit.runs import key, selection

HOSTILE = "bench.time_x('<script>alert(1)</script>|\x1b[31m%0A')"


def _comparison():
    iv = sequential.Interval(3, 0.4, 0.3, 0.5, 0.99)
    return Comparison("a" * 40, "b" * 40, 0.05, 0.05, 20, [
        Outcome(HOSTILE, sequential.SLOWER, iv, 3, 0.001, 0.0015),
        Outcome("bench.time_gone", NOT_COMPARED, None, 1, 0.001, None, "head run 1: not "
                "measured"),
    ], 6)


def test_markdown_escapes_names_and_counts_decisions():
    text = render_comparison(_comparison(), "markdown")
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\x1b" not in text and "\\|" in text
    assert "1 benchmark(s) slower beyond 5%" in text
    assert "1\\.492x" in text  # exp(0.4), the ratio of the interval's mean


def test_text_and_github_show_no_escape_sequence_or_line_break():
    for fmt in ("text", "github"):
        text = render_comparison(_comparison(), fmt)
        assert "\x1b" not in text
    github = render_comparison(_comparison(), "github")
    assert github.count("\n") == 2 and github.startswith("::error title=Slower::")
    assert "%250A" in github  # the name's own "%0A" cannot become a line break
    assert "::warning title=Not compared::bench.time_gone" in github


def test_values_are_printed_in_their_benchmarks_units():
    iv = sequential.Interval(1, 0.01, 0.01, 0.01, 0.99)
    hostile_unit = "s | <img src=x onerror=alert(1)> \x1b[2J"
    c = Comparison("a" * 40, "b" * 40, 0.05, 0.05, 20, [
        Outcome("bench_instructions.I.track_instructions", sequential.SLOWER, iv, 1,
                1_704_000.0, 1_721_040.0, unit="instructions"),
        Outcome("bench_rnns.LSTM.time_forward", sequential.SLOWER, iv, 3, 0.001, 0.0015,
                unit="seconds"),
        Outcome("bench_x.track_odd", sequential.SLOWER, iv, 3, 2.0, 3.0, unit=hostile_unit),
        Outcome("bench_x.track_unsaid", sequential.SLOWER, iv, 3, 2.0, 3.0)], 6)
    text = render_comparison(c, "text")
    # counts in full, not as seconds (compare printed "1.704e+06 s -> 1.721e+06 s")
    assert "1,704,000 instructions -> 1,721,040 instructions" in text
    assert "1 ms -> 1.5 ms" in text
    assert text.rstrip().endswith("  2 -> 3")  # no unit said: a bare number, not seconds
    assert "\x1b" not in text
    markdown = render_comparison(c, "markdown")
    assert "| 1,704,000 instructions | 1,721,040 instructions |" in markdown
    assert "<img" not in markdown and "&lt;img" in markdown
    units = [b["unit"] for b in json.loads(render_comparison(c, "json"))["benchmarks"]]
    assert sorted(units, key=str) == sorted(["instructions", "seconds", hostile_unit, None],
                                            key=str)


def test_json_carries_every_outcome():
    data = json.loads(render_comparison(_comparison(), "json"))
    assert data["slower"] == 1 and len(data["benchmarks"]) == 2
    first = data["benchmarks"][0]
    assert first["benchmark"] == HOSTILE and first["decision"] == "slower"
    assert first["interval"][0] < first["ratio"] < first["interval"][1]
    assert data["benchmarks"][1]["ratio"] is None


def test_bisection_text_names_the_commit_or_the_suspects():
    iv = sequential.Interval(3, 0.3, 0.2, 0.4, 0.99)
    probe = Probe("c2", 1, sequential.BAD, iv, 3)
    found = Bisection("c0", "c3", HOSTILE, ["c1", "c2", "c3"], iv, sequential.SLOWER,
                      [probe, Probe("c1", 0, sequential.GOOD, iv, 4)], 0, 1)
    text = bisection_text(found, {"c2": "make it \x1b[2Jslow"})
    assert "first bad commit: c2 make it \\x1b[2Jslow" in text and "\x1b" not in text
    assert "its parent c1 is good" in text
    stuck = Bisection("c0", "c3", "k", ["c1", "c2", "c3"], iv, sequential.SLOWER,
                      [Probe("c2", 1, sequential.UNDECIDED, iv, 20)], -1, 2)
    assert "one of these 3" in bisection_text(stuck, {})


def test_selection_matches_exactly_the_keys():
    keys = [key("b.time_f", ("'a'", "1")), key("b.time_g", ())]
    pattern = selection(keys)
    assert re.search(pattern, "b.time_f('a', 1)") and re.search(pattern, "b.time_g")
    assert not re.search(pattern, "b.time_f('a', 10)")
    assert not re.search(pattern, "b.time_gx") and not re.search(pattern, "xb.time_g")
