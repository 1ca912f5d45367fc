"""torchpulse.toml and `torchpulse triage` on a generated project of 100 commits: a step of
+10 % at commit 20 (old) and one at commit 90 (recent), a flat series, a series stepping
+10 % at 40 then +6 % at 70, and two series stepping together at 50 where a machine was
changed (one of them with a real step at 80), and a throughput that rises at 30 and drops
at 60. What must hold: an accepted step stops
alerting and a further rise on top of it alerts at its own commit with its own size; an
infrastructure entry takes that commit's change out of every series of the machine and
nothing else; every format says what the file says; bad input is one line, exit 2, and the
file is untouched."""

import json
import shutil

import numpy as np
import pytest
import tomllib
from clirun import exit_code

from torchpulse.evaluation import project as generated

COMMITS = 100
SERIES = {  # name: [(commit, factor), ...]
    "old": [(20, 1.10)],
    "recent": [(90, 1.10)],
    "flat": [],
    "twice": [(40, 1.10), (70, 1.06)],
    "moved": [(50, 1.08)],
    "moved_then_real": [(50, 1.08), (80, 1.10)],
    "throughput": [(30, 1.10), (60, 0.85)],  # items/s: up is better, then a drop
}
BENCH = "bench.Suite.time_it"


def _name(series: str) -> str:
    return f"{BENCH}('{series}')"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("triage")
    shas = generated.git_repo(path, COMMITS)
    rng = np.random.default_rng(7)
    levels = {}
    for name, steps in SERIES.items():
        level = np.full(COMMITS, 1.0)
        for at, factor in steps:
            level[at:] *= factor
        levels[name] = level * np.exp(rng.normal(0, 0.005, COMMITS))  # between runs
    names = list(SERIES)

    def rows(c):
        drawn = [list(levels[n][c] * np.exp(rng.normal(0, 0.005, 5))) for n in names]
        yield BENCH, [float(np.median(d)) for d in drawn], drawn

    generated.write(path, shas, {BENCH: generated.declare([repr(n) for n in names], "time",
                                                          "seconds")}, rows, [])
    return path, shas


@pytest.fixture
def proj(built, tmp_path):
    """A copy of the built project a test may change."""
    path, shas = built
    copy = tmp_path / "p"
    shutil.copytree(path, copy, symlinks=True)
    return copy, shas


def _alert(path, capsys, *extra):
    code = exit_code(["alert", "--config", str(path / "asv.conf.json"), "--format", "json",
                      *extra])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.startswith("{") else out


def _triage(path, *argv):
    return exit_code(["triage", *argv, "--config", str(path / "asv.conf.json")])


def _at(report, shas):
    return {a["params"][0].strip("'"): (shas.index(a["commit"]), a["ratio"], a["triage"])
            for a in report["alerts"]}


def test_accepted_steps_stop_alerting_and_a_rise_on_top_alerts_again(proj, capsys):
    path, shas = proj
    code, report = _alert(path, capsys)
    assert code == 1
    found = _at(report, shas)
    assert set(found) == {"old", "recent", "twice", "moved_then_real", "moved"}
    assert found["old"][0] == 20 and found["recent"][0] == 90
    # the old step accepted: only it stops alerting
    assert _triage(path, "accept", _name("old"), shas[20], "--note", "a correctness fix") == 0
    code, report = _alert(path, capsys)
    found = _at(report, shas)
    assert "old" not in found and found["recent"][0] == 90 and code == 1
    assert [(t["triage"]["state"], t["commit"]) for t in report["triaged"]] == \
        [("accepted", shas[20])]
    old = next(v for v in report["verdicts"] if v["params"] == ["'old'"])
    assert old["status"] == "ok"
    # the 40 step accepted: the +6 % at 70 on top of it alerts, at 70, at its own size
    assert _triage(path, "accept", _name("twice"), shas[40]) == 0
    code, report = _alert(path, capsys)
    commit, ratio, _ = _at(report, shas)["twice"]
    assert commit == 70 and ratio == pytest.approx(1.06, abs=0.01)
    # everything accepted (a glob over names): exit 0
    for at in (90, 70, 50, 80):
        assert _triage(path, "accept", f"{BENCH}(*)", shas[at]) == 0
    code, report = _alert(path, capsys)
    assert code == 0 and report["alerts"] == []
    # the file says it all, in the order given, and reads back
    capsys.readouterr()
    assert _triage(path, "list", "--format", "json") == 0
    listed = json.loads(capsys.readouterr().out)["triage"]
    assert [e["commit"] for e in listed] == [shas[i] for i in (20, 40, 90, 70, 50, 80)]
    assert listed[0]["note"] == "a correctness fix"
    # removing the first entry brings its alert back
    assert _triage(path, "remove", "1") == 0
    code, report = _alert(path, capsys)
    assert code == 1 and set(_at(report, shas)) == {"old"}


def test_an_infrastructure_entry_takes_out_its_commit_in_every_series_and_nothing_else(
        proj, capsys):
    path, shas = proj
    _, before = _alert(path, capsys)
    assert _triage(path, "infrastructure", "*", shas[50], "--machine", generated.MACHINE,
                   "--note", "new runner image") == 0
    code, after = _alert(path, capsys)
    was, now = _at(before, shas), _at(after, shas)
    assert "moved" not in now  # its only step was the machine's
    assert now["moved_then_real"][0] == 80  # its own step stays, at its own size
    assert now["moved_then_real"][1] == pytest.approx(1.10, abs=0.015)
    for name in ("old", "recent", "twice"):  # untouched by it
        assert now[name][:2] == pytest.approx(was[name][:2])
    assert {t["params"][0] for t in after["triaged"]} == {"'moved'", "'moved_then_real'"}
    # --history shows the change as measured, beside the entry
    capsys.readouterr()
    _, history = _alert(path, capsys, "--history")
    at50 = [a for a in history["alerts"] if a["commit"] == shas[50]]
    assert {a["params"][0] for a in at50} == {"'moved'", "'moved_then_real'"}
    assert all(a["triage"]["state"] == "infrastructure" for a in at50)
    assert all(a["triage"] is None for a in history["alerts"] if a["commit"] != shas[50])


def test_investigating_and_fixed_are_shown_and_still_gate(proj, capsys):
    path, shas = proj
    assert _triage(path, "investigating", _name("recent"), shas[90], "--note", "ask @x") == 0
    assert _triage(path, "fixed", _name("old"), shas[20], "--fixed-by", shas[95]) == 0
    code, report = _alert(path, capsys)
    found = _at(report, shas)
    assert code == 1
    assert found["recent"][2]["state"] == "investigating"
    assert found["old"][2] == {"series": _name("old"), "machine": "*", "commit": shas[20],
                               "state": "fixed", "note": "", "fixed_by": shas[95]}
    assert exit_code(["alert", "--config", str(path / "asv.conf.json")]) == 1
    text = capsys.readouterr().out
    assert "triage: investigating: ask @x" in text
    assert f"triage: fixed by {shas[95][:8]} (the level is not back)" in text
    assert exit_code(["alert", "--config", str(path / "asv.conf.json"), "--format",
                      "markdown"]) == 1
    assert "investigating: ask @x" in capsys.readouterr().out


def test_stats_count_the_marked_false_alarms_and_suggest_a_threshold(proj, capsys):
    path, shas = proj
    assert _triage(path, "infrastructure", "*", shas[50]) == 0  # two +8 % rises
    assert _triage(path, "accept", _name("recent"), shas[90]) == 0  # +10 %
    capsys.readouterr()
    assert exit_code(["triage", "stats", "--config", str(path / "asv.conf.json"),
                      "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["tally"] == [{"rule": "time", "machine": generated.MACHINE,
                               "states": {"infrastructure": 2, "accepted": 1},
                               "false_alarms": 2}]
    (s,) = stats["suggestions"]
    assert s["false_alarms"] == 2 and s["real"] == 1
    assert 0.07 < s["largest_false"] < 0.09 and 0.09 < s["smallest_real"] < 0.11
    assert s["largest_false"] < s["threshold"] <= s["smallest_real"]
    assert exit_code(["triage", "stats", "--config", str(path / "asv.conf.json")]) == 0
    text = capsys.readouterr().out
    assert "would have kept 2 false alarm(s) quiet" in text and "threshold now 5.0%" in text


def test_benchmark_rules_set_thresholds_and_ignore_series(proj, capsys):
    path, shas = proj
    (path / "torchpulse.toml").write_text(
        '# our thresholds\n[[benchmark]]\nmatch = "*(\'old\')"\nthreshold = 0.2\n\n'
        '[[benchmark]]\nmatch = "*(\'recent\')"\nignore = true\n')
    code, report = _alert(path, capsys)
    found = _at(report, shas)
    assert "old" not in found and "recent" not in found and "twice" in found
    assert report["ignored"] == 1
    old = next(v for v in report["verdicts"] if v["params"] == ["'old'"])
    assert old["threshold"] == 0.2
    # an edit keeps what people wrote
    assert _triage(path, "accept", _name("twice"), shas[40], "--note", "ok") == 0
    text = (path / "torchpulse.toml").read_text()
    assert text.startswith("# our thresholds\n[[benchmark]]") and "[[triage]]" in text


@pytest.mark.parametrize("argv, message", [
    (["accept", "nothing.like.this", "HEAD"], "matches no stored series"),
    (["accept", "*", "no-such-rev"], "COMMIT"),
    (["accept", "*", "HEAD", "--note", "x" * 1_000_000], "more than 2000"),
    (["accept", "*", "HEAD", "--note", "a\x1b[31mred\nline"], "control character"),
    (["fixed", "*", "HEAD"], "--fixed-by"),
    (["accept", "*", "HEAD", "--fixed-by", "HEAD"], "fixed_by belongs to state fixed"),
    (["remove", "3"], "no triage entry 3"),
])
def test_bad_input_is_one_line_and_changes_nothing(proj, capsys, argv, message):
    path, shas = proj
    assert _triage(path, "accept", _name("old"), shas[20]) == 0
    before = (path / "torchpulse.toml").read_bytes()
    capsys.readouterr()
    assert _triage(path, *argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert (path / "torchpulse.toml").read_bytes() == before


@pytest.mark.parametrize("text, message", [
    ("[[triage]]\nseries = '*'\ncommit = 'abc'\nstate = 'accepted'\n", "full 40-character"),
    ("[[triage]]\nseries = '*'\ncommit = '" + "a" * 40 + "'\nstate = 'ok'\n",
     "state must be one of"),
    ("[[benchmark]]\nmatch = '*'\nthreshold = -1\n", "fraction above 0"),
    ("[[benchmark]]\nmatch = '*'\nthreshod = 0.1\n", "unknown field 'threshod'"),
    ("[thresholds]\n", "unknown table"),
    ("[[triage]\n", "not TOML"),
])
def test_a_broken_file_is_refused_in_one_line(proj, capsys, text, message):
    path, _ = proj
    (path / "torchpulse.toml").write_text(text)
    assert exit_code(["alert", "--config", str(path / "asv.conf.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "torchpulse.toml" in err and err.count("\n") == 1, err


def test_a_higher_is_better_series_alerts_on_its_drop_shown_as_measured(proj, capsys):
    path, shas = proj
    code, report = _alert(path, capsys)
    assert "throughput" not in _at(report, shas)  # read as lower is better: back down, fine
    (path / "torchpulse.toml").write_text(
        '[[benchmark]]\nmatch = "*(\'throughput\')"\ndirection = "higher_is_better"\n')
    code, report = _alert(path, capsys)
    (a,) = [a for a in report["alerts"] if a["params"] == ["'throughput'"]]
    assert code == 1 and shas.index(a["commit"]) == 60
    assert a["direction"] == "regression" and a["higher_is_better"] is True
    assert a["before"] == pytest.approx(1.10, rel=0.02)  # as measured, not 1/value
    assert a["after"] == pytest.approx(0.935, rel=0.02) and a["ratio"] < 1
    (v,) = [v for v in report["verdicts"] if v["params"] == ["'throughput'"]]
    assert v["higher_is_better"] is True and v["status"] == "regression"
    assert exit_code(["alert", "--config", str(path / "asv.conf.json")]) == 1
    said = capsys.readouterr().out.split("throughput")[0].splitlines()[-1]
    assert "REGRESSION" in said and "-15." in said
    # --history: the rise at 30 is an improvement, the drop at 60 the regression
    _, history = _alert(path, capsys, "--history")
    moves = {shas.index(a["commit"]): a["direction"] for a in history["alerts"]
             if a["params"] == ["'throughput'"]}
    assert moves == {30: "improvement", 60: "regression"}
    # accepted, the drop stops alerting; stats count it as a change that made it worse
    assert _triage(path, "accept", _name("throughput"), shas[60]) == 0
    code, report = _alert(path, capsys)
    assert "throughput" not in _at(report, shas)
    capsys.readouterr()
    assert exit_code(["triage", "stats", "--config", str(path / "asv.conf.json"),
                      "--format", "json"]) == 0
    (mark,) = json.loads(capsys.readouterr().out)["marks"]
    assert mark["size"] == pytest.approx(1.10 / 0.935 - 1, abs=0.02)


def test_a_range_accepts_every_change_in_it_and_nothing_else(proj, capsys):
    path, shas = proj
    assert _triage(path, "accept", _name("twice"), shas[40], "--through", shas[75]) == 0
    code, report = _alert(path, capsys)
    found = _at(report, shas)
    assert "twice" not in found and found["old"][0] == 20  # the others alert as before
    assert sorted(shas.index(t["commit"]) for t in report["triaged"]) == [40, 70]
    capsys.readouterr()
    assert _triage(path, "list") == 0
    assert f"{shas[40][:12]}..{shas[75][:12]}" in capsys.readouterr().out
    assert _triage(path, "accept", _name("old"), shas[20], "--through", shas[10]) == 2
    assert "is not after" in capsys.readouterr().err


def test_an_edit_waits_for_another_and_then_lands(proj):
    """While another edit holds the file's folder, `triage` says it waits and writes
    nothing; once that edit ends it reads the file afresh, so both entries stay."""
    import subprocess
    import sys

    from torchpulse.files import locked_folder

    path, shas = proj
    with locked_folder(path):
        run = subprocess.Popen([sys.executable, "-m", "torchpulse.cli", "triage", "accept",
                                _name("recent"), shas[90], "--config",
                                str(path / "asv.conf.json")], stderr=subprocess.PIPE,
                               text=True)
        said = run.stderr.readline()  # the line it prints before it waits
        assert "waiting for another edit of torchpulse.toml" in said, said
        assert run.poll() is None and not (path / "torchpulse.toml").exists()
        # the other edit, written while the command waits
        (path / "torchpulse.toml").write_text(
            f"[[triage]]\nseries = \"{_name('old')}\"\ncommit = '{shas[20]}'\n"
            "state = 'accepted'\n")
    assert run.wait(timeout=120) == 0, run.stderr.read()
    entries = tomllib.loads((path / "torchpulse.toml").read_text())["triage"]
    assert sorted(e["commit"] for e in entries) == sorted([shas[20], shas[90]])



def test_of_two_entries_on_one_change_the_later_wins(proj, capsys):
    path, shas = proj
    assert _triage(path, "investigating", _name("recent"), shas[90], "--note", "ours?") == 0
    code, report = _alert(path, capsys)
    assert _at(report, shas)["recent"][2]["state"] == "investigating"
    assert _triage(path, "infrastructure", "*", shas[90], "--note", "runner image") == 0
    code, report = _alert(path, capsys)
    assert "recent" not in _at(report, shas)
    (t,) = [t for t in report["triaged"] if t["params"] == ["'recent'"]]
    assert t["triage"]["state"] == "infrastructure"
