"""What `record` keeps of every record of a commit (results.records): bounded, all or
nothing, and read only where it is ours."""

import json
import os

import pytest

from torchpulse.results import records

SHA = "a" * 40


def test_records_are_kept_newest_last_and_at_most_keep(tmp_path):
    for i in range(records.KEEP + 3):
        assert records.append(tmp_path, "m1", SHA, "env", {"s(x)": 1.0 + i}) == \
            min(i + 1, records.KEEP)
    kept = records.read(tmp_path, "m1", SHA, "env")
    assert [r["s(x)"] for r in kept] == [1.0 + i for i in range(3, records.KEEP + 3)]
    # another machine, commit or environment has records of its own
    assert records.read(tmp_path, "m2", SHA, "env") == []
    assert records.read(tmp_path, "m1", "b" * 40, "env") == []


@pytest.mark.parametrize("machine, commit, env", [
    ("..", SHA, "env"), ("m/x", SHA, "env"), ("m1", "HEAD", "env"), ("m1", SHA, "../env"),
    ("m1", SHA, "e\x1b[2J"), ("m1", SHA, ""),
])
def test_names_no_file_may_have_keep_nothing(tmp_path, machine, commit, env):
    assert records.append(tmp_path, machine, commit, env, {"s": 1.0}) == 0
    assert records.read(tmp_path, machine, commit, env) == []
    assert not (tmp_path / records.FOLDER).exists()


def test_only_positive_finite_levels_are_kept_or_read(tmp_path):
    assert records.append(tmp_path, "m1", SHA, "env", {"s": float("nan")}) == 0
    path = records.path(tmp_path, "m1", SHA, "env")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"records": [
        {"a": 1.0, "b": -1.0, "c": True, "d": "1", "e": 1e400},
        "not a record", {"b": 0}, {"a": 2},
    ]}).replace("1e+400", "1e400"))
    assert records.read(tmp_path, "m1", SHA, "env") == [{"a": 1.0}, {"a": 2.0}]


@pytest.mark.parametrize("plant", ["not json", "a list", "fifo", "/dev/zero", "too long"])
def test_a_file_that_is_not_ours_is_no_record_and_is_replaced_whole(tmp_path, plant,
                                                                    monkeypatch):
    path = records.path(tmp_path, "m1", SHA, "env")
    path.parent.mkdir(parents=True)
    if plant == "fifo":
        os.mkfifo(path)
    elif plant == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif plant == "too long":
        monkeypatch.setattr(records, "MAX_BYTES", 400)
        path.write_text(json.dumps({"records": [{"s": 1.0}] * 50}))
    else:
        path.write_text("{" if plant == "not json" else "[]")
    assert records.read(tmp_path, "m1", SHA, "env") == []  # and no hang
    if plant != "/dev/zero":
        assert records.append(tmp_path, "m1", SHA, "env", {"s": 2.0}) == 1
        assert records.read(tmp_path, "m1", SHA, "env") == [{"s": 2.0}]


@pytest.mark.parametrize("where", [".asv", ".asv/records", ".asv/records/m1"])
def test_a_link_planted_on_the_way_is_not_written_through(tmp_path, where):
    """A derived file lands in the project: `.asv/records` (or a folder above or below it)
    linked elsewhere keeps nothing, and writes nothing there."""
    root, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    link = root / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    assert records.append(root, "m1", SHA, "env", {"s": 1.0}) == 0
    assert list(elsewhere.rglob("*")) == []
