"""Writing files: all or nothing, with the user's usual mode, through what a path names."""

import os
import stat
import threading
from pathlib import Path

import pytest
from clirun import exit_code

from torchpulse.analysis import synthetic
from torchpulse.files import write_json_atomically, write_text_atomically, write_text_to


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_files_get_the_umask_mode_and_old_ones_keep_theirs(tmp_path):
    old = os.umask(0o027)
    try:
        write_json_atomically(tmp_path / "new.json", {"a": 1})
        assert mode(tmp_path / "new.json") == 0o640
        kept = tmp_path / "kept.txt"
        kept.write_text("x")
        os.chmod(kept, 0o604)
        write_text_atomically(kept, "y")
        assert kept.read_text() == "y" and mode(kept) == 0o604
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "new.json"]


def test_output_goes_through_a_symlink_to_its_target(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text_to(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_output_into_a_fifo_or_a_device_is_written_not_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_text_to(fifo, "through the pipe\n")
    reader.join(timeout=60)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    write_text_to(Path("/dev/null"), "discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(IsADirectoryError):
        write_text_to(tmp_path, "x")


def test_alert_output_to_a_symlink_and_a_directory(tmp_path, capsys):
    synthetic.build(tmp_path / "p", commits=6, per_cell=1, noise_series=1, seed=1,
                    kinds=("noise",))
    target = tmp_path / "alerts.json"
    target.write_text("")
    (tmp_path / "link.json").symlink_to(target)
    args = ["alert", "--config", str(tmp_path / "p" / "asv.conf.json"), "--format", "json"]
    assert exit_code([*args, "--output", str(tmp_path / "link.json")]) == 0
    assert (tmp_path / "link.json").is_symlink() and '"verdicts"' in target.read_text()
    capsys.readouterr()
    assert exit_code([*args, "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write" in err[0]


def test_only_the_scratch_files_of_killed_writers_are_removed(tmp_path):
    from torchpulse.files import remove_leftovers

    machine = tmp_path / "m"
    machine.mkdir()
    mine = [tmp_path / ".benchmarks.json.k2j4_x9a.tmp", machine / ".abc-e.json.0a1b2c3d.tmp",
            machine / ".write-q8w7e6r5"]
    theirs = [tmp_path / "notes.tmp", machine / ".hidden", machine / "abc.json",
              machine / ".x.json.short.tmp", tmp_path / ".write-me"]
    for path in mine[:2] + theirs:
        path.write_text("x")
    mine[2].mkdir()
    (mine[2] / "m").mkdir()
    assert remove_leftovers(tmp_path) == 3
    assert not any(p.exists() for p in mine) and all(p.exists() for p in theirs)
