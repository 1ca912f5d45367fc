"""The line a count leaves for the dashboard (instructions/summary.py)."""

import os

from torchpulse.instructions import summary


def test_a_summary_is_read_back_as_written_and_only_where_a_file_is_named(tmp_path):
    path = tmp_path / "counts.jsonl"
    done = summary.Summary("0123abcd" * 5, 3, 69, 0, 12.25)
    summary.write(done, {})  # no file named: nothing written
    assert not path.exists()
    summary.write(done, {summary.ENV: str(path)})
    summary.write(summary.Summary("", 0, 0, 0, 1.0, True), {summary.ENV: str(path)})
    assert summary.read(path) == [summary.Summary("0123abcd" * 5, 3, 69, 0, 12.2),
                                  summary.Summary("", 0, 0, 0, 1.0, True)]
    # a folder that cannot be written costs the line, not the count
    summary.write(done, {summary.ENV: str(tmp_path / "absent" / "counts.jsonl")})


def test_what_is_not_a_file_of_summaries_reads_as_none(tmp_path):
    assert summary.read(tmp_path / "absent") == []
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert summary.read(fifo) == []  # refused, not waited on
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * (summary.MAX_BYTES + 1))
    assert summary.read(huge) == []
    odd = tmp_path / "odd"
    odd.write_text('[1, 2]\n{"commit": "ABCDEF12", "counted": 1, "reused": 0, "failed": 0, '
                   '"seconds": 1, "unavailable": false}\n{"commit": "abcdef12", "counted": '
                   '-1, "reused": 0, "failed": 0, "seconds": 1, "unavailable": false}\n'
                   '{"commit": "abcdef12", "counted": 1, "reused": 0, "failed": 0, '
                   '"seconds": NaN, "unavailable": false}\n')
    assert summary.read(odd) == []
