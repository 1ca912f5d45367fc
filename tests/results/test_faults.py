"""Imports and merges killed at any moment (kill -9), and imports onto a full disk: every
file left is whole, a failed import leaves the tree as it was, and running the same command
again ends where an uninterrupted one does."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from asvproject import make_project
from paths import IMPORT_DATA

KILLS = 12


def _command(project, machine_info):
    return [sys.executable, "-m", "torchpulse.cli", "import", "pep",
            str(IMPORT_DATA / "pep.log"), "--unit", "ms", "--config", str(project.conf), "--commit",
            project.main[-1], "--machine", "fresh", "--machine-info", str(machine_info)]


def _tree(root) -> dict[str, object]:
    """Every file's content, the results file's without its commit, date and import times
    (each project is its own repository, and each import has its own time)."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        data = json.loads(p.read_text())
        if "commit_hash" in data:
            data.pop("commit_hash")
            data.pop("date")
            at = data["result_columns"].index("started_at")  # when it was imported
            for row in data["results"].values():
                row[at] = None
            out[f"{p.parent.name}/<commit>-external.json"] = data
        else:
            out[str(p.relative_to(root))] = data
    return out


@pytest.mark.slow
def test_a_killed_import_leaves_whole_files_and_a_retry_completes_it(tmp_path):
    info = tmp_path / "machine.json"
    info.write_text(json.dumps({"cpu": "EPYC", "num_cpu": "8"}))
    reference = make_project(tmp_path / "reference")
    start = time.perf_counter()
    subprocess.run(_command(reference, info), check=True, capture_output=True)
    took = time.perf_counter() - start  # 0.25 s on a fast machine, over 1 s on a slow one
    expected = _tree(reference.results)

    rng = random.Random(5)
    interrupted = 0
    for i in range(KILLS):
        project = make_project(tmp_path / f"killed{i}")
        proc = subprocess.Popen(_command(project, info), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # somewhere from start-up to the writes, whatever this machine's speed
        time.sleep(rng.uniform(0.05, 1.0) * took)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        interrupted += proc.returncode == -signal.SIGKILL
        if project.results.exists():
            for path in project.results.rglob("*.json"):
                # a results file is written in a staging folder (".write-XXXXXXXX") and
                # renamed into place: what a kill leaves there is scratch, which nothing
                # reads and the next writer removes (the retry's tree shows it gone)
                if not any(part.startswith(".write-") for part in path.parts):
                    json.loads(path.read_text())  # whole, never half written
        retry = subprocess.run(_command(project, info), capture_output=True, text=True)
        assert retry.returncode == 0, retry.stderr
        assert _tree(project.results) == expected
    assert interrupted  # at least some runs were really killed mid-way


@pytest.mark.slow
def test_a_killed_merge_leaves_whole_files_and_a_retry_completes_it(tmp_path):
    project = make_project(tmp_path / "proj")
    sources = []
    for i, (fmt, data) in enumerate([("oss", "oss.json"), ("pep", "pep.log"),
                                     ("autograd-md", "autograd.md")]):
        tree = tmp_path / f"src{i}"
        unit = ["--unit", "ms"] if fmt == "pep" else []
        subprocess.run([sys.executable, "-m", "torchpulse.cli", "import", fmt,
                        str(IMPORT_DATA / data), *unit, "--config", str(project.conf), "--commit",
                        project.main[i], "--machine", f"m{i % 2}", "--results-dir",
                        str(tree)], check=True, capture_output=True)
        sources.append(str(tree))

    def merge(into):
        return [sys.executable, "-m", "torchpulse.cli", "merge", *sources, "--into",
                str(into)]

    start = time.perf_counter()
    subprocess.run(merge(tmp_path / "reference"), check=True, capture_output=True)
    took = time.perf_counter() - start
    expected = {str(p.relative_to(tmp_path / "reference")): p.read_bytes()
                for p in sorted((tmp_path / "reference").rglob("*")) if p.is_file()}
    rng = random.Random(7)
    interrupted = 0
    for i in range(KILLS):
        into = tmp_path / f"into{i}"
        proc = subprocess.Popen(merge(into), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.0) * took)  # from start-up to the writes
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        interrupted += proc.returncode == -signal.SIGKILL
        if into.exists():
            for path in into.rglob("*.json"):
                if not any(part.startswith(".write-") for part in path.parts):  # scratch
                    json.loads(path.read_text())
        retry = subprocess.run(merge(into), capture_output=True, text=True)
        assert retry.returncode == 0, retry.stderr
        assert {str(p.relative_to(into)): p.read_bytes() for p in sorted(into.rglob("*"))
                if p.is_file()} == expected
    assert interrupted  # at least some runs were really killed mid-way


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs, where this test may mount one (root, a mount namespace that
    allows it); skipped with the reason elsewhere."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk, leave: int) -> None:
    """Fill ``disk`` up to ``leave`` bytes free (a filler file)."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))


@pytest.mark.slow
def test_a_full_disk_leaves_the_tree_as_it_was_or_fully_updated(tmp_path, small_disk):
    project = make_project(tmp_path / "proj")
    results = small_disk / "results"
    info = tmp_path / "machine.json"
    info.write_text(json.dumps({"cpu": "EPYC"}))

    def run(commit, machine):
        return subprocess.run(
            [sys.executable, "-m", "torchpulse.cli", "import", "pep",
             str(IMPORT_DATA / "pep.log"), "--unit", "ms", "--config", str(project.conf),
             "--commit", commit,
             "--machine", machine, "--machine-info", str(info), "--results-dir",
             str(results)], capture_output=True, text=True)

    assert run(project.main[0], "first").returncode == 0
    failed = 0
    for i, leave in enumerate(range(0, 24_000, 2_000)):
        machine = f"m{i}"  # a new machine each time: machine.json is written too
        _fill(small_disk, leave)
        before = _tree(results)
        done = run(project.main[1], machine)
        if done.returncode != 0:
            failed += 1
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert "No space left on device" in done.stderr
            assert _tree(results) == before
        (small_disk / "filler").unlink()
        assert run(project.main[1], machine).returncode == 0  # a retry succeeds
    assert failed  # the disk really was too small for some of them


@pytest.mark.slow
def test_a_read_only_results_folder_is_one_line(tmp_path, small_disk):
    project = make_project(tmp_path / "proj")
    results = small_disk / "results"

    def run():
        return subprocess.run(
            [sys.executable, "-m", "torchpulse.cli", "import", "pep",
             str(IMPORT_DATA / "pep.log"), "--unit", "ms", "--config", str(project.conf),
             "--commit", project.main[0], "--machine", "m", "--results-dir", str(results)],
            capture_output=True, text=True)

    assert run().returncode == 0
    before = _tree(results)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        done = run()
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Read-only file system" in done.stderr
    assert _tree(results) == before
