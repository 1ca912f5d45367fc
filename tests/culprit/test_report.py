"""What compare and bisect print, with benchmark names from a hostile suite."""

import json
import re

from torchpulse.analysis import sequential
from torchpulse.analysis.settings import Settings
from torchpulse.culprit.bisect import Bisection, Probe
from torchpulse.culprit.compare import NOT_COMPARED, Comparison, Outcome
from torchpulse.culprit.report import bisection_text, render_comparison
from torchpulse.culprit.runs import key, selection

HOSTILE = "bench.time_x('<script>alert(1)</script>|\x1b[31m%0A')"


def _comparison():
    iv = sequential.Interval(3, 0.4, 0.3, 0.5, 0.99)
    return Comparison("a" * 40, "b" * 40, Settings(threshold=0.05, alpha=0.05), 20, [
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
    c = Comparison("a" * 40, "b" * 40, Settings(threshold=0.05, alpha=0.05), 20, [
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


def _environments():
    """A comparison of two environments: one count that rose (its functions), one wall time
    decided, a python path with markup and an escape sequence in it."""
    from torchpulse.culprit import environments as envs
    from torchpulse.instructions.count import Counted

    one = sequential.Interval(1, 0.0488, 0.0478, 0.0498, 1.0)
    timed = sequential.Interval(4, -0.1, -0.15, -0.05, 0.99)
    outcomes = [
        Outcome(envs.key("rnns/py/forward", envs.INSTRUCTIONS), sequential.SLOWER, one, 1,
                1_000_000, 1_050_000, unit="instructions"),
        Outcome(envs.key("rnns/py/forward", envs.SECONDS), sequential.FASTER, timed, 4,
                0.002, 0.0018, unit="seconds"),
        Outcome(envs.key("rnns/py/forward", envs.PEAK), sequential.EQUIVALENT, timed, 4,
                300 * 2**20, 301 * 2**20, unit="bytes"),
    ]
    comparison = Comparison("A", "B", Settings(threshold=0.05, alpha=0.05), 5, outcomes, 8)

    class Runs:
        sides = {"A": envs.Side("A", "/envs/a|<b>/bin/python\x1b[2J", {"torch": "2.13.0+cpu",
                                                                     "git_version": "c" * 40}),
                 "B": envs.Side("B", "/envs/b/bin/python", {"torch": "2.14.1+cu130",
                                                           "cuda": "13.0"})}

    Runs.sides["A"].counted = {"rnns/py/forward": Counted(
        "rnns/py/forward", 1_000_000, [1_000_000], {"f(int) [l.so]": 600_000,
                                                    "g [l.so]": 400_000})}
    Runs.sides["B"].counted = {"rnns/py/forward": Counted(
        "rnns/py/forward", 1_050_000, [1_050_000], {"f(long) [l.so]": 630_000,
                                                    "g [l.so]": 420_000})}
    return comparison, Runs()


def test_two_environments_read_as_one_table_with_the_functions_behind_a_moved_count():
    from torchpulse.culprit.report import render_environments

    comparison, runs = _environments()
    text = render_environments(comparison, runs, "text")
    assert "\x1b" not in text
    assert text.startswith("B torch 2.14.1+cu130 (CUDA 13.0) against A torch 2.13.0+cpu "
                           "(git cccccccccccc, CPU build)")
    row = next(line for line in text.splitlines() if line.startswith("rnns/py/forward"))
    assert "1,000,000 -> 1,050,000" in row and "+5.00 %" in row and "slower" in row
    assert "2 ms -> 1.8 ms" in row and "faster" in row and "300 MiB -> 301 MiB" in row
    # the function that moved to another symbol is netted with its old name, its share given
    assert "+30,000 (60% of the change)  f(long) [l.so] (600,000 -> 630,000, was f(int)" in text
    markdown = render_environments(comparison, runs, "markdown")
    assert "\x1b" not in markdown and "<b>" not in markdown and "\\|" in markdown
    report = json.loads(render_environments(comparison, runs, "json"))
    (row,) = report["workloads"]
    assert row["instructions"]["decision"] == "slower" and row["instructions"]["b"] == 1_050_000
    assert row["wall time"]["interval"][1] < 1 and row["peak memory"]["unit"] == "bytes"
    assert row["functions"][0] == {"name": "f(long) [l.so]", "a": 600_000, "b": 630_000,
                                   "change": 30_000, "renamed_from": "f(int) [l.so]"}
    assert report["b"]["build"]["cuda"] == "13.0" and report["slower"] == 1
