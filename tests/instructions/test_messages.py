"""The schema between a count and the counted process (instructions/messages.py)."""

import json
import os
import sys

import pytest

from torchpulse import sizes
from torchpulse.instructions import messages


def test_a_childs_request_is_the_bytes_the_counted_process_always_read():
    """The request's keys and their order are those the counted process reads; a change of
    the bytes would lay its heap out otherwise and move every count."""
    spec = {"name": "rnns/py/forward", "windows": 4, "window": 10_000_000,
            "tables": sizes.counting(), "helper": "/stage/helper.so"}
    group = ["rnns/py/forward", "rnns/py/backward"]
    before = json.dumps({"names": group, **{k: v for k, v in spec.items() if k != "name"}})
    assert json.dumps(messages.child_request(group, spec)) == before


def test_a_childs_result_is_read_into_its_workloads(tmp_path):
    path = tmp_path / "000000.json"
    path.write_text(json.dumps({"pid": 4242, "inputs": {"files": ["/a"]}, "workloads": [
        {"name": "rnns/py/forward", "first": 3, "windows": 4, "calls": 2,
         "seconds": {"build": 0.5}},
        {"name": "rnns/py/backward", "error": "RuntimeError: boom"}]}))
    got = messages.read_child(path)
    assert got.error is None and got.pid == 4242 and got.inputs == {"files": ["/a"]}
    assert got.workloads == (
        messages.WorkloadResult("rnns/py/forward", 3, 4, 2, {"build": 0.5}),
        messages.WorkloadResult("rnns/py/backward", error="RuntimeError: boom"))


@pytest.mark.parametrize("written", [
    None, "not json", "[]", '{"pid": 1}', '{"pid": -1, "workloads": []}',
    '{"pid": 1, "workloads": [{"name": "x", "first": "3", "windows": 4, "calls": 1}]}',
    '{"pid": 1, "workloads": [{"first": 3, "windows": 4, "calls": 1}]}',
    '{"pid": true, "workloads": []}', '{"error": "MemoryError"}'])
def test_a_result_that_is_missing_or_not_this_schema_is_the_childs_failure(tmp_path, written):
    path = tmp_path / "000000.json"
    if written is not None:
        path.write_text(written)
    got = messages.read_child(path)
    assert got.error and "\n" not in got.error and got.workloads == ()
    if written == '{"error": "MemoryError"}':
        assert got.error == "MemoryError"


def test_a_fifo_where_a_result_should_be_is_not_waited_on(tmp_path):
    path = tmp_path / "000000.json"
    os.mkfifo(path)
    assert messages.read_child(path).error
    assert messages.read_inputs(path) is None


@pytest.mark.parametrize("index, code", [(0, 0), (11, 0), (3, 1), (5, -9)])
def test_a_progress_record_names_its_child_and_nothing_else_is_progress(index, code):
    assert messages.read_progress(messages.progress_record(index, code), 12) == \
        messages.Progress(index, code)
    assert messages.read_progress(messages.progress_record(12, 0), 12) is None  # no such child
    for other in (b"prewarmed in 3.1 s", b"counted 1", b"{}", b'{"child": -1, "exit": 0}',
                  b'{"child": 1, "exit": "0"}', b'{"child": true, "exit": 0}', b"[1, 0]", b"",
                  b"\xff"):
        assert messages.read_progress(other, 12) is None


def test_the_counted_process_says_a_childs_end_on_its_own_pipe_and_words_on_stderr(tmp_path):
    """process.run hands the progress pipe's records to ``progress`` and stderr's lines to
    ``log``: a line on stderr that looks like progress is only words."""
    from torchpulse.instructions import process

    said = ("import os, sys; fd = int(sys.argv[1]); "
            "print('counted 0', file=sys.stderr); "
            f"os.write(fd, {messages.progress_record(1, -11)!r}); "
            "print('valgrind: done', file=sys.stderr)")
    records, lines = [], []
    code, last = process.run([sys.executable, "-c", said], dict(os.environ), tmp_path, 60,
                             lines.append, records.append)
    assert (code, last) == (0, "valgrind: done")
    assert lines == ["counted 0", "valgrind: done"]
    assert [messages.read_progress(r, 2) for r in records] == [messages.Progress(1, -11)]


def test_a_counted_process_past_its_time_is_stopped_with_its_children_and_the_pipe_ends(
        tmp_path):
    """On a timeout the whole process group goes, a forked child that holds the progress
    pipe with it, so reading the pipe ends instead of waiting on the child."""
    from torchpulse.instructions import process

    hangs = ("import os, sys, time; fd = int(sys.argv[1]); "
             f"os.write(fd, {messages.progress_record(0, 0)!r}); "
             "os.fork(); time.sleep(600)")
    records = []
    code, _ = process.run([sys.executable, "-c", hangs], dict(os.environ), tmp_path, 2,
                          None, records.append)
    assert code == -9  # killed, and returned: the forked child's end of the pipe is gone
    assert all(messages.read_progress(r, 1) == messages.Progress(0, 0) for r in records)
