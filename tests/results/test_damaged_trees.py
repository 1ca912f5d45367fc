"""Results trees damaged in ways that kept them JSON: every command says so in one line and
exits 2 (exit 1 means "regressed"), or reads past what it need not understand."""

import json

import pytest

from torchpulse.cli import main
from torchpulse.evaluation import project as evaluation_project

NAME = "bench_x.X.time_x"


@pytest.fixture
def tree(tmp_path):
    shas = evaluation_project.git_repo(tmp_path, 6)
    evaluation_project.write(tmp_path, shas, {
        NAME: evaluation_project.declare(["'w'"], "time", "seconds")},
        lambda c: [(NAME, [1.0], [[1.0, 1.1]])], [])
    first = sorted((tmp_path / "results" / evaluation_project.MACHINE).glob("*-*.json"))
    first = [p for p in first if p.name != "machine.json"][0]
    return tmp_path, first


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _version_a_list(d):
    d["results"][NAME][d["result_columns"].index("version")] = ["1"]


def _columns_swapped(d):
    cols = d["result_columns"]
    i, j = cols.index("result"), cols.index("samples")
    cols[i], cols[j] = cols[j], cols[i]


def _columns_not_text(d):
    d["result_columns"] = list(range(len(d["result_columns"])))


@pytest.mark.parametrize("damage", [_version_a_list, _columns_swapped, _columns_not_text])
@pytest.mark.parametrize("command", ["alert text", "alert json", "merge"])
def test_a_row_of_the_wrong_shape_is_one_line_and_exit_2(tree, tmp_path, capsys, damage,
                                                         command):
    root, first = tree
    _edit(first, damage)
    if command == "merge":
        argv = ["merge", str(root / "results"), "--into", str(tmp_path / "into")]
    else:
        argv = ["alert", "--config", str(root / "asv.conf.json"), "--format",
                command.split()[1]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an asv results file" in err
    assert not (tmp_path / "into").exists()


def test_export_reads_past_a_machine_description_it_cannot_use(tree, tmp_path):
    root, _ = tree
    machine = root / "results" / evaluation_project.MACHINE / "machine.json"
    _edit(machine, lambda d: d.update(ram="1" * 400, num_cpu="x"))
    out = tmp_path / "v3.json"
    assert main(["export", "pytorch-v3", "--config", str(root / "asv.conf.json"),
                 "--output", str(out)]) == 0
    records = json.loads(out.read_text())
    assert len(records) == 6
    assert {(r["runners"][0]["avail_mem_in_gb"], r["runners"][0]["cpu_count"])
            for r in records} == {(0, 0)}


def test_export_of_imported_v3_records_cut_to_one_parameter_axis(tree, tmp_path):
    """Records imported from PyTorch's v3 format are exported back as they came; a stored
    row of their suite with one parameter value instead of two (series, metric) stopped
    export with a ValueError: it goes out as an ordinary asv benchmark."""
    root, _ = tree
    conf = str(root / "asv.conf.json")
    v3 = tmp_path / "v3.json"
    assert main(["export", "pytorch-v3", "HEAD~1..HEAD", "--config", conf,
                 "--output", str(v3)]) == 0
    assert main(["import", "pytorch-v3", str(v3), "--config", conf, "--commit", "HEAD",
                 "--machine", "v3"]) == 0
    (stored,) = (root / "results" / "v3").glob("*-*.json")
    data = json.loads(stored.read_text())
    cols = data["result_columns"]
    for row in data["results"].values():
        row[cols.index("params")] = row[cols.index("params")][:1]
        for column in ("result", "samples"):
            if isinstance(row[cols.index(column)], list):
                row[cols.index(column)] = row[cols.index(column)][:1]
    stored.write_text(json.dumps(data))
    out = tmp_path / "again.json"
    assert main(["export", "pytorch-v3", "--config", conf, "--machine", "v3",
                 "--output", str(out)]) == 0
    assert json.loads(out.read_text())
