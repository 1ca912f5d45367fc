"""torchpulse alert on synthetic asv projects: the JSON contract, formats, exit codes,
bad input; the CI gate script; evaluate-detection's scoring."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchpulse import evaluation, synthetic
from torchpulse.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("synthetic")
    truths = synthetic.build(path, commits=30, per_cell=1, noise_series=2, seed=3)
    return path, truths, synthetic.history(path)


@pytest.fixture(scope="module")
def quiet_project(tmp_path_factory):
    path = tmp_path_factory.mktemp("quiet")
    synthetic.build(path, commits=30, per_cell=3, noise_series=10, seed=4,
                    kinds=("noise", "improvement", "spike"))
    return path


def alert(path, *args):
    return main(["alert", "--config", str(path / "asv.conf.json"), *args])


def test_json_contract_and_planted_steps(project, tmp_path, capsys):
    path, truths, history = project
    out = tmp_path / "alerts.json"
    assert alert(path, "--format", "json", "--output", str(out)) == 1
    data = json.loads(out.read_text())
    assert data["series"] == len(truths)
    by_series = {}
    for a in data["alerts"]:
        assert set(a) == {"benchmark", "params", "machine", "env", "commit", "previous_commit",
                          "before", "after", "ratio", "unit", "pvalue", "direction"}
        assert a["direction"] == "regression" and a["ratio"] > 1 and a["unit"] == "seconds"
        assert a["ratio"] == pytest.approx(a["after"] / a["before"])
        assert history.index(a["previous_commit"]) == history.index(a["commit"]) - 1
        assert a["machine"] == synthetic.MACHINE and a["env"] == synthetic.ENV
        by_series.setdefault((a["benchmark"], a["params"][0]), []).append(
            history.index(a["commit"]))
    for t in truths:
        hits = by_series.get((t.benchmark, t.param), [])
        if t.kind == "step" and t.size >= 0.2 and t.distance >= 3:
            assert any(abs(h - t.at) <= 1 for h in hits), t
        if t.kind in ("noise", "improvement"):
            assert hits == [], t
    assert "report written" in capsys.readouterr().err


def test_text_markdown_and_github_formats(project, capsys):
    path, _, _ = project
    assert alert(path) == 1
    text = capsys.readouterr().out
    assert "active regressions in" in text and "REGRESSION" in text and "noise:" in text
    assert alert(path, "--format", "markdown") == 1
    md = capsys.readouterr().out
    assert md.startswith("## torchpulse:") and "| benchmark |" in md and "<details>" in md
    assert alert(path, "--format", "github") == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ")) for line in lines)


def test_history_lists_improvements_and_exits_0(project, capsys):
    path, _, _ = project
    assert alert(path, "--history", "--format", "json") == 0
    directions = {a["direction"] for a in json.loads(capsys.readouterr().out)["alerts"]}
    assert directions == {"regression", "improvement"}


def test_since_the_newest_commit_reports_nothing(project, capsys):
    path, _, history = project
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
def test_bad_input_is_one_line_and_exit_2(project, args, message, capsys):
    path, _, _ = project
    try:
        code = alert(path, *args)
    except SystemExit as exc:  # argparse's own errors, through the one-line parser
        code = exc.code
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


def test_ci_gate_distinguishes_regression_and_failed_benchmark(project, quiet_project,
                                                              tmp_path):
    fake_asv = tmp_path / "asv"
    fake_asv.write_text("#!/bin/sh\n[ \"$1\" = run ] && exit \"${FAKE_RUN_RC:-0}\"\nexit 0\n")
    fake_asv.chmod(0o755)
    torchpulse = Path(sys.executable).with_name("torchpulse")
    summary = tmp_path / "summary.md"

    def gate(path, run_rc):
        env = {**os.environ, "ASV": str(fake_asv), "TORCHPULSE": str(torchpulse),
               "TORCHPULSE_CONFIG": str(path / "asv.conf.json"), "FAKE_RUN_RC": str(run_rc),
               "GITHUB_STEP_SUMMARY": str(summary),
               "TORCHPULSE_REPORT": str(tmp_path / "report.md")}
        first = synthetic.history(path)[0]
        return subprocess.run([str(ROOT / "scripts" / "ci-regression-gate"), first],
                              cwd=path, env=env, capture_output=True, text=True)

    proc = gate(project[0], 0)
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION" in proc.stderr and "## torchpulse:" in summary.read_text()
    proc = gate(quiet_project, 2)
    assert proc.returncode == 3, proc.stderr
    assert "FAILED" in proc.stderr
    assert gate(quiet_project, 0).returncode == 0


def test_scoring_counts_recall_location_and_false_alarms():
    truths = [synthetic.Truth("b", "'0'", "step", 0.02, 0.05, 50, 10),
              synthetic.Truth("b", "'1'", "step", 0.02, 0.05, 50, 10),
              synthetic.Truth("n", "'0'", "noise", 0.02)]
    scores = evaluation.score(truths, {("b", "'0'"): [51], ("b", "'1'"): [45],
                                       ("n", "'0'"): [3]})
    cell = scores[("step", 0.05, 10, 0.02)]
    assert (cell.series, cell.alarmed, cell.located) == (2, 2, 1)
    assert scores[("noise", 0.02)].rate() == 1.0


def test_active_upward_keeps_steps_still_present():
    values = [1.0] * 10 + [2.0] * 10 + [1.0] * 10
    assert evaluation.active_upward(values, [10, 20]) == []
    assert evaluation.active_upward(values[:20], [10]) == [10]


@pytest.mark.slow
def test_evaluate_detection_runs_torchpulse_and_asv(tmp_path, capsys):
    code = main(["evaluate-detection", "--commits", "25", "--per-cell", "1",
                 "--noise-series", "2", "--no-otava", "--keep", str(tmp_path / "p"),
                 "--output", str(tmp_path / "eval.md")])
    assert code in (0, 1)  # a run this small may miss a target; the tables must be there
    text = (tmp_path / "eval.md").read_text()
    assert "| torchpulse | asv |" in text and "False alarms" in text
    assert "against the targets" in text
    assert (tmp_path / "p" / "html" / "regressions.json").is_file()
