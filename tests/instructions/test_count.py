"""Counting under callgrind: the dumps in order, the median window, the normalised process,
its stage, the parent's warm-up. (Real workloads counted from two clones whose paths,
environments and working directories differ: tests/e2e/test_instruction_step.py, which
counts them anyway.)"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import torchpulse
from torchpulse import sizes
from torchpulse.instructions import callgrind, count, messages, normalised, windows, worker
from torchpulse.workloads import registry


def test_the_median_window_per_call_and_its_top_functions_are_kept():
    # windows of 4 calls: each figure is a window's total over its calls
    dumps = [callgrind.Dump(total, {"a": total - 40, "b": 28, "c": 12})
             for total in (4120, 4000, 4040, 3960, 20000)]
    got = count.summarise("rnns/cudnn/forward", dumps, calls=4, top=2)
    assert got.counts == [1030, 1000, 1010, 990, 5000] and got.instructions == 1010
    assert got.functions == {"a": 1000, "b": 7}
    assert got.spread == pytest.approx((5000 - 990) / 1010)


def test_a_childs_own_dump_is_named_by_a_string_of_one_length_whatever_its_pid(tmp_path,
                                                                               monkeypatch):
    """The child names its sizing dump between its warm-up and its windows; a pid of
    another number of digits once moved 24 of the 72 counts (by up to 0.05 %)."""
    dumps = tmp_path / "out" / "dumps"
    dumps.mkdir(parents=True)
    lengths = set()
    for pid in (7, 301, 4095, 12001, 32767, 4194304):
        monkeypatch.setattr(worker.os, "getpid", lambda pid=pid: pid)
        named = windows.own_dump(dumps, 2)
        lengths.add(len(named))
        real = dumps / f"callgrind.out.{pid}.2"
        real.write_text("events: Ir\nfn=(1) f\n0 12\ntotals: 12\n")
        assert os.path.samefile(named, real) and callgrind.read_total(named) == 12
    assert len(lengths) == 1


def test_a_childs_own_files_are_named_alike_however_many_workloads_are_counted():
    """A child reads its spec before it counts: the 3rd of 3 and the 50th of 72 read paths
    of one length (their index's digits once moved a count by 6 instructions)."""
    assert len({len(worker.file_name(index)) for index in (0, 2, 9, 10, 49, 77, 999)}) == 1
    assert worker.file_name(2) != worker.file_name(20)


@pytest.mark.parametrize(("one_call", "calls"), [
    (5_000_000, 1), (50_000_000, 1), (2_500_000, 2), (2_400_000, 4), (600_000, 16),
    (1, windows.MAX_CALLS), (0, 1)])
def test_a_window_holds_a_power_of_two_calls_up_to_its_size(one_call, calls):
    assert windows.calls_for(one_call, 5_000_000) == calls


def test_a_heavy_model_is_warmed_up_by_one_call_past_its_settling_the_rest_by_three():
    # by name, so that a workload gets the same warm-up in every count: its count depends on it
    assert windows.warm_up_calls("autograd/detr/vhp", 1) == 2
    assert windows.warm_up_calls("cnns/resnet50_jit/forward", 4) == 5
    assert windows.warm_up_calls("autograd/ppl_robust_reg/vjp", 1) == 4
    assert windows.warm_up_calls("rnns/jit/backward", 4) == 7
    # a prefix is a model, not the start of another's name
    assert all(prefix.endswith("/") for prefix in registry.HEAVY)


def test_the_workloads_counted_at_once_are_the_cores_or_what_the_user_says(monkeypatch):
    monkeypatch.delenv(count.process.JOBS_ENV, raising=False)
    assert count.process.jobs() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(count.process.JOBS_ENV, "3")
    assert count.process.jobs() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(count.process.JOBS_ENV, bad)
        with pytest.raises(count.CountingError, match="TORCHPULSE_COUNT_JOBS must be a whole"):
            count.process.jobs()


def test_the_counted_process_sees_nothing_of_its_callers_surroundings(tmp_path, monkeypatch):
    monkeypatch.setenv("SOMETHING_OF_THE_CALLERS", "x" * 1000)
    monkeypatch.chdir(tmp_path)
    # the libraries it loads, wherever the caller's cache is: copied in at fixed names
    cache = tmp_path / "a-cache-somewhere-under-the-callers-home"
    cache.mkdir()
    (cache / "fixed-cost-malloc-0123.so").write_bytes(b"malloc")
    (cache / "callgrind-helper-4567.so").write_bytes(b"helper")
    with normalised.stage({"PYTHONHASHSEED": "0"}, preload=cache / "fixed-cost-malloc-0123.so",
                          helper=cache / "callgrind-helper-4567.so") as stage:
        root, environ = stage.root, dict(stage.environ)
        # the counted process's working directory, which its import system lists: one name
        # more there (the stage's lock) moved a count by 2 % (experiments/diary/instructions.md)
        assert os.listdir(root) == [normalised.LINKS]
        links = environ["PYTHONPATH"].split(os.pathsep)
        assert str(root).startswith(("/tmp/tpc-", tempfile.gettempdir()))
        assert len(root.name) == len("tpc-") + 8
        # a copy of what the counted process imports of torchpulse comes first, without a
        # compiled file or folder of them; every entry a fixed-length path in the stage,
        # the others links
        assert links[0] == str(root / "p" / "00")
        copied = Path(links[0]) / "torchpulse"
        assert not copied.is_symlink()
        package = Path(torchpulse.__file__).resolve().parent
        assert {str(p.relative_to(copied)) for p in copied.rglob("*") if p.is_file()} == \
            set(normalised.COUNTED_SOURCES)
        assert all((copied / r).read_bytes() == (package / r).read_bytes()
                   for r in normalised.COUNTED_SOURCES)
        assert all(Path(link).parent == root / "p" for link in links)
        # the environment's folders as trees of hard links: the kernel names what the
        # process maps or resolves there by the stage's paths, not the environment's
        import torch
        torch_init = Path(torch.__file__).resolve()
        mirrored = [Path(link) / "torch" / "__init__.py" for link in links[1:]
                    if (Path(link) / "torch" / "__init__.py").exists()]
        assert mirrored and not any(Path(link).is_symlink() for link in links[1:])
        assert os.stat(mirrored[0]).st_ino == os.stat(torch_init).st_ino
        assert "SOMETHING_OF_THE_CALLERS" not in environ and environ["HOME"] == str(root)
        assert stage.python[0] == os.path.realpath(sys.executable)
        assert environ["LD_PRELOAD"] == str(root / "p" / "malloc.so")
        assert (root / "p" / "malloc.so").read_bytes() == b"malloc"
        assert stage.helper == root / "p" / "helper.so"
        assert stage.helper.read_bytes() == b"helper"
    assert not root.exists()
    assert sorted(p.name for p in cache.iterdir()) == ["callgrind-helper-4567.so",
                                                       "fixed-cost-malloc-0123.so"]
    assert Path(torchpulse.__file__).exists()  # the stage went, never what its links named
    assert torch_init.exists()


def test_without_valgrind_counting_fails_in_one_line(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(count.CountingError, match="valgrind is not installed"):
        count.count(["rnns/cudnn/forward"], sizes.INSTRUCTIONS)


def test_a_malloc_the_loader_cannot_preload_fails_the_count_in_one_line(monkeypatch,
                                                                        tmp_path):
    # the loader only warns and goes on with glibc's malloc: counts of another level
    broken = tmp_path / "fixed-cost-malloc-broken.so"
    broken.write_text("not a shared library")
    monkeypatch.setattr(count.allocator, "library", lambda: broken)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(count.process, "run", lambda *args, **kwargs: pytest.fail("counted anyway"))
    with pytest.raises(count.CountingError) as raised:
        count.count(["rnns/cudnn/forward"], sizes.INSTRUCTIONS)
    message = str(raised.value)
    assert message.startswith("the counted process cannot load torchpulse's malloc (built at "
                              f"{broken}; remove it to build it again) from /")
    assert "cannot be preloaded" in message and "\n" not in message


def test_without_a_c_compiler_counting_fails_in_one_line(monkeypatch, tmp_path):
    # the allocator is not optional: glibc's would give counts of another level
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing built before
    monkeypatch.setenv("CC", "no-such-compiler")
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(count.CountingError, match="^instruction counts need a C compiler"):
        count.count(["rnns/cudnn/forward"], sizes.INSTRUCTIONS)


def test_a_stage_is_always_a_new_directory_and_only_its_own_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    someone_elses = tmp_path / "tpc-00000000"
    someone_elses.mkdir()
    (someone_elses / "keep").write_text("not the stage's")
    with normalised.stage({}) as first, normalised.stage({}) as second:
        assert first.root == tmp_path / "tpc-00000001"
        assert second.root == tmp_path / "tpc-00000002"
    assert (someone_elses / "keep").read_text() == "not the stage's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tpc-00000000"]


# a count killed outright (SIGKILL: asv's timeout, the OOM killer) while its stage is made;
# with "hold", a counted process (here a sleep) inherits the stage's lock and outlives it
KILLED_COUNT = """
import os, signal, subprocess, sys
from torchpulse.instructions import normalised
normalised.FIXED_TMP = sys.argv[1]
with normalised.stage({}) as stage:
    (stage.root / "in").mkdir()
    if sys.argv[2] == "hold":
        held = subprocess.Popen(["sleep", "600"], pass_fds=(stage.lock,),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(held.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_count(base: Path, hold: bool) -> int | None:
    done = subprocess.run([sys.executable, "-c", KILLED_COUNT, str(base),
                           "hold" if hold else "no"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return int(done.stdout) if hold else None


def test_a_stage_left_by_a_killed_count_is_removed_and_its_number_taken_again(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    _killed_count(tmp_path, hold=False)
    stale = tmp_path / "tpc-00000000"
    assert (stale / "in").is_dir() and (stale / normalised.LOCK).is_file()
    # what only looks like a stage is never removed: a link to a folder with a lock file
    target = tmp_path / "not-a-stage"
    (target / normalised.LINKS).mkdir(parents=True)
    (target / normalised.LOCK).write_text("")
    (tmp_path / "tpc-00000001").symlink_to(target)
    with normalised.stage({}) as again:
        assert again.root == stale and not (stale / "in").exists()
    assert (target / normalised.LOCK).is_file() and (tmp_path / "tpc-00000001").is_symlink()


def test_a_stage_whose_counted_process_still_runs_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    held = _killed_count(tmp_path, hold=True)
    busy = tmp_path / "tpc-00000000"
    try:
        with normalised.stage({}) as other:
            assert other.root == tmp_path / "tpc-00000001"
        assert (busy / "in").is_dir()
    finally:
        os.kill(held, signal.SIGKILL)
    # its lock goes when that process has gone: the next count takes the number back
    deadline = time.monotonic() + 60
    while True:
        with normalised.stage({}) as again:
            if again.root == busy or time.monotonic() > deadline:
                break
        time.sleep(0.1)
    assert again.root == busy


def test_the_parents_warm_up_is_the_same_whatever_the_selection(monkeypatch):
    """The parent warms up worker.PREWARM from one file whose bytes do not depend on what is
    counted, so a narrowed count (compare, bisect) starts from the dashboard's parent."""
    from torchpulse.autograd import choices as autograd
    from torchpulse.fastrnns import choices as fastrnns
    from torchpulse.workloads import registry

    seen = []

    def fake_run(cmd, env, cwd, timeout, log, progress=None, keep=()):
        seen.append((cwd / "prewarm.json").read_bytes())
        assert len(keep) == 1  # the stage's lock goes with the counted process
        return 0, ""

    monkeypatch.setattr(count.process, "run", fake_run)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(count.client, "helper", lambda: None)
    monkeypatch.setattr(count.process, "compile_imports", lambda stage, log=None: None)
    every = registry.workloads(fastrnns, autograd)
    _, failed = count.count(["rnns/cudnn/forward"], sizes.INSTRUCTIONS)
    assert failed == {"rnns/cudnn/forward": "its counting process died before it wrote its "
                                            "result"}
    count.count(every, sizes.INSTRUCTIONS)
    assert len(seen) == 2 and seen[0] == seen[1]
    # the tables, and the helper the parent discards its imports' translations with
    assert json.loads(seen[0]) == {"tables": sizes.INSTRUCTIONS, "helper": None}
    # real workloads, none of them TorchScript (its warm-up made the TorchScript LSTMs'
    # counts take one of two values from run to run)
    assert set(worker.PREWARM) <= set(every)
    assert not any("jit" in name for name in worker.PREWARM)


def test_each_childs_files_are_read_when_it_finishes_not_after_the_last(monkeypatch):
    """The dumps of a child are read as the counted process says it is done, while the
    others still count (a count of the 72 spent 8.6 s reading them after the last child).
    A child counts a group (registry.groups): what was asked comes back in the selection's
    order, a failed workload's error with it, and a child that died fails its whole group;
    the rest of a group is counted and said, but not returned."""
    names = ["rnns/cudnn/forward", "rnns/py/forward", "rnns/aten/forward",
             "autograd/ppl_simple_reg/jvp"]
    lines, staged = [], []

    def dump(total: int) -> str:
        return f"events: Ir\nfn=(1) work\n0 {total}\ntotals: {total}\n"

    def fake_run(cmd, env, cwd, timeout, log, progress=None, keep=()):
        out = cwd / "out"
        groups = [json.loads((cwd / "in" / worker.file_name(i)).read_text())["names"]
                  for i in range(4)]
        staged.extend(groups)
        for index in (2, 0, 3, 1):  # in the order they finish, not the selection's
            if index == 1:  # died: no file
                progress(messages.progress_record(1, -11))
                continue
            pid, results = 100 + index, []
            for member, name in enumerate(groups[index]):
                if name == "rnns/aten/backward":
                    results.append({"name": name, "error": "boom"})
                    continue
                first = 1 + 3 * member
                results.append({"name": name, "first": first, "calls": 2, "windows": 3,
                                "seconds": {"build": 0.5}})
                for n, total in enumerate((200 * (index + 1) + 10 * member,
                                           202 * (index + 1) + 10 * member,
                                           204 * (index + 1) + 10 * member), start=first):
                    (out / "dumps" / f"callgrind.out.{pid}.{n}").write_text(dump(total))
            (out / worker.file_name(index)).write_text(json.dumps(
                {"pid": pid, "workloads": results, "inputs": {"files": [f"/f{index}"]}}))
            progress(messages.progress_record(index, 0))
            # gone once said: read by then, or the figure would be lost
            (out / worker.file_name(index)).unlink()
            for path in (out / "dumps").glob(f"callgrind.out.{pid}.*"):
                path.unlink()
        return 0, ""

    monkeypatch.setattr(count.process, "run", fake_run)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(count.client, "helper", lambda: None)
    monkeypatch.setattr(count.process, "prepare", lambda *args: None)
    counted, failed = count.count(names, sizes.INSTRUCTIONS, log=lines.append)
    assert staged == [["rnns/cudnn/forward", "rnns/cudnn/backward"],
                      ["rnns/py/forward", "rnns/py/backward"],
                      ["rnns/aten/forward", "rnns/aten/backward"],
                      ["autograd/ppl_simple_reg/vjp", "autograd/ppl_simple_reg/jvp",
                       "autograd/ppl_simple_reg/vhp", "autograd/ppl_simple_reg/hvp"]]
    assert list(counted) == [names[0], names[2], names[3]]
    assert counted[names[0]].counts == [100, 101, 102] and counted[names[0]].instructions == 101
    assert counted[names[2]].counts == [300, 303, 306]
    assert counted[names[2]].seconds == {"build": 0.5}
    assert counted[names[3]].counts == [405, 409, 413]  # its own dumps: the group's 2nd
    assert failed == {names[1]: "its counting process died before it wrote its result"}
    assert lines == ["counted rnns/aten/forward", "failed rnns/aten/backward",
                     "counted rnns/cudnn/forward", "counted rnns/cudnn/backward",
                     *(f"counted autograd/ppl_simple_reg/{task}"
                       for task in ("vjp", "jvp", "vhp", "hvp")),
                     "failed rnns/py/forward (exit -11)", "failed rnns/py/backward (exit -11)"]


def test_a_warm_up_that_fails_is_said_and_the_count_goes_on(tmp_path, capsys):
    spec = tmp_path / "prewarm.json"
    worker.prewarm(spec)  # absent: nothing
    assert capsys.readouterr().err == ""
    spec.write_text(json.dumps({"tables": {"fastrnns": {}, "autograd": {}}}))
    worker.prewarm(spec)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("prewarm failed: TypeError") and err[1].startswith("prewarmed in")


def test_the_counted_thread_starts_its_work_only_once_the_main_thread_is_parked():
    """The main thread running Python beside the started work, at a moment the switch
    interval chose, made a count take one of several values (experiments/diary/instructions.md)."""
    import threading

    main = threading.get_ident()
    switch = sys.getswitchinterval()

    def work() -> dict:
        frame = sys._current_frames()[main]
        # the main thread waits in in_fresh_arena itself, on its last call, and is never
        # asked to give the interpreter up while it gets there
        return {"thread": threading.get_ident(), "where": frame.f_code.co_name,
                "line": frame.f_lineno,
                "switch": sys.getswitchinterval()}

    got = windows.in_fresh_arena(work)
    assert got["thread"] != main and got["where"] == "in_fresh_arena"
    source = windows.in_fresh_arena.__code__
    lines = Path(source.co_filename).read_text().splitlines()
    assert lines[got["line"] - 1].strip() == "done.acquire()"
    assert got["switch"] == windows.PARKING and sys.getswitchinterval() == switch

    def fails() -> dict:
        raise ValueError("no such workload")

    with pytest.raises(ValueError, match="no such workload"):
        windows.in_fresh_arena(fails)
    assert sys.getswitchinterval() == switch


def test_the_counted_process_starts_without_scipy():
    """The counted process imports every workload's module at its start, under valgrind:
    scipy's 321 modules cost it 6-10 s a commit there. Only DETR's matcher uses scipy, and
    imports it when a matcher is made (in DETR's own child)."""
    imports = [line for line in worker.BOOTSTRAP.splitlines() if line.startswith("import ")]
    assert any("torchpulse.autograd.run" in line for line in imports)
    code = "\n".join([*imports, "print(sorted(m for m in sys.modules if m == 'scipy' "
                      "or m.startswith('scipy.')))"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


FORK_PROBE = """
import dis, json, os, sys
from torchpulse.instructions import worker

def child(index, stage, forked):  # what the child holds as it starts its work
    blocks = sys.getallocatedblocks()
    code = [i.opname for i in dis.get_instructions(worker._close_each, adaptive=True)]
    (stage / "out" / f"{index}.probe").write_text(json.dumps([blocks, code]))
    return 0

worker._child, worker.prewarm, worker.inputs = child, lambda spec: None, lambda *a: {}
said, progress = os.pipe()
code = worker.main(sys.argv[1], "000012", "000002", f"{progress:06d}")
os.close(progress)
sys.stdout.write(os.read(said, 1 << 16).decode())  # every child's end, as the count reads it
sys.exit(code)
"""


def test_every_child_starts_from_the_same_state_whatever_its_index(tmp_path):
    """A workload's count followed its place in the selection (ResNet-18's jvp by 2,240
    instructions between the 3rd and the 6th place; experiments/diary/instructions.md,
    "Determinism"):
    the parent's bookkeeping between forks (each child's pipe and pid) grew with every fork,
    and the loop in which a child closes the others' pipes ran as many times as its index,
    so Python quickened and specialised it from the 4th child on. Now every child starts with
    as many allocated blocks, and the closing code in the same adaptive state (quickened in
    the parent before the first fork)."""
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-c", FORK_PROBE, str(tmp_path)],
                          env={**os.environ,
                               "PYTHONPATH": str(Path(torchpulse.__file__).parents[1])},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    probes = [json.loads((tmp_path / "out" / f"{i}.probe").read_text()) for i in range(12)]
    blocks = [blocks for blocks, _ in probes]
    assert len(set(blocks)) == 1, blocks
    code = probes[0][1]
    assert all(other == code for _, other in probes), probes
    assert "JUMP_BACKWARD_QUICK" in code  # quickened before the first child: the loop ran
    # every child was reaped and said so on the progress pipe, in the records the count
    # reads (messages.py), and nothing of it on stderr
    ended = [messages.read_progress(line.encode(), 12) for line in done.stdout.splitlines()]
    assert sorted(ended, key=lambda e: e.index) == [messages.Progress(i, 0)
                                                     for i in range(12)]
    assert done.stderr == ""


def test_inside_the_counted_process_realpath_stops_at_the_stages_links(tmp_path,
                                                                       monkeypatch):
    """inspect.getmodule keeps the resolved path of every module it meets: resolved through
    the stage's links they carried the environment's own location, and its length moved
    counts between two clones' asv environments."""
    import posixpath

    from torchpulse.instructions import stage_paths

    monkeypatch.setattr(posixpath, "realpath", posixpath.realpath)  # restored afterwards
    environment = tmp_path / "a" / "much" / "longer" / "environment" / "site-packages"
    (environment / "torch").mkdir(parents=True)
    (environment / "torch" / "nn.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (environment / "torch" / "linked").symlink_to(elsewhere)
    links = tmp_path / "stage" / normalised.LINKS
    links.mkdir(parents=True)
    (links / "01").symlink_to(environment)
    stage_paths.stop_at_links(str(links))
    assert os.path.realpath(links / "01" / "torch" / "nn.py") == f"{links}/01/torch/nn.py"
    assert os.path.realpath(f"{links}/01/torch/./nn.py") == f"{links}/01/torch/nn.py"
    # a link below the stage's, or a way up out of it: resolved whole, as before
    assert os.path.realpath(f"{links}/01/torch/linked") == str(elsewhere)
    assert os.path.realpath(f"{links}/01/../01/torch") == \
        str(environment.parent / "01" / "torch")
    assert os.path.realpath(str(environment)) == str(environment)  # outside: unchanged
    assert os.path.realpath(b"/usr/../usr") == b"/usr"
    with pytest.raises(FileNotFoundError):
        os.path.realpath(f"{links}/01/torch/gone.py", strict=True)
    assert os.path.realpath(f"{links}/01/torch/gone.py") == f"{links}/01/torch/gone.py"
    # the counted process installs it for the stage's links folder, before torch
    assert f'stop_at_links(sys.argv[1] + "/{normalised.LINKS}")' in worker.BOOTSTRAP
    assert worker.BOOTSTRAP.index("stop_at_links") < worker.BOOTSTRAP.index("import torch,")


def test_the_counted_process_reads_byte_code_compiled_from_the_stages_paths(tmp_path,
                                                                            monkeypatch):
    """The environment's __pycache__ files hold the paths they were compiled at (two asv
    environments at different paths counted up to 0.63 % apart for that alone): the
    counted process reads byte-code the stage compiled from its own paths, in the stage."""
    import marshal

    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    with normalised.stage(count.ENVIRONMENT) as stage:
        (stage.root / "prewarm.json").write_text(json.dumps(
            {"tables": sizes.INSTRUCTIONS, "helper": None}))
        cache = Path(stage.environ["PYTHONPYCACHEPREFIX"])
        assert cache == stage.root / normalised.CACHE
        assert stage.environ["PYTHONDONTWRITEBYTECODE"] == "1"  # the counted process writes none
        logged = []
        count.process.compile_imports(stage, logged.append)
        compiled = list(cache.rglob("*.pyc"))
        torch_init = [p for p in compiled if p.parent.name == "torch"
                      and p.name.startswith("__init__.")]
        assert len(torch_init) == 1 and len(compiled) > 500
        code = marshal.loads(torch_init[0].read_bytes()[16:])
        assert code.co_filename.startswith(f"{stage.root}/{normalised.LINKS}/0")
        # the warm-up's builds were compiled too: the LSTM models and the ResNets
        assert any(p.name.startswith("resnet.") for p in compiled)
        assert not any(str(normalised.PACKAGE) in p.read_bytes().decode("latin-1")
                       for p in compiled if "torchpulse" in p.parts)
        assert logged == ["compiled the counted process's imports into its stage"]
        # what cannot be imported fails the count in one line
        monkeypatch.setattr(count.worker, "COMPILE", "import not_a_module_anywhere")
        with pytest.raises(count.CountingError, match="cannot import what it counts: "
                           "ModuleNotFoundError"):
            count.process.compile_imports(stage)


MAPS_PROBE = """
import mmap, sys
from torchpulse.instructions import stage_paths
links, data, folder = sys.argv[1], sys.argv[2], sys.argv[3]
stage_paths.show_maps_in_stage(links)
with open(data, "rb") as f:
    mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    with open("/proc/self/maps") as maps:
        seen = maps.read()
    print(len([line for line in seen.splitlines() if line.endswith("/lib/data.bin")]))
    print(int(folder in seen), int(f"{links}/01/lib/data.bin" in seen))
"""


@pytest.mark.parametrize("where", ["e", "a/much/longer/path/of/an/environment/than/the/other"])
def test_the_counted_process_reads_its_mappings_with_the_environment_named_by_its_link(
        tmp_path, where):
    """torch's import reads /proc/self/maps whole: the kernel names each mapped file by its
    resolved path, and the string's length followed the environment's location (0.27 %
    between two clones' asv environments)."""
    from torchpulse.instructions import stage_paths

    folder = tmp_path / where / "site-packages"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "data.bin").write_bytes(b"x" * 4096)
    links = tmp_path / "stage" / normalised.LINKS
    links.mkdir(parents=True)
    (links / "01").symlink_to(folder)
    table = stage_paths.maps_table({"01": str(folder.resolve())})
    assert len(table) == stage_paths.TABLE_BYTES  # whatever the folder's length
    (links / stage_paths.TABLE).write_bytes(table)
    done = subprocess.run([sys.executable, "-c", MAPS_PROBE, str(links),
                           str(links / "01" / "lib" / "data.bin"), str(folder.resolve())],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "0", "1"]  # the link's name, never the folder's
    with pytest.raises(ValueError, match="too long"):
        stage_paths.maps_table({"01": "/" + "x" * stage_paths.SLOT})


def test_an_environment_on_another_filesystem_is_linked_instead_of_mirrored(tmp_path,
                                                                            monkeypatch):
    folder = tmp_path / "site-packages"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "pkg" / "alias.py").symlink_to("__init__.py")
    assert normalised.mirror(folder, tmp_path / "mirrored")
    assert os.stat(tmp_path / "mirrored" / "pkg" / "__init__.py").st_ino == \
        os.stat(folder / "pkg" / "__init__.py").st_ino
    assert os.readlink(tmp_path / "mirrored" / "pkg" / "alias.py") == "__init__.py"

    def across(src, dst, **kwargs):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", across)
    assert not normalised.mirror(folder, tmp_path / "elsewhere")
    assert not (tmp_path / "elsewhere").exists()  # nothing half made
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    monkeypatch.setattr(normalised, "import_roots", lambda: [folder])
    with normalised.stage({}) as stage:
        assert (stage.root / "p" / "01").is_symlink()  # linked: stage_paths hides its path
    assert (folder / "pkg" / "__init__.py").exists()
