"""The adapter of asv's Results API: what it writes, asv's own reader reads back, value for
value. A future asv that changes what this relies on fails here, loudly, rather than
silently in the store, the series or the synthetic projects."""

import json

import asv
import pytest
from asv.results import Results

from torchpulse.results import asv_results

PARAMS = {"machine": "m", "arch": "x86_64", "cpu": "c", "num_cpu": "2", "os": "Linux",
          "ram": "1", "python": "3.11"}
SHA = "0123456789abcdef0123456789abcdef01234567"
NAME = "suite.Class.time_thing"
GRID = [["'a'", "'b'"], ["1", "2", "3"]]


def test_written_against_the_installed_asv():
    assert asv.__version__ == asv_results.ASV_VERSION, (
        "asv changed: check every function of torchpulse/results/asv_results.py against its "
        "Results class, then update ASV_VERSION")


@pytest.fixture
def saved(tmp_path):
    results = asv_results.new(PARAMS, SHA, 1_700_000_000_000, "3.11", "env1")
    values = [float(i + 1) for i in range(6)]
    values[4] = None  # ('b', '2') has no value
    samples = [[v, v * 1.1, v * 0.9] if v and i % 2 == 0 else None
               for i, v in enumerate(values)]
    asv_results.add(results, NAME, "7", GRID, values, samples)
    relative = asv_results.filename("m", SHA, "env1")
    path = asv_results.save(results, tmp_path, relative)
    return tmp_path, path, values, samples


def test_round_trip_through_asvs_own_reader(saved):
    root, path, values, samples = saved
    assert path == root / "m" / f"{SHA[:8]}-env1.json"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no scratch left
    theirs = Results.load(str(path), machine_name="m")
    assert theirs.commit_hash == SHA and theirs.env_name == "env1"
    assert theirs.get_result_params(NAME) == GRID
    assert theirs.benchmark_version[NAME] == "7"
    stored = theirs.get_result_value(NAME, GRID)
    # with samples asv stores their median; without, the value
    for value, sample, got in zip(values, samples, stored, strict=True):
        if value is None:
            assert got is None
        elif sample:
            assert got == pytest.approx(sorted(sample)[1])
        else:
            assert got == pytest.approx(value)
    assert theirs.get_result_samples(NAME, GRID)[0] == pytest.approx(samples[0])
    assert json.loads(path.read_text())["version"] == 2  # asv's results format


def test_adapter_reads_back_what_it_wrote(saved):
    _, path, values, samples = saved
    results = asv_results.load(path, machine="m")
    assert asv_results.benchmarks(results) == [NAME]
    assert asv_results.version(results, NAME) == "7"
    assert asv_results.params(results, NAME) == GRID
    rows = list(asv_results.rows(results, NAME))
    assert [combo for combo, _, _ in rows] == [(a, b) for a in GRID[0] for b in GRID[1]]
    assert [s for _, _, s in rows][2] == pytest.approx(samples[2])
    assert rows[4][1] is None


def test_values_on_a_wider_grid_map_by_parameter_value(saved):
    _, path, _, _ = saved
    results = asv_results.load(path)
    wider = [["'a'", "'b'", "'c'"], ["1", "2", "3"]]
    got = asv_results.values(results, NAME, wider)
    assert len(got) == 9
    assert got[:3] == asv_results.values(results, NAME)[:3]
    assert got[6:] == [None, None, None]  # 'c' was never stored


def test_adding_selected_combinations_keeps_the_others(saved):
    root, path, _, _ = saved
    results = asv_results.load(path)
    before = asv_results.values(results, NAME)
    asv_results.add(results, NAME, "7", GRID, [None, None, None, None, 42.0, None],
                    selected={4})
    after = asv_results.values(results, NAME)
    assert after[4] == 42.0
    assert after[:4] == before[:4] and after[5] == before[5]


def test_unreadable_file_is_one_error(tmp_path):
    bad = tmp_path / "m" / "x.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(asv_results.ResultsFileError, match="not an asv results file"):
        asv_results.load(bad)


def _damage(data, how):
    name = next(iter(data["results"]))
    if how == "a row of one column":
        data["results"][name] = data["results"][name][:1]
    elif how == "columns fewer than the rows":
        data["result_columns"] = ["result"]
    elif how == "parameters nested a level deeper":
        data["results"][name][1] = [[["a"]]]
    elif how == "a date in words":
        data["date"] = "yesterday"
    elif how == "a parameter axis that is a number":
        data["results"][name][1] = [7]


@pytest.mark.parametrize("how", ["a row of one column", "columns fewer than the rows",
                                 "parameters nested a level deeper", "a date in words",
                                 "a parameter axis that is a number"])
@pytest.mark.parametrize("command", ["export", "alert"])
def test_a_results_file_of_the_wrong_shape_is_one_line_for_every_reader(tmp_path, capsys, how,
                                                                        command):
    """asv loads these without a word; export and alert then died in a traceback (or sorted
    a text date among numbers) wherever they first asked."""
    from tests.clirun import exit_code
    from torchpulse.evaluation import synthetic

    synthetic.build(tmp_path, commits=4, per_cell=1, noise_series=0, seed=1, kinds=("step",),
                    sizes=(0.2,), distances=(2,))
    target = sorted((tmp_path / "results").glob("*/*-*.json"))[-1]
    data = json.loads(target.read_text())
    _damage(data, how)
    target.write_text(json.dumps(data))
    before = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    argv = {"export": ["export", "pytorch-v3", "--output", str(tmp_path / "out.json")],
            "alert": ["alert"]}[command]
    assert exit_code([*argv, "--config", str(tmp_path / "asv.conf.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an asv results file" in err
    assert str(target) in err
    assert not (tmp_path / "out.json").exists()
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("plant", ["fifo", "link out"])
@pytest.mark.parametrize("command", ["export", "publish", "dashboard", "alert"])
def test_a_fifo_in_the_results_tree_is_one_line_not_a_hang(tmp_path, command, plant):
    """A FIFO among the results files hung export (and asv under publish and the dashboard,
    for good; a link to /dev/zero there filled the memory until the kernel killed asv);
    alert skipped it without a word. A link to a file out of the tree is no result either."""
    import os
    import subprocess
    import sys

    from torchpulse.evaluation import synthetic

    synthetic.build(tmp_path, commits=4, per_cell=1, noise_series=0, seed=1, kinds=("step",),
                    sizes=(0.2,), distances=(2,))
    fifo = tmp_path / "results" / synthetic.MACHINE / "deadbeef-fifo.json"
    if plant == "fifo":
        os.mkfifo(fifo)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text("{}")
        fifo.symlink_to(elsewhere)
    before = sorted(p.name for p in (tmp_path / "results").rglob("*"))
    argv = {"export": ["export", "pytorch-v3", "--output", str(tmp_path / "out.json")],
            "publish": ["publish"],
            "dashboard": ["dashboard", "--no-publish", "HEAD^!"], "alert": ["alert"]}[command]
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", *argv, "--config",
                           str(tmp_path / "asv.conf.json")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    said = "not a regular file" if plant == "fifo" else "a link out of the results tree"
    assert len(err) == 1 and f"deadbeef-fifo.json: {said}" in err[0], err
    assert sorted(p.name for p in (tmp_path / "results").rglob("*")) == before
    assert not (tmp_path / "html").exists()
