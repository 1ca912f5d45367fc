"""Counting under callgrind: the dumps in order, the median call, and the counts of a real
workload repeating across processes, with a busy core beside one of them."""

import shutil
import subprocess
import sys

import pytest

from torchpulse import sizes
from torchpulse.instructions import callgrind, count, profiles

# bytes of one workload's stored profile (top 200 functions, gzip): docs/instructions.md
PROFILE_BUDGET = 8_000


def test_dumps_are_read_in_the_order_written_and_the_exit_dump_is_left_out(tmp_path):
    for name in ["callgrind.out.77", "callgrind.out.77.10", "callgrind.out.77.9",
                 "callgrind.out.77.1", "spec.json"]:
        (tmp_path / name).write_text("")
    assert [p.name for p in count._dumps(tmp_path)] == [
        "callgrind.out.77.1", "callgrind.out.77.9", "callgrind.out.77.10"]


def test_the_median_call_and_its_top_functions_are_kept():
    dumps = [callgrind.Dump(total, {"a": total - 10, "b": 7, "c": 3})
             for total in (1030, 1000, 1010, 990, 5000)]
    got = count.summarise("rnns/cudnn/forward", dumps, top=2)
    assert got.instructions == 1010 and got.counts == [1030, 1000, 1010, 990, 5000]
    assert got.functions == {"a": 1000, "b": 7}
    assert got.spread == pytest.approx((5000 - 990) / 1010)


def test_without_valgrind_counting_fails_in_one_line(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(count.CountingError, match="valgrind is not installed"):
        count.count(["rnns/cudnn/forward"], sizes.INSTRUCTIONS)


# At the lowest priority: the hog takes every cycle the counted process and the other test
# worker leave idle, and never slows the other worker's timed tests (their machine canary
# would read a busy machine and withhold their verdicts).
HOG = ("import os, time\nos.nice(19)\nend = time.time() + 600\n"
       "while time.time() < end:\n    pass\n")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (callgrind)")
def test_two_processes_count_the_same_and_a_busy_core_changes_nothing(tmp_path):
    # one cheap workload (importing torch under valgrind is most of the cost) and one that
    # this torchpulse lacks, which fails alone
    workloads = ["rnns/py/forward", "rnns/nope/forward"]
    quiet, failed = count.count(workloads, sizes.INSTRUCTIONS, repeats=3)
    assert set(quiet) == {"rnns/py/forward"} and set(failed) == {"rnns/nope/forward"}
    hogs = [subprocess.Popen([sys.executable, "-c", HOG])]
    try:
        busy, _ = count.count(workloads, sizes.INSTRUCTIONS, repeats=3)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    counted = quiet["rnns/py/forward"]
    assert counted.instructions > 100_000 and len(counted.counts) == 3
    assert busy["rnns/py/forward"].counts == counted.counts  # to the instruction
    assert sum(counted.functions.values()) <= counted.instructions
    assert any("libtorch" in f for f in counted.functions)
    # identical counts, identical profiles: nothing grew between the two runs
    assert busy["rnns/py/forward"].functions == counted.functions
    assert profiles.differences(counted.functions, busy["rnns/py/forward"].functions) == ()
    # the profile stored per commit stays small: the top functions, compressed
    sha = "a" * 40
    target = profiles.path(tmp_path, sha, "env")
    profiles.write(target, sha, "env", {"rnns/py/forward": counted.functions},
                   {"rnns/py/forward": counted.instructions})
    assert target.stat().st_size <= PROFILE_BUDGET
    assert profiles.read(tmp_path, sha, "env") == {"rnns/py/forward": counted.functions}
