"""The CI gate script and `torchpulse evaluate-detection`, run as a user runs them: the real
command line in subprocesses over synthetic asv projects."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from torchpulse.cli import main
from torchpulse.evaluation import synthetic

# asv as the gate's dashboard runs it, scripted: `run` exits FAKE_RUN_RC; a run of a
# HASHFILE stores every benchmark of those commits in FAKE_RESULTS again (same values, a new
# start), as a second measurement does
_FAKE_ASV = """import os, sys, time
from pathlib import Path
from torchpulse.results import asv_results
args, results = sys.argv[1:], os.environ.get("FAKE_RESULTS")
hashfile = next((a[9:] for a in args if a.startswith("HASHFILE:")), None)
# the dashboard's first run skips commits stored in full, as asv does with that flag
if args[:1] == ["run"] and hashfile and results and "--skip-existing-successful" not in args:
    shas = Path(hashfile).read_text().split()
    for file in Path(results).glob("*/*-*.json"):
        stored = asv_results.load(file, file.parent.name)
        if stored.commit_hash in shas:
            now = time.time() * 1000
            stored.started_at.update((name, now) for name in stored.started_at)
            asv_results.save(stored, Path(results), file.relative_to(results).as_posix())
sys.exit(int(os.environ.get("FAKE_RUN_RC", "0")) if args[:1] == ["run"] else 0)
"""


@pytest.mark.slow
def test_ci_gate_distinguishes_regression_and_failed_benchmark(alert_project, quiet_project,
                                                              tmp_path):
    """The gate's decisions over stored histories, with asv's run and torchpulse's compare
    scripted (tests/e2e/test_culprit.py runs both for real): the alert's verdict, the
    comparison's, a failed benchmark and bad input each give their exit status."""
    fake_asv = tmp_path / "asv"
    fake_asv.write_text(f"#!{sys.executable}\n{_FAKE_ASV}")
    fake_asv.chmod(0o755)
    real = Path(sys.executable).with_name("torchpulse")
    torchpulse = tmp_path / "torchpulse"
    torchpulse.write_text(
        "#!/bin/sh\nif [ \"$1\" = compare ]; then\n"
        "  while [ $# -gt 0 ]; do [ \"$1\" = --output ] && echo '## compare' > \"$2\"; shift; "
        "done\n  exit \"${FAKE_COMPARE_RC:-0}\"\nfi\n"
        f"exec {real} \"$@\"\n")
    torchpulse.chmod(0o755)
    summary = tmp_path / "summary.md"

    def gate(path, run_rc, compare_rc=0, remeasure=True):
        summary.write_text("")
        env = {**os.environ, "ASV": str(fake_asv), "TORCHPULSE": str(torchpulse),
               "FAKE_RESULTS": str(path / "results") if remeasure else "",
               "PYTHON": sys.executable, "TORCHPULSE_CONFIG": str(path / "asv.conf.json"),
               "FAKE_RUN_RC": str(run_rc), "FAKE_COMPARE_RC": str(compare_rc),
               "GITHUB_STEP_SUMMARY": str(summary),
               "TORCHPULSE_REPORT": str(tmp_path / "report.md")}
        first = synthetic.history(path)[0]
        return subprocess.run([str(ROOT / "scripts" / "ci-regression-gate"), first],
                              cwd=path, env=env, capture_output=True, text=True)

    # its +2..20 % steps at the newest commit rest on one run: measured once more, each
    # benchmark once; first by an asv run that stores nothing (it died): not measured twice
    proc = gate(alert_project[0], 0, remeasure=False)
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION" in proc.stderr
    assert "a step seen in one run only" in proc.stdout, proc.stdout
    newest = synthetic.history(alert_project[0])[-1]
    confirmed = (tmp_path / "report.md.confirmed").read_text().splitlines()
    assert confirmed and all(line.startswith(newest + " synthetic.Step.") for line in confirmed)
    # one pass: the ledger keeps each step to one second measurement, so the second pass
    # finds nothing left to measure (and leaves the list empty)
    assert "1 commit(s) again, pass 1 of 2" in proc.stdout
    assert "pass 2 of 2" not in proc.stdout
    assert "## compare" in summary.read_text() and "## torchpulse:" in summary.read_text()
    assert "measured twice" not in summary.read_text()
    # then (a fresh ledger) by one that stores the same values as a new measurement, so
    # they still alert: the alert reads the ledger and reports them as measured twice (each
    # benchmark's alerting series at least once)
    (tmp_path / "report.md.confirmed").unlink()
    proc = gate(alert_project[0], 0)
    assert proc.returncode == 1 and "a step seen in one run only" in proc.stdout, proc.stderr
    assert (tmp_path / "report.md.confirmed").read_text().splitlines() == confirmed
    assert summary.read_text().count("measured twice)") >= len(confirmed)
    # the team accepts every step in torchpulse.toml: the gate passes, nothing to confirm
    accepted = tmp_path / "accepted"
    shutil.copytree(alert_project[0], accepted, symlinks=True)
    out = tmp_path / "alerts.json"
    assert main(["alert", "--config", str(accepted / "asv.conf.json"), "--format", "json",
                 "--output", str(out)]) == 1
    alerts = json.loads(out.read_text())["alerts"]
    (accepted / "torchpulse.toml").write_text("".join(map(_accepted, alerts)))
    steps = sum(len(a["culprits"]) for a in alerts)
    (tmp_path / "report.md.confirmed").unlink()
    proc = gate(accepted, 0)
    assert proc.returncode == 0 and "commit(s) again" not in proc.stdout, proc.stderr
    assert f"{steps} changes taken out of their series ({steps} accepted)" in proc.stdout, \
        proc.stdout
    proc = gate(quiet_project, 2)
    assert proc.returncode == 3, proc.stderr
    assert "FAILED" in proc.stderr
    proc = gate(quiet_project, 0)
    assert proc.returncode == 0 and "commit(s) again" not in proc.stdout, proc.stdout
    proc = gate(quiet_project, 0, compare_rc=1)
    assert proc.returncode == 1 and "REGRESSION" in proc.stderr
    assert gate(quiet_project, 0, compare_rc=2).returncode == 2


def _accepted(alert: dict) -> str:
    """The triage entry that accepts ``alert`` (the alert's JSON): its every culprit."""
    name = f"{alert['benchmark']}({', '.join(alert['params'])})"
    through = f"through = '{alert['culprits'][-1]}'\n" if len(alert["culprits"]) > 1 else ""
    return (f"[[triage]]\nseries = {json.dumps(name)}\ncommit = '{alert['commit']}'\n"
            f"{through}state = 'accepted'\n\n")


@pytest.mark.slow
def test_evaluate_detection_runs_torchpulse_and_asv(tmp_path, capsys):
    code = main(["evaluate-detection", "--commits", "25", "--per-cell", "1",
                 "--noise-series", "2", "--no-otava", "--keep", str(tmp_path / "p"),
                 "--shape-commits", "30", "--output", str(tmp_path / "eval.md")])
    assert code in (0, 1)  # a run this small may miss a target; the tables must be there
    text = (tmp_path / "eval.md").read_text()
    assert "| torchpulse | torchpulse, one run | asv |" in text and "False alarms" in text
    assert "against the targets" in text
    assert (tmp_path / "p" / "synthetic" / "html" / "regressions.json").is_file()
    # the second family: every shape, each planted change, and its targets
    truth = json.loads((tmp_path / "p" / "shapes" / "truth.json").read_text())
    for shape in {t["shape"] for t in truth}:
        assert f"| {shape} |" in text
    assert "All-change-points view" in text and "against the shape targets" in text
