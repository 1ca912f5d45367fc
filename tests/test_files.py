"""Writing files: all or nothing, with the user's usual mode (which paths a command may
write: tests/cli/test_outputs.py)."""

import os
import stat

from torchpulse import files
from torchpulse.files import write_json_atomically, write_text_atomically


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


def test_restore_puts_back_what_snapshot_saw_and_counts_it(tmp_path):
    kept, absent, same = tmp_path / "kept", tmp_path / "absent", tmp_path / "same"
    kept.write_bytes(b"old")
    same.write_bytes(b"same")
    before = files.snapshot([kept, absent, same])
    kept.write_bytes(b"half")
    absent.write_bytes(b"new")
    assert files.restore(before) == 2  # "same" is not rewritten
    assert kept.read_bytes() == b"old" and not absent.exists() and same.read_bytes() == b"same"
    assert files.restore(before) == 0


def test_only_a_regular_file_of_bounded_size_is_read(tmp_path):
    """A FIFO is refused without waiting on a writer, a link to /dev/zero without reading
    it, a file over the bound without reading past it; a link to a regular file is read."""
    import pytest

    plain = tmp_path / "plain.json"
    plain.write_bytes(b"x" * 100)
    link = tmp_path / "link.json"
    link.symlink_to(plain)
    assert files.read_regular(link, 100) == b"x" * 100
    files.check_regular(link, 100)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path, says in ((fifo, "not a regular file"), (zero, "not a regular file"),
                       (plain, "more than the 99")):
        with pytest.raises(OSError, match=says):
            files.read_regular(path, 99)
        with pytest.raises(OSError, match=says.replace("more than the 99", "more than the")):
            files.check_regular(path, 99)


def test_an_input_is_a_regular_file_or_a_pipe_of_bounded_size(tmp_path):
    """What a user names on the command line may be a pipe (``<(command)``); a device is
    refused before a byte is read, a file over the bound without reading past it."""
    import threading

    import pytest

    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"x" * 100)
    assert files.read_input(plain, 100) == b"x" * 100
    with pytest.raises(OSError, match="more than 99 bytes"):
        files.read_input(plain, 99)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(b"y" * 10))
    writer.start()
    assert files.read_input(fifo, 100) == b"y" * 10
    writer.join(timeout=60)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="a device or a socket, not a file"):
        files.read_input(zero, 100)
    with pytest.raises(IsADirectoryError):
        files.read_input(tmp_path, 100)
