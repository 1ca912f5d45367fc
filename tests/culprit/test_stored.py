"""`torchpulse compare BASE HEAD --stored`: two recorded builds compared from their stored
results, without the alert's five commits a side and without measuring anything."""

import json

import pytest
from clirun import exit_code

from torchpulse.analysis import sequential
from torchpulse.culprit.stored import compare_stored, record_levels, welch
from torchpulse.evaluation import project as synthetic_project
from torchpulse.instructions import profiles
from torchpulse.results import builds, records
from torchpulse.results.project import Project

COUNTS = "bench_instructions.Instructions.track_instructions"
TIME = "bench_rnns.LSTM.time_forward"
PEAK = "bench_cnns.ResNet.peakmem_forward"
CANARY = "_canary.MachineCanary.time_reference"
ONLY_HEAD = "bench_new.New.time_new"
ONE_RECORD = "bench_once.Once.time_once"  # recorded once a side
ENV = synthetic_project.ENV
SECOND = "again"  # the environment of each build's second record


def _samples(level, n=20, spread=0.01):
    # a fixed, symmetric spread around the level: the same on every machine
    return [level * (1 + spread * ((i % 5) - 2) / 2) for i in range(n)]


def _rows(c):
    rows = [
        (COUNTS, [1_000_000.0, 500_000.0] if c == 0 else [920_000.0, 500_100.0], [None, None]),
        (TIME, [0.010 if c == 0 else 0.0115], [_samples(0.010 if c == 0 else 0.0115)]),
        (PEAK, [3e8 if c == 0 else 6e8], [[3e8] * 3 if c == 0 else [6e8] * 3]),
        (CANARY, [0.0087], [_samples(0.0087)]),
    ]
    if c == 1:
        rows.append((ONLY_HEAD, [1.0], [_samples(1.0)]))
    rows.append((ONE_RECORD, [1.0 if c == 0 else 1.5], [_samples(1.0 if c == 0 else 1.5)]))
    return rows


def _second_record(root, shas, declared):
    """Each build recorded a second time (another environment of the same machine): the
    timed series' levels differ a little from the first record's."""
    from torchpulse.results import asv_results

    info = {k: v for k, v in synthetic_project.MACHINE_INFO.items() if k != "version"}
    for c, sha in enumerate(shas):
        results = asv_results.new({**info, "python": "3.11"}, sha,
                                  (1_700_000_000 + c * 3600) * 1000, "3.11", SECOND)
        for name, values, samples in _rows(c):
            if name in (TIME, CANARY):
                values = [v * 1.004 for v in values]
                samples = [[x * 1.004 for x in s] for s in samples]
            if name != ONE_RECORD:
                asv_results.add(results, name, "1", declared[name]["params"], values, samples)
        asv_results.save(results, root / "results",
                         asv_results.filename(synthetic_project.MACHINE, sha, SECOND))


@pytest.fixture
def recorded(tmp_path):
    """Two commits, each standing for a recorded torch build, with what `record` stores;
    each build recorded a second time in another environment."""
    return _recorded(tmp_path, second_environment=True)


def _recorded(tmp_path, second_environment):
    root = tmp_path / "proj"
    root.mkdir()
    shas = synthetic_project.git_repo(root, 2)
    declared = {
        COUNTS: synthetic_project.declare(["'rnns/py/forward'", "'rnns/aten/forward'"],
                                          "track", "instructions"),
        TIME: synthetic_project.declare(["'cpu'"], "time", "seconds"),
        PEAK: synthetic_project.declare(["'resnet18'"], "memory", "bytes"),
        CANARY: synthetic_project.declare(["'x'"], "time", "seconds"),
        ONLY_HEAD: synthetic_project.declare(["'x'"], "time", "seconds"),
        ONE_RECORD: synthetic_project.declare(["'x'"], "time", "seconds"),
    }
    synthetic_project.write(root, shas, declared, _rows, [])
    if second_environment:
        _second_record(root, shas, declared)
    builds.write(root, shas[0], ENV, builds.Build("2.13.0+cpu", "c" * 40))
    builds.write(root, shas[1], ENV, builds.Build("2.14.1+cu130", "d" * 40, "13.0"))
    where = profiles.folder(root)
    profiles.write(profiles.path(where, shas[0], ENV), shas[0], ENV,
                   {"rnns/py/forward": {"take_gil": 300_000, "empty_tensor_restride": 200_000,
                                        "other": 500_000}}, {"rnns/py/forward": 1_000_000})
    profiles.write(profiles.path(where, shas[1], ENV), shas[1], ENV,
                   {"rnns/py/forward": {"take_gil": 250_000, "empty_tensor_restride": 170_000,
                                        "other": 500_000}}, {"rnns/py/forward": 920_000})
    return root, shas


def test_two_recorded_builds_are_decided_from_their_stored_results(recorded):
    root, (base, head) = recorded
    got = compare_stored(Project.load(root / "asv.conf.json"), base, head)
    by = {o.key: o for o in got.comparison.outcomes}
    assert by[f"{COUNTS}('rnns/py/forward')"].decision == sequential.FASTER
    assert by[f"{COUNTS}('rnns/aten/forward')"].decision == sequential.EQUIVALENT
    assert by[f"{TIME}('cpu')"].decision == sequential.SLOWER
    iv = by[f"{TIME}('cpu')"].interval
    assert iv.ratio_low < 1.15 < iv.ratio_high and iv.ratio_low > 1.05
    assert by[f"{PEAK}('resnet18')"].decision == sequential.SLOWER  # twice the bytes
    assert by[f"{CANARY}('x')"].decision == sequential.EQUIVALENT
    assert by[f"{TIME}('cpu')"].rounds == 2
    # one record a side: its samples do not see the noise between processes, so a timed
    # series is not decided from them (on real records they called the canary changed)
    once = by[f"{ONE_RECORD}('x')"]
    assert once.decision == sequential.UNDECIDED and "one record a side" in once.why
    assert got.one_sided == 1 and f"{ONLY_HEAD}('x')" not in by
    assert got.builds[0].version == "2.13.0+cpu" and got.builds[1].cuda == "13.0"
    # what shrank behind the faster count, largest first, netting to its change
    names = [f.name for f in got.functions[f"{COUNTS}('rnns/py/forward')"]]
    assert names == ["take_gil", "empty_tensor_restride"]


def test_the_command_prints_the_table_the_builds_and_the_functions(recorded, capsys, tmp_path):
    root, (base, head) = recorded
    conf = str(root / "asv.conf.json")
    assert exit_code(["compare", base, head, "--stored", "--config", conf]) == 1
    out = capsys.readouterr().out
    assert "torch 2.14.1+cu130 (CUDA 13.0, git dddddddddddd)" in out
    assert "torch 2.13.0+cpu (CPU, git cccccccccccc)" in out
    assert "the machine canary moved +0.0 %" in out
    assert "1 series recorded at only one of the two commits" in out
    assert "-50,000 (62% of the change)  take_gil (300,000 -> 250,000)" in out
    report = tmp_path / "stored.json"
    assert exit_code(["compare", base, head, "--stored", "--config", conf, "--format", "json",
                      "--output", str(report)]) == 1
    data = json.loads(report.read_text())
    assert data["stored"] is True and data["slower"] == 2 and data["one_sided"] == 1
    assert data["builds"]["head"]["version"] == "2.14.1+cu130"
    assert [f["name"] for f in data["functions"][f"{COUNTS}('rnns/py/forward')"]] == [
        "take_gil", "empty_tensor_restride"]
    # the alert cannot judge two commits: this is what --stored is for
    assert exit_code(["alert", "--config", conf]) == 0
    assert "too few commits" in capsys.readouterr().out
    # a selection, as asv's --bench
    assert exit_code(["compare", base, head, "--stored", "--config", conf,
                      "--bench", "^bench_instructions"]) == 0
    assert "bench_rnns" not in capsys.readouterr().out


def test_a_triage_entry_in_the_range_is_said_and_changes_nothing(recorded, capsys):
    root, (base, head) = recorded
    conf = str(root / "asv.conf.json")
    assert exit_code(["compare", base, head, "--stored", "--config", conf]) == 1
    before = capsys.readouterr().out
    assert exit_code(["triage", "accept", f"{TIME}(*)", head, "--note", "new build",
                      "--config", conf]) == 0
    capsys.readouterr()
    assert exit_code(["compare", base, head, "--stored", "--config", conf]) == 1
    out, err = capsys.readouterr()
    assert out == before  # the comparison measures what it measures
    assert f"torchpulse.toml: {TIME}(*) at {head[:12]}: accepted: new build" in err


@pytest.mark.parametrize("argv, said", [
    (["nope", "HEAD"], "unknown commit 'nope'"),
    (["HEAD"], "needs BASE and HEAD"),
    (["HEAD~1", "HEAD", "--max-runs", "5"], "measures nothing"),
    (["HEAD~1", "HEAD", "--python", "/bin/true"], "no --python"),
    (["HEAD~1", "HEAD", "--machine", "other"], "unknown machine 'other'"),
    (["HEAD~1", "HEAD", "--bench", "^nothing"], "no series was recorded at both"),
])
def test_bad_input_is_one_line_and_exit_2(recorded, capsys, argv, said):
    root, _ = recorded
    before = {p: p.read_bytes() for p in (root / "results").rglob("*") if p.is_file()}
    assert exit_code(["compare", *argv, "--stored", "--config", str(root / "asv.conf.json")]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert {p: p.read_bytes() for p in (root / "results").rglob("*") if p.is_file()} == before


def test_welch_interval():
    assert welch([0.0], [1.0, 1.0], 0.05) is None
    same = welch([0.0, 0.0], [0.1, 0.1], 0.05)
    assert same.low == same.high == pytest.approx(0.1)
    iv = welch([0.0, 0.01, -0.01, 0.0], [0.1, 0.12, 0.08, 0.1], 0.05)
    assert iv.low < 0.1 < iv.high and iv.mean == pytest.approx(0.1)


def test_a_benchmark_rule_saying_higher_is_better_turns_the_verdict(recorded):
    root, (base, head) = recorded
    (root / "torchpulse.toml").write_text(
        f'[[benchmark]]\nmatch = "{TIME}(*)"\ndirection = "higher_is_better"\n')
    got = compare_stored(Project.load(root / "asv.conf.json"), base, head)
    by = {o.key: o for o in got.comparison.outcomes}
    timed = by[f"{TIME}('cpu')"]
    assert timed.decision == sequential.FASTER  # its value rose: better, as a throughput
    assert timed.interval.ratio_low > 1.05  # shown as measured
    assert by[f"{PEAK}('resnet18')"].decision == sequential.SLOWER  # no rule: as before


def test_the_records_record_keeps_decide_a_timed_series(tmp_path):
    """asv keeps one results file a commit and environment: a second record of a build
    replaced the first, and a timed series stayed undecided for ever. The levels `record`
    keeps of every record decide it; a series kept once a side stays undecided."""
    root, (base, head) = _recorded(tmp_path, second_environment=False)
    project = Project.load(root / "asv.conf.json")
    first = {sha: record_levels(project, sha, ENV) for sha in (base, head)}
    assert all(machine == synthetic_project.MACHINE for machine, _ in first.values())
    # the levels of all but the counts (they repeat: one value decides)
    assert set(first[base][1]) == {f"{TIME}('cpu')", f"{CANARY}('x')", f"{ONE_RECORD}('x')",
                                   f"{PEAK}('resnet18')"}
    assert first[base][1][f"{TIME}('cpu')"] == pytest.approx(0.010, rel=1e-3)
    before = compare_stored(project, base, head).comparison.outcomes
    assert {o.key: o.decision for o in before}[f"{TIME}('cpu')"] == sequential.UNDECIDED
    for sha in (base, head):
        machine, levels = first[sha]
        assert records.append(root, machine, sha, ENV, levels) == 1
        again = {k: v * 1.004 for k, v in levels.items() if not k.startswith(ONE_RECORD)}
        assert records.append(root, machine, sha, ENV, again) == 2
    by = {o.key: o for o in compare_stored(project, base, head).comparison.outcomes}
    timed = by[f"{TIME}('cpu')"]
    assert timed.decision == sequential.SLOWER and timed.rounds == 2
    assert 1.05 < timed.interval.ratio_low < 1.15 < timed.interval.ratio_high
    assert timed.base == pytest.approx(0.010 * 1.002, rel=1e-3)  # the records' median
    assert by[f"{CANARY}('x')"].decision == sequential.EQUIVALENT
    once = by[f"{ONE_RECORD}('x')"]
    assert once.decision == sequential.UNDECIDED and "record each build again" in once.why
    assert by[f"{COUNTS}('rnns/py/forward')"].decision == sequential.FASTER  # as before
