"""torchpulse alert on synthetic asv projects: the JSON contract, formats, exit codes,
bad input; evaluate-detection's scoring (the CI gate itself runs in e2e/)."""

import json
import re
import shlex

import pytest
from clirun import exit_code

from torchpulse.cli import main
from torchpulse.evaluation import detectors, scoring, synthetic
from torchpulse.evaluation import project as evaluation_project


def alert(path, *args):
    return main(["alert", "--config", str(path / "asv.conf.json"), *args])


def test_json_contract_and_planted_steps(alert_project, tmp_path, capsys):
    path, truths, history = alert_project
    out = tmp_path / "alerts.json"
    assert alert(path, "--format", "json", "--output", str(out)) == 1
    data = json.loads(out.read_text())
    assert data["series"] == len(truths)
    by_series = {}
    for a in data["alerts"]:
        assert set(a) == {"benchmark", "params", "machine", "env", "commit", "previous_commit",
                          "culprits", "before", "after", "ratio", "unit", "pvalue", "direction",
                          "noisy", "unmeasured_commits", "disturbed_before", "confirmed",
                          "bisect", "drifts", "repro", "functions", "builds", "triage",
                          "higher_is_better", "below_threshold", "functions_of",
                          "functions_total"}
        assert a["direction"] == "regression" and a["ratio"] > 1 and a["unit"] == "seconds"
        # the command that measures this one benchmark again, and nothing else, over the
        # whole change: from before it to the newest commit it spans
        base, head, flag, bench = shlex.split(a["repro"])[2:6]
        last = max([*a["culprits"], *(d["last"] for d in a["drifts"])], key=history.index)
        assert (base, head, flag) == (a["previous_commit"][:12], last[:12], "--bench")
        name = f"{a['benchmark']}({', '.join(a['params'])})"
        assert re.fullmatch(bench, name) and not re.fullmatch(bench, name + "x")
        assert a["culprits"][0] == a["commit"]
        assert a["ratio"] == pytest.approx(a["after"] / a["before"])
        assert history.index(a["previous_commit"]) == history.index(a["commit"]) - 1
        assert a["machine"] == synthetic.MACHINE and a["env"] == synthetic.ENV
        by_series.setdefault((a["benchmark"], a["params"][0]), []).append(
            history.index(a["commit"]))
    for t in truths:
        hits = by_series.get((t.benchmark, t.param), [])
        if t.kind == "step" and t.size >= 0.2 and t.distance >= 3:
            assert any(abs(h - t.at) <= 1 for h in hits), t
        if t.kind in ("noise", "improvement", "dip", "toggle", "magnitude"):
            assert hits == [], t
        assert len(hits) <= 1  # at most one active alert per series
    assert "report written" in capsys.readouterr().err
    # one verdict per series, agreeing with the alerts
    verdicts = {(v["benchmark"], v["params"][0]): v for v in data["verdicts"]}
    assert len(verdicts) == data["series"]
    assert {k for k, v in verdicts.items() if v["status"] == "regression"} == set(by_series)
    assert sum(data["counts"].values()) == data["series"]
    assert all(v["commits"] == len(history) and v["commits_needed"] == 5
               for v in verdicts.values())


def test_text_markdown_and_github_formats(alert_project, capsys):
    path, _, _ = alert_project
    assert alert(path) == 1
    text = capsys.readouterr().out
    assert "active regressions in" in text and "REGRESSION" in text
    assert "status: " in text and " regression, " in text and "(of " in text
    assert alert(path, "--format", "markdown") == 1
    md = capsys.readouterr().out
    assert md.startswith("## torchpulse:") and "| benchmark |" in md and "<details>" in md
    assert alert(path, "--format", "github") == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ")) for line in lines)
    # every alert, in every format, carries the command that measures it again
    errors = [line for line in lines if line.startswith("::error ")]
    assert errors and all("measure it again: torchpulse compare " in e for e in errors)
    assert text.count("measure it again: torchpulse compare ") == text.count("REGRESSION")
    assert md.count("again: torchpulse compare ") == text.count("REGRESSION")


def test_unstable_series_say_what_more_commits_would_do_in_every_format(alert_project, capsys):
    path, _, history = alert_project
    alert(path, "--format", "json")
    verdicts = json.loads(capsys.readouterr().out)["verdicts"]
    unstable = [v for v in verdicts if v["status"] == "unstable"]
    reach = sorted(v["reach"] for v in unstable if v["reach"] is not None)
    never = [v for v in unstable if v["reach"] is None and not v["toggling"]]
    assert reach and never  # the fixture has both kinds
    for v in verdicts:
        if v["status"] != "unstable" or v["toggling"]:
            assert v["reach"] is None
        elif v["reach"] is not None:
            assert v["reach"] > v["commits"] == len(history)
            assert f"from {v['reach']} commits at this noise" in v["status_text"]
        else:
            assert "not within the threshold at this noise" in v["status_text"]
    said = (f"of {len(unstable)} unstable series, at the noise measured so far: {len(reach)} "
            f"would be within the threshold from {reach[0]}")
    alert(path)
    assert said in capsys.readouterr().out
    alert(path, "--format", "markdown")
    assert "O" + said[1:] in capsys.readouterr().out


def test_history_lists_improvements_and_exits_0(alert_project, capsys):
    path, _, _ = alert_project
    assert alert(path, "--history", "--format", "json") == 0
    directions = {a["direction"] for a in json.loads(capsys.readouterr().out)["alerts"]}
    assert directions == {"regression", "improvement"}


def test_since_the_newest_commit_reports_nothing(alert_project, capsys):
    path, _, history = alert_project
    assert alert(path, "--since", history[-1], "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["alerts"] == []


def test_tree_without_regressions_exits_0(quiet_project, capsys):
    assert alert(quiet_project, "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)["alerts"] == []


def test_samples_absent_still_works(tmp_path, capsys):
    synthetic.build(tmp_path, commits=20, per_cell=1, noise_series=1, seed=5,
                    kinds=("step",), noise=synthetic.NoiseModel(samples=1))
    assert alert(tmp_path, "--format", "json") == 1


@pytest.mark.parametrize("args, message", [
    (["--machine", "nope"], "unknown machine 'nope'"),
    (["--since", "nope"], "--since: unknown commit"),
    (["--branch", "nope"], "branch 'nope'"),
    (["--alpha", "2"], "must be between 0 and 1"),
    (["--format", "xml"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(alert_project, args, message, capsys):
    path, _, _ = alert_project
    code = exit_code(["alert", "--config", str(path / "asv.conf.json"), *args])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_malformed_results_file_and_missing_config(tmp_path, capsys):
    synthetic.build(tmp_path, commits=6, per_cell=1, noise_series=1, seed=6, kinds=("noise",))
    bad = next((tmp_path / "results" / synthetic.MACHINE).glob("*-synthetic.json"))
    bad.write_text("{not json")
    assert alert(tmp_path) == 2
    assert "not an asv results file" in capsys.readouterr().err
    assert main(["alert", "--config", str(tmp_path / "nope.json")]) == 2
    assert "no such asv config" in capsys.readouterr().err


def test_scoring_counts_recall_location_and_false_alarms():
    truths = [synthetic.Truth("b", "'0'", "step", 0.02, 0.05, 50, 10),
              synthetic.Truth("b", "'1'", "step", 0.02, 0.05, 50, 10),
              synthetic.Truth("n", "'0'", "noise", 0.02)]
    scores = scoring.score(truths, {("b", "'0'"): [51], ("b", "'1'"): [45],
                                       ("n", "'0'"): [3]})
    cell = scores[("step", 0.05, 10, 0.02)]
    assert (cell.series, cell.alarmed, cell.located) == (2, 2, 1)
    assert scores[("noise", 0.02)].rate() == 1.0


def test_active_upward_keeps_steps_still_present():
    values = [1.0] * 10 + [2.0] * 10 + [1.0] * 10
    assert detectors.active_upward(values, [10, 20]) == []
    assert detectors.active_upward(values[:20], [10]) == [10]


def test_points_of_another_benchmark_version_are_left_out(tmp_path, capsys):
    """As asv's graphs do: once a benchmark's declared version changes, the points measured
    at the old version no longer belong to its series."""
    synthetic.build(tmp_path, commits=8, per_cell=1, noise_series=1, seed=9,
                    kinds=("noise",))
    declared = tmp_path / "results" / "benchmarks.json"
    data = json.loads(declared.read_text())
    data["synthetic.Noise.time_cv1"]["version"] = "2"
    declared.write_text(json.dumps(data))
    assert alert(tmp_path, "--format", "json") == 0
    names = {v["benchmark"] for v in json.loads(capsys.readouterr().out)["verdicts"]}
    assert names == {"synthetic.Noise.time_cv2", "synthetic.Noise.time_cv3"}


@pytest.mark.parametrize("content", ["[1, 2]", "[" * 100_000 + "]" * 100_000])
def test_a_benchmarks_json_that_is_not_an_object_is_one_line(tmp_path, capsys, content):
    synthetic.build(tmp_path, commits=6, per_cell=1, noise_series=1, seed=1, kinds=("noise",))
    (tmp_path / "results" / "benchmarks.json").write_text(content)
    assert alert(tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "benchmarks.json" in err


def test_a_results_file_of_the_wrong_shape_is_one_line(tmp_path, capsys):
    synthetic.build(tmp_path, commits=6, per_cell=1, noise_series=1, seed=1, kinds=("noise",))
    path = sorted((tmp_path / "results" / synthetic.MACHINE).glob("*-*.json"))[0]
    data = json.loads(path.read_text())
    data["results"] = [1, 2]
    path.write_text(json.dumps(data))
    assert alert(tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an asv results file" in err and path.name in err


@pytest.mark.parametrize("content", ["[1, 2]", "null", "[" * 100_000 + "]" * 100_000])
def test_an_asv_config_that_is_not_an_object_is_one_line(tmp_path, capsys, content):
    config = tmp_path / "asv.conf.json"
    config.write_text(content)
    assert main(["alert", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(config) in err


def test_an_alert_after_unmeasured_commits_prints_the_bisect_command(alert_project, tmp_path,
                                                                     capsys):
    import shutil

    source, truths, history = alert_project
    path = tmp_path / "gappy"
    shutil.copytree(source, path)
    step = next(t for t in truths if t.kind == "step" and t.size >= 0.2 and t.distance >= 3)
    for sha in history[step.at - 2:step.at]:  # the two commits before the step: unmeasured
        for f in (path / "results").glob(f"*/{sha[:8]}-*.json"):
            f.unlink()
    out = tmp_path / "alerts.json"
    assert alert(path, "--format", "json", "--output", str(out)) == 1
    mine = [a for a in json.loads(out.read_text())["alerts"]
            if (a["benchmark"], a["params"][0]) == (step.benchmark, step.param)]
    assert len(mine) == 1 and mine[0]["commit"] == history[step.at]
    assert mine[0]["previous_commit"] == history[step.at - 3]
    assert mine[0]["unmeasured_commits"] == 2
    command = mine[0]["bisect"]
    assert command.startswith(f"torchpulse bisect {history[step.at - 3][:12]} "
                              f"{history[step.at][:12]} --bench ")
    assert step.benchmark in command and f"--machine {synthetic.MACHINE}" in command
    capsys.readouterr()
    assert alert(path) == 1
    assert command in capsys.readouterr().out
    assert alert(path, "--format", "markdown") == 1
    assert "2 unmeasured commit(s) before" in capsys.readouterr().out


@pytest.mark.parametrize("start", [10, 0])
def test_history_lists_a_drift_once_as_a_range_in_every_format(tmp_path, capsys, start):
    """A project whose one series drifts +10 % over commits 10-30 of 40 (or 0-30: from its
    first commit), noiselessly: one finding that names the range, not a change point a
    commit, measured again from before it to its end (a drift from the first commit was
    'at X (after X)' and compared X with itself)."""
    import numpy as np

    shas = evaluation_project.git_repo(tmp_path, 40)
    (tmp_path / "asv.conf.json").write_text(json.dumps(evaluation_project.CONF))
    from torchpulse.files import write_json_atomically
    from torchpulse.results import asv_results

    results_dir = tmp_path / "results"
    write_json_atomically(results_dir / "m" / "machine.json", {"machine": "m", "version": 1})
    write_json_atomically(results_dir / "benchmarks.json", {
        "b.track_x": {"name": "b.track_x", "params": [], "param_names": [], "type": "track",
                      "unit": "unit", "version": "1"}, "version": 2})
    ramp = 0.01 * np.exp(np.clip((np.arange(40) - start) / (30 - start), 0, 1) * np.log(1.1))
    for i, sha in enumerate(shas):
        r = asv_results.new({"machine": "m"}, sha, 1_700_000_000_000 + i, "3.11", "e")
        asv_results.add(r, "b.track_x", "1", [], [float(ramp[i])])
        asv_results.save(r, results_dir, asv_results.filename("m", sha, "e"))
    out = tmp_path / "history.json"
    assert alert(tmp_path, "--history", "--format", "json", "--output", str(out)) == 0
    (finding,) = json.loads(out.read_text())["alerts"]
    (span,) = finding["drifts"]
    first = shas.index(span["first"])
    assert abs(first - start) <= 2 and abs(shas.index(span["last"]) - 30) <= 2
    assert finding["ratio"] == pytest.approx(1.1, abs=0.01)
    before = shas[first - 1] if first else shas[0]
    assert finding["previous_commit"] == before
    assert finding["repro"].startswith(f"torchpulse compare {before[:12]} {span['last'][:12]} ")
    capsys.readouterr()
    # the active view: a regression over that range, in text and markdown alike
    assert alert(tmp_path) == 1
    text = capsys.readouterr().out
    assert f"a slow drift, not a step: drift over {span['first'][:8]}..{span['last'][:8]}" in text
    assert (f"at {span['first'][:8]} (the series' first commit)" if first == 0 else
            f"at {span['first'][:8]} (after {before[:8]})") in text
    assert alert(tmp_path, "--format", "markdown") == 1
    assert f"drift `{span['first'][:12]}`..`{span['last'][:12]}`" in capsys.readouterr().out


def test_three_builds_a_side_alert_on_a_small_deterministic_step(tmp_path, capsys):
    """Two torch builds recorded three times each: a count that steps +0.74 % is a
    regression at a 0.5 % count threshold, for the alert and for --history alike."""
    shas = evaluation_project.git_repo(tmp_path, 6)
    name = "bench_instructions.Instructions.track_instructions"
    declared = {name: evaluation_project.declare(["'w'"], "track", "instructions")}
    evaluation_project.write(tmp_path, shas, declared, lambda c: [
        (name, [1_000_000.0 if c < 3 else 1_007_400.0], [None])], [])
    for extra in ([], ["--history"]):
        assert alert(tmp_path, "--count-threshold", "0.5%", "--format", "json", *extra) == \
            (0 if extra else 1)
        (found,) = json.loads(capsys.readouterr().out)["alerts"]
        assert found["commit"] == shas[3] and found["ratio"] == pytest.approx(1.0074)


def test_history_says_which_changes_are_below_the_threshold(tmp_path, capsys):
    """A deterministic +0.74 % step in a count, three builds a side: the alert calls the
    series ok at the 1 % count threshold, and --history listed it as a plain REGRESSION.
    It now says the change is below the threshold; at 0.5 % both call it a regression."""
    shas = evaluation_project.git_repo(tmp_path, 6)
    counts = "bench_instructions.Instructions.track_instructions"
    declared = {counts: evaluation_project.declare(["'rnns/py/forward'"], "track",
                                                   "instructions")}
    evaluation_project.write(tmp_path, shas, declared, lambda c: [
        (counts, [1_000_000.0 if c < 3 else 1_007_400.0], [None])], [])
    out = tmp_path / "history.json"
    for threshold, below in (("0.01", True), ("0.005", False)):
        assert alert(tmp_path, "--count-threshold", threshold) == (0 if below else 1)
        capsys.readouterr()
        assert alert(tmp_path, "--history", "--count-threshold", threshold, "--format", "json",
                     "--output", str(out)) == 0
        (change,) = json.loads(out.read_text())["alerts"]
        assert change["direction"] == "regression" and change["commit"] == shas[3]
        assert change["below_threshold"] is below
        assert alert(tmp_path, "--history", "--count-threshold", threshold) == 0
        said = "below its 1% threshold: the alert does not report it"
        assert (said in capsys.readouterr().out) is below
