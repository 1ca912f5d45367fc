"""The site's summary: rows per series from a synthetic project with planted changes, and the
HTML page rendered from them."""

import json
import math
from pathlib import Path

import pytest
from asv.results import Results

from torchpulse.analysis.detector import Noise, Point, SeriesVerdict
from torchpulse.analysis.model import Checked
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.cli import main
from torchpulse.evaluation import synthetic
from torchpulse.reports.phrases import status_text
from torchpulse.results.project import Project
from torchpulse.site import page as summary_page
from torchpulse.site import summary


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("summary")
    truths = synthetic.build(path, commits=20, per_cell=1, noise_series=2, seed=11,
                             kinds=("step", "noise"), sizes=(0.2,), distances=(5,))
    history = synthetic.history(path)
    # one benchmark stops being measured before the newest commit (renamed, say)
    newest = path / "results" / synthetic.MACHINE / f"{history[-1][:8]}-{synthetic.ENV}.json"
    results = Results.load(str(newest), machine_name=synthetic.MACHINE)
    results.remove_result("synthetic.Noise.time_cv3")
    results.save(str(path / "results"))
    return path, truths, history


def built(path: Path) -> summary.Summary:
    return summary.build(Project.load(path / "asv.conf.json"))


def test_rows_describe_each_series(project):
    path, truths, history = project
    s = built(path)
    (machine,) = s.machines
    assert machine.name == synthetic.MACHINE
    assert machine.newest_commit == history[-1]
    assert len(machine.rows) == len(truths)
    assert {r.key.benchmark for r in machine.stale} == {"synthetic.Noise.time_cv3"}
    assert all(r.latest_commit == history[-2] for r in machine.stale)
    for row in machine.current:
        assert row.latest_commit == history[-1]
        assert row.commits == len(history)
        assert row.param_names == ("series",)
        assert row.change == pytest.approx(row.latest / row.previous - 1)
        assert row.noise is not None and 0 < row.noise.cv < 0.1


def test_planted_steps_are_the_alerts(project):
    path, truths, history = project
    s = built(path)
    (machine,) = s.machines
    steps = {t.benchmark: t for t in truths if t.kind == "step"}
    flagged = {r.key.benchmark: r for r in machine.rows if r.status == "regression"}
    assert set(flagged) == set(steps)
    for name, row in flagged.items():
        assert row.alert.commit == history[steps[name].at]
        assert row.alert.ratio == pytest.approx(1.2, abs=0.06)
    assert [a.key for a in machine.alerts] == [a.key for a in s.report.alerts]
    assert {r.status for r in machine.current if r.key.benchmark not in steps} <= {
        "ok", "unstable"}


def key(benchmark="b.T.time_x", params=("'a'",)):
    return SeriesKey(benchmark, params, "m", "env")


QUIET = Noise(0.01, None, 0.03, False)


def checked(latest=1.1, previous=1.0, noise=QUIET, commits=10, status="ok",
            benchmark_key=None):
    before = [] if previous is None else [Point(f"c{i}", previous) for i in range(commits - 1)]
    series = Series(benchmark_key or key(), "seconds", [*before, Point("c" * 40, latest)])
    return Checked(series, SeriesVerdict((), (), (), noise), status)


def row(names=("p",), **kw):
    return summary.Row(checked(**kw), names)


def test_row_change_notable_status():
    assert row().change == pytest.approx(0.1)
    assert row(previous=None, commits=1).change is None
    assert row(previous=0.0).change is None  # a failure rate at zero: no relative change
    # 10 % against 1 % noise: log(1.1)=0.095 > 3 * sqrt(2) * 0.01
    assert row().notable
    assert not row(latest=1.03).notable  # 0.030 < 0.042
    too_few = row(commits=3, status="too few commits")
    assert too_few.noise is None and not too_few.notable
    assert status_text(too_few.checked) == "too few commits (3 of 5)"
    assert row().status == "ok"
    unstable = row(noise=Noise(0.1, None, math.inf, True), status="unstable")
    assert status_text(unstable.checked) == (
        "unstable (smallest detectable step inf; not within the threshold at this noise)")
    reachable = row(noise=Noise(0.015, None, 0.053, True, reach=6), status="unstable")
    assert status_text(reachable.checked) == (
        "unstable (smallest detectable step 5.3%; within the threshold from 6 commits at this "
        "noise)")
    toggling = row(noise=Noise(0.1, None, 0.2, True, toggling=True), status="unstable")
    assert status_text(toggling.checked) == (
        "unstable (toggles between levels, smallest detectable step 20.0%)")


def test_hash_url_matches_asvs_format():
    # asv's format_hash_string: '#' + name + '?' + key=encodeURIComponent(value)&...
    url = summary_page._hash_url(SeriesKey("bench_rnns.LSTM.time_forward", ("'cudnn'",),
                                           "my box", "e"), ("runner",))
    assert url == "index.html#bench_rnns.LSTM.time_forward?machine=my%20box&p-runner='cudnn'"
    assert summary_page._hash_url(key(params=()), ()) == "index.html#b.T.time_x?machine=m"


def test_page_shows_machine_alerts_and_rows(project):
    path, truths, history = project
    s = built(path)
    page = summary_page.render(s)
    assert page.count('<tr class="series"') == len(truths)
    assert page.count('<tr class="alert">') == len(s.report.alerts) == 3
    assert f'id="machine-{synthetic.MACHINE}"' in page
    assert "3 active regression(s)" in page
    assert "2 series not measured at the newest commit" in page  # Noise.time_cv3 x 2
    # the site says why a machine has no instruction counts
    assert "No instruction counts at the newest commit: CUDA runs, machines without " \
           "valgrind and the compile zoo are not counted" in page
    assert history[-1][:8] in page
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_page_escapes_names():
    r = summary.Row(checked(latest=2.0, previous=None, commits=1, status="too few commits",
                            benchmark_key=SeriesKey("b.<script>x", ("'<b>'",), "m&m", "e")),
                    ("p",))
    m = summary.MachineSummary("m&m", {"cpu": "<i>"}, [r], [], "c" * 40)
    report = summary_page.render(summary.Summary([m], _empty_report(), "main"))
    assert "<script>" not in report and "<b>" not in report and "<i>" not in report
    assert "b.&lt;script&gt;x" in report and "m&amp;m" in report


def _empty_report():
    from torchpulse.analysis.model import Report
    from torchpulse.analysis.settings import Settings
    return Report([], [], False, Settings(), 0)


def test_the_page_and_the_alert_json_give_every_series_the_same_status(project, capsys):
    path, _, _ = project
    s = built(path)
    rows = {(r.key.benchmark, r.key.params): r.status for m in s.machines for r in m.rows}
    main(["alert", "--config", str(path / "asv.conf.json"), "--format", "json"])
    verdicts = json.loads(capsys.readouterr().out)["verdicts"]
    assert {(v["benchmark"], tuple(v["params"])): v["status"] for v in verdicts} == rows
    page = summary_page.render(s)
    for m in s.machines:
        for r in m.current:
            assert f'data-status="{r.status}"' in page
    # what more commits would do for the unstable series: the same sentence as the CLI's
    unstable = sum(status == "unstable" for status in rows.values())
    assert unstable
    assert f'<p class="reach">Of {unstable} unstable series, at the noise measured' in page


def test_the_page_names_the_torch_build_of_each_recorded_commit(project, tmp_path):
    """Commits `torchpulse record` filed carry their torch build on the summary page: the
    newest commit's beside it, every recorded one in a table, newest first, escaped."""
    import shutil

    from torchpulse.results import builds

    path, _, history = project
    copy = tmp_path / "proj"
    shutil.copytree(path, copy)
    builds.write(copy, history[-2], synthetic.ENV, builds.Build("2.13.0+cpu", "c" * 40))
    builds.write(copy, history[-1], synthetic.ENV,
                 builds.Build("2.14.1+cu130", "d" * 40, "13.0"))
    builds.write(copy, history[-3], "another-env", builds.Build("9.9.9"))  # not this machine's
    page = summary_page.render(built(copy))
    assert f"{history[-1][:8]}</code> (torch 2.14.1+cu130 (CUDA 13.0, git dddddddddddd))" in page
    assert "Torch builds of 2 recorded commit(s)" in page
    newest, older = page.index("<td>2.14.1+cu130</td>"), page.index("<td>2.13.0+cpu</td>")
    assert newest < older and "9.9.9" not in page
    assert "<td>CUDA 13.0</td>" in page and "<td>CPU</td>" in page
