"""Counts reused only where nothing they were made of changed: the digests of files and
folders, the context, the stored runs (all or nothing, the newest kept, anything foreign
skipped), files named by their place in the stage and read through the stage about to
count (never in the environment that stored a run), and count() counting only what it
cannot reuse."""

import json
import os
import sys
from pathlib import Path

import pytest

from torchpulse import sizes
from torchpulse.instructions import count, normalised, reuse, worker

SETTINGS = {"rnns/cudnn/forward": "s1", "rnns/py/forward": "s2"}


def _figures(instructions: int, settings: str) -> dict:
    return {"settings": settings, "instructions": instructions,
            "counts": [instructions, instructions + 1, instructions - 1],
            "functions": {"f [libtorch_cpu.so]": instructions // 2},
            "seconds": {"build": 0.1, "warm-up": 0.2, "sizing": 0.3, "windows": 0.4}}


@pytest.fixture
def made_of(tmp_path):
    """A count's inputs: two files and a folder."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "lib.so").write_bytes(b"\x7fELF one")
    (folder / "mod.py").write_text("x = 1\n")
    return folder


def _inputs(folder: Path) -> dict:
    files = [str(folder / "lib.so"), str(folder / "mod.py")]
    return reuse.Digests().of(files, [str(folder)])


def test_a_stored_count_is_found_while_every_file_and_folder_it_was_made_of_is_the_same(
        tmp_path, made_of):
    runs = tmp_path / "runs"
    reuse.store(runs, "ctx", {n: _figures(1000, s) for n, s in SETTINGS.items()},
                _inputs(made_of))
    found = reuse.lookup(runs, "ctx", SETTINGS, reuse.Digests())
    assert {n: f["instructions"] for n, (f, _) in found.items()} == dict.fromkeys(SETTINGS, 1000)
    # another context, another workload's settings: not found
    assert reuse.lookup(runs, "other", SETTINGS, reuse.Digests()) == {}
    assert set(reuse.lookup(runs, "ctx", {**SETTINGS, "rnns/py/forward": "s3"},
                            reuse.Digests())) == {"rnns/cudnn/forward"}
    # a byte of a file, a name in a folder, a file gone: counted again
    (made_of / "mod.py").write_text("x = 2\n")
    assert reuse.lookup(runs, "ctx", SETTINGS, reuse.Digests()) == {}
    (made_of / "mod.py").write_text("x = 1\n")
    assert len(reuse.lookup(runs, "ctx", SETTINGS, reuse.Digests())) == 2
    (made_of / "new.py").write_text("")
    assert reuse.lookup(runs, "ctx", SETTINGS, reuse.Digests()) == {}
    (made_of / "new.py").unlink()
    (made_of / "lib.so").unlink()
    assert reuse.lookup(runs, "ctx", SETTINGS, reuse.Digests()) == {}


def test_the_newest_run_of_the_same_inputs_is_taken_and_the_oldest_past_keep_removed(
        tmp_path, made_of):
    runs = tmp_path / "runs"
    runs.mkdir()
    foreign = runs / "notes.txt"
    foreign.write_text("mine")
    os.mkfifo(runs / "run-0-0.json")  # named like ours, not a file of ours: never removed
    os.utime(runs / "run-0-0.json", (0, 0))
    (runs / "run-by-hand.json").write_text("{}")
    os.utime(runs / "run-by-hand.json", (0, 0))
    paths = []
    for level in range(5):
        paths.append(reuse.store(runs, "ctx", {"rnns/py/forward": _figures(level, "s2")},
                                 _inputs(made_of), keep=3))
        os.utime(paths[-1], (level + 1, level + 1))  # their order, whatever the clock
    kept = [p for p in runs.glob(reuse.PATTERN) if reuse.OURS.fullmatch(p.name) and p.is_file()]
    assert sorted(kept) == sorted(paths[2:]) and foreign.exists()
    assert (runs / "run-0-0.json").exists() and (runs / "run-by-hand.json").exists()
    found = reuse.lookup(runs, "ctx", {"rnns/py/forward": "s2"}, reuse.Digests())
    assert found["rnns/py/forward"] == (_figures(4, "s2"), paths[4].name)
    assert reuse.store(runs, "ctx", {}, _inputs(made_of)) is None  # nothing counted


@pytest.mark.parametrize("damage", [
    "not json", "[]", '{"version": 99}',
    json.dumps({"version": reuse.VERSION, "context": "ctx", "inputs": {"files": {}},
                "counts": {}}),
])
def test_a_run_that_is_not_one_of_ours_or_is_cut_short_is_skipped(tmp_path, made_of, damage):
    runs = tmp_path / "runs"
    good = reuse.store(runs, "ctx", {"rnns/py/forward": _figures(7, "s2")}, _inputs(made_of))
    os.utime(good, (1, 1))
    (runs / "run-9-9.json").write_text(damage)  # the newest
    found = reuse.lookup(runs, "ctx", {"rnns/py/forward": "s2"}, reuse.Digests())
    assert found["rnns/py/forward"][0]["instructions"] == 7


@pytest.mark.parametrize("field,value", [("instructions", "7"), ("instructions", -7),
                                         ("instructions", True), ("counts", []),
                                         ("counts", [1, "2"]), ("functions", {"f": 1.5}),
                                         ("seconds", None)])
def test_a_stored_figure_of_the_wrong_type_is_never_taken(tmp_path, made_of, field, value):
    runs = tmp_path / "runs"
    reuse.store(runs, "ctx", {"rnns/py/forward": {**_figures(7, "s2"), field: value}},
                _inputs(made_of))
    assert reuse.lookup(runs, "ctx", {"rnns/py/forward": "s2"}, reuse.Digests()) == {}


def test_a_place_in_a_stage_is_read_in_the_stage_at_hand_and_in_none_without_one(tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    with normalised.stage({}) as stage:
        key = stage.key(f"{stage.root}/p/00/torchpulse/sizes.py")
        assert key == "<stage>/p/00/torchpulse/sizes.py"
        digest = reuse.Digests(stage).file(key)
        assert digest == reuse.Digests().file(str(normalised.PACKAGE / "sizes.py"))
        assert reuse.Digests(stage).folder("<stage>/p/00/torchpulse") != "absent"
    assert reuse.Digests().file(key) == "absent"  # no stage: never taken for the same
    assert reuse.Digests().folder(str(tmp_path / "gone")) == "absent"


def test_the_context_is_the_same_from_any_stage_and_moves_with_the_command_and_code(
        tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "count.py").write_text("A = 1\n")
    (code / "notes.txt").write_text("not code")

    def context(root, flag="--quiet", env="1"):
        cmd = ["/usr/bin/true", "--tool=callgrind", flag, f"--out={root}/out/%p", "python"]
        return reuse.context(cmd, {"HOME": str(root), "OMP_NUM_THREADS": env}, root, code)

    first = context(Path("/tmp/tpc-00000000"))
    assert context(Path("/tmp/tpc-00000001")) == first
    assert context(Path("/tmp/tpc-00000000"), flag="--dump-instr=yes") != first
    assert context(Path("/tmp/tpc-00000000"), env="2") != first
    (code / "notes.txt").write_text("still not code")
    assert context(Path("/tmp/tpc-00000000")) == first
    (code / "count.py").write_text("A = 2\n")
    assert context(Path("/tmp/tpc-00000000")) != first


def test_the_stage_names_its_copies_and_links_and_what_lies_behind_them_alike(tmp_path,
                                                                             monkeypatch):
    """A module imported through a link and a library mapped by its resolved path get the
    same name, the place in the stage; the stage's own files get none; the rest is
    itself."""
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    malloc = tmp_path / "cache" / "malloc-1.so"
    malloc.parent.mkdir()
    malloc.write_bytes(b"so")
    with normalised.stage({}, preload=malloc) as stage:
        root = str(stage.root)
        first_root = normalised.import_roots()[0]
        assert stage.key(f"{root}/p/00/torchpulse/workloads.py") == \
            "<stage>/p/00/torchpulse/workloads.py"
        assert stage.key(f"{root}/p/malloc.so") == stage.key(str(malloc)) == "<stage>/p/malloc.so"
        assert stage.key(f"{root}/p/01/torch/__init__.py") == \
            stage.key(str(first_root / "torch/__init__.py")) == "<stage>/p/01/torch/__init__.py"
        assert stage.path("<stage>/p/01/torch/__init__.py") == \
            stage.root / "p/01/torch/__init__.py"
        assert stage.key("/usr/lib/libc.so.6") == "/usr/lib/libc.so.6"
        assert stage.path("/usr/lib/libc.so.6") == Path("/usr/lib/libc.so.6")
        for own in (root, f"{root}/in/000000.json", f"{root}/p/00"):
            assert stage.key(own) is None
        # a path beside the stage that only starts like it is not inside it
        assert stage.key(f"{root}0/x") == f"{root}0/x"
        # nor a path beside an import root that only starts like it
        assert stage.key(f"{first_root}-other/x.py") == f"{first_root}-other/x.py"


def _environment(where: Path, version: int) -> Path:
    """A site-packages folder with one small package (``plugin``, a module and a library
    the process would map) at ``version``."""
    site = where / "lib" / "python3" / "site-packages"
    (site / "plugin").mkdir(parents=True)
    (site / "plugin" / "__init__.py").write_text(f"VERSION = {version}\n")
    (site / "plugin" / "native.so").write_bytes(b"\x7fELF" + bytes([version]) * 64)
    (site / f"plugin-{version}.0.dist-info").mkdir()
    return site


def test_a_count_from_one_environment_is_never_taken_by_another_but_by_itself_moved(
        tmp_path, monkeypatch):
    """Two environments with the same base interpreter and different versions of a
    package the counted process imports: neither takes the other's figures (the stored run
    names the places in the stage, and the lookup reads them in the environment about to be
    counted; it used to check the storing environment's files and hand its counts over).
    The same environment at another path reads the same bytes at the same places: reused.
    Counted process faked: it reports the package's module through the stage's link and
    the library by its resolved path, as worker.inputs does."""
    monkeypatch.setattr(normalised, "FIXED_TMP", str(tmp_path))
    monkeypatch.setattr(count.process, "prepare", lambda stage, built, log=None: None)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/true")
    monkeypatch.setattr(count.client, "helper", lambda: None)
    roots: list[Path] = []
    monkeypatch.setattr(normalised, "import_roots", lambda: list(roots))
    counted_in: list[str] = []

    def staged(stage, groups, specs, tables, processes, timeout, log, inputs, malloc):
        site = stage.root / "p" / "01"
        resolved = (site / "plugin").resolve()
        counted_in.append(str(resolved.parent))
        inputs.setdefault("files", set()).update(
            {str(site / "plugin" / "__init__.py"), str(resolved / "native.so")})
        inputs.setdefault("folders", set()).update({str(site), str(site / "plugin")})
        version = int((site / "plugin" / "__init__.py").read_text().split("=")[1])
        names = [name for group in groups for name in group]
        return {n: count.Counted(n, 1000 * version, [1000 * version] * 3) for n in names}, {}

    monkeypatch.setattr(count, "_count_staged", staged)
    runs = tmp_path / "runs"

    def figure(site: Path) -> tuple[int, bool]:
        roots[:] = [site.resolve()]
        done, _ = count.count(["rnns/py/forward"], sizes.INSTRUCTIONS, reuse_in=runs)
        return done["rnns/py/forward"].instructions, done["rnns/py/forward"].reused

    one = _environment(tmp_path / "venv-one", 1)
    two = _environment(tmp_path / "venv-two", 2)
    assert figure(one) == (1000, False)
    assert figure(two) == (2000, False)  # not 1000, reused from the other environment
    assert figure(one) == (1000, True) and figure(two) == (2000, True)
    moved = tmp_path / "elsewhere" / "venv-one-moved"
    moved.parent.mkdir()
    (tmp_path / "venv-one").rename(moved)
    assert figure(moved / "lib" / "python3" / "site-packages") == (1000, True)
    assert len(counted_in) == 2
    # a byte of the library or a new package beside it: counted again
    native = moved / "lib" / "python3" / "site-packages" / "plugin" / "native.so"
    native.write_bytes(native.read_bytes() + b"\0")
    assert figure(moved / "lib" / "python3" / "site-packages") == (1000, False)
    (two / "tqdm").mkdir()
    assert figure(two) == (2000, False)


def test_what_a_process_is_made_of_names_its_modules_libraries_and_import_folders():
    made = worker.inputs()
    assert worker.__file__ in made["files"] and os.path.realpath(sys.executable) in made["files"]
    assert worker.__cached__ in made["files"]  # its compiled file, stale or not
    assert any(Path(f).name.startswith("libc") for f in made["files"])
    assert any(folder in made["folders"] for folder in sys.path if folder)


def test_without_its_mappings_a_process_does_not_know_what_it_is_made_of(monkeypatch):
    import builtins

    real = builtins.open

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    assert worker.inputs() == {}


def test_a_count_reuses_what_it_can_and_counts_only_the_rest(tmp_path, monkeypatch):
    """count(reuse_in=...) with the counted process faked: a stored figure of the same
    inputs is taken without starting it; the rest are counted, numbered from 0."""
    runs = tmp_path / "runs"
    started = []

    def fake_run(cmd, env, cwd, timeout, log, progress=None, keep=()):
        started.append([json.loads(p.read_text())["names"]
                        for p in sorted((cwd / "in").iterdir())])
        for index in range(len(started[-1])):
            (cwd / "out" / worker.file_name(index)).write_text(json.dumps({"error": "faked"}))
        return 0, ""

    monkeypatch.setattr(count.process, "run", fake_run)
    monkeypatch.setattr(count.process, "prepare", lambda stage, built, log=None: None)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/true")
    monkeypatch.setattr(count.client, "helper", lambda: None)
    # what an earlier count of rnns/py/forward stored, from this stage's context
    with normalised.stage(count.ENVIRONMENT, preload=count.allocator.library()) as stage:
        cmd = count.process.command(stage, 0, 0, instr_at_start=True)[:-2]
        ctx = reuse.context(cmd, stage.environ, stage.root, Path(count.__file__).parent)
    def spec(name):
        return {"name": name, "windows": count.WINDOWS, "window": count.WINDOW,
                "tables": sizes.INSTRUCTIONS, "helper": None}

    stored = {"rnns/py/forward": 3_585_178, "rnns/py/backward": 7_839_927,
              "rnns/aten/forward": 503_739}  # aten's backward, in its group, is not
    reuse.store(runs, ctx, {name: _figures(figure, reuse.settings(spec(name)))
                            for name, figure in stored.items()},
                reuse.Digests().of([count.__file__], []))
    logged = []
    counted, failed = count.count(["rnns/cudnn/forward", "rnns/py/forward",
                                   "rnns/aten/forward"], sizes.INSTRUCTIONS, reuse_in=runs,
                                  log=logged.append)
    # a group is reused whole or counted whole
    assert started == [[["rnns/cudnn/forward", "rnns/cudnn/backward"],
                        ["rnns/aten/forward", "rnns/aten/backward"]]]
    assert failed == {"rnns/cudnn/forward": "faked", "rnns/aten/forward": "faked"}
    assert counted["rnns/py/forward"].instructions == 3_585_178
    assert counted["rnns/py/forward"].reused and list(counted) == ["rnns/py/forward"]
    assert logged[0].startswith("reused 2 of 6 counts")
    # all of them stored: the counted process is not started at all
    counted, failed = count.count(["rnns/py/forward"], sizes.INSTRUCTIONS, reuse_in=runs)
    assert len(started) == 1 and failed == {} and counted["rnns/py/forward"].reused
    # without a folder nothing is reused
    count.count(["rnns/py/forward"], sizes.INSTRUCTIONS)
    assert started[-1] == [["rnns/py/forward", "rnns/py/backward"]] and len(started) == 2


def test_reuse_is_on_unless_the_user_says_no(monkeypatch):
    monkeypatch.delenv(count.REUSE_ENV, raising=False)
    assert count.reuse_folder() == reuse.directory()
    monkeypatch.setenv(count.REUSE_ENV, "No")
    assert count.reuse_folder() is None
    monkeypatch.setenv(count.REUSE_ENV, "sometimes")
    with pytest.raises(count.CountingError, match="TORCHPULSE_COUNT_REUSE must be yes or no"):
        count.reuse_folder()


def test_a_device_or_fifo_a_mapping_names_is_never_read(tmp_path):
    # /dev/zero never ends, a FIFO without a writer never answers: their kind is their digest
    assert reuse.Digests().file("/dev/zero").startswith("not a file")
    os.mkfifo(tmp_path / "fifo")
    assert reuse.Digests().file(str(tmp_path / "fifo")).startswith("not a file")


def test_a_stored_run_that_is_a_link_to_a_device_or_a_fifo_is_skipped_unread(tmp_path,
                                                                            made_of):
    runs = tmp_path / "runs"
    good = reuse.store(runs, "ctx", {"rnns/py/forward": _figures(7, "s2")}, _inputs(made_of))
    os.utime(good, (1, 1))
    (runs / "run-8-8.json").symlink_to("/dev/zero")
    os.mkfifo(runs / "run-9-9.json")
    found = reuse.lookup(runs, "ctx", {"rnns/py/forward": "s2"}, reuse.Digests())
    assert found["rnns/py/forward"][0]["instructions"] == 7


def _counted_by(monkeypatch, made_of: dict):
    """count() with the counted process replaced: rnns/py/forward counted, its child made of
    ``made_of`` (worker.inputs)."""
    monkeypatch.setattr(count.process, "prepare", lambda stage, built, log=None: None)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/true")
    monkeypatch.setattr(count.client, "helper", lambda: None)

    def staged(stage, groups, specs, tables, processes, timeout, log, inputs, malloc):
        names = [name for group in groups for name in group]
        for kind, paths in (made_of or {"unknown": names}).items():
            inputs.setdefault(kind, set()).update(paths)
        return {n: count.Counted(n, 7, [7, 7, 7], {"f": 7}) for n in names}, {}

    monkeypatch.setattr(count, "_count_staged", staged)


def test_a_count_whose_inputs_are_unknown_is_not_kept(tmp_path, monkeypatch):
    _counted_by(monkeypatch, {})
    counted, _ = count.count(["rnns/py/forward"], sizes.INSTRUCTIONS, reuse_in=tmp_path)
    assert counted["rnns/py/forward"].instructions == 7 and not list(tmp_path.iterdir())
    _counted_by(monkeypatch, {"files": [count.__file__], "folders": []})
    count.count(["rnns/py/forward"], sizes.INSTRUCTIONS, reuse_in=tmp_path)
    assert len(list(tmp_path.glob(reuse.PATTERN))) == 1


def test_a_cache_that_cannot_be_written_costs_the_reuse_not_the_counts(tmp_path, monkeypatch):
    _counted_by(monkeypatch, {"files": [count.__file__], "folders": []})

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(reuse, "store", full)
    logged = []
    counted, failed = count.count(["rnns/py/forward", "rnns/cudnn/forward"], sizes.INSTRUCTIONS,
                                  reuse_in=tmp_path, log=logged.append)
    assert list(counted) == ["rnns/py/forward", "rnns/cudnn/forward"] and failed == {}
    assert logged == ["counts not kept for reuse: [Errno 28] No space left on device"]


def test_a_source_edited_while_it_is_counted_is_kept_as_it_was_counted(tmp_path,
                                                                        monkeypatch):
    """The stage counts a copy of the sources. A source edited during the count is stored
    under the digest of the copy, so the edit is counted when next asked for (stored under
    the edited file's digest, the old figures were taken for the edit), and the version
    that was counted is reused."""
    package = tmp_path / "src" / "torchpulse"
    for relative in normalised.COUNTED_SOURCES:  # what a stage copies
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text("")
    module = package / "workloads" / "regions.py"
    module.write_text("counted = 1\n")
    monkeypatch.setattr(normalised, "PACKAGE", package)
    monkeypatch.setattr(count.process, "prepare", lambda stage, built, log=None: None)
    monkeypatch.setattr(count.process, "valgrind", lambda: "/usr/bin/true")
    monkeypatch.setattr(count.client, "helper", lambda: None)
    started = []

    def staged(stage, groups, specs, tables, processes, timeout, log, inputs, malloc):
        copy = next(stage.root / seen for seen, original in stage.origins.items()
                    if original == package)
        assert (copy / "workloads" / "regions.py").read_text() == module.read_text()
        inputs.setdefault("files", set()).add(str(copy / "workloads" / "regions.py"))
        inputs.setdefault("folders", set()).add(str(copy))
        if not started:
            module.write_text("counted = 2  # edited while the count runs\n")
        started.append(groups)
        names = [name for group in groups for name in group]
        return {n: count.Counted(n, 7, [7, 7, 7], {"f": 7}) for n in names}, {}

    monkeypatch.setattr(count, "_count_staged", staged)
    runs = tmp_path / "runs"

    def counted_again() -> bool:
        done, _ = count.count(["rnns/py/forward"], sizes.INSTRUCTIONS, reuse_in=runs)
        return not done["rnns/py/forward"].reused

    assert counted_again()
    assert counted_again() and len(started) == 2  # the edit: not what was counted first
    module.write_text("counted = 1\n")
    assert not counted_again()  # what the first count counted
    module.write_text("counted = 2  # edited while the count runs\n")
    assert not counted_again()  # the edit, counted by the second


def test_another_interpreter_is_asked_what_its_counted_process_is_made_of(tmp_path):
    """compare --python stages another environment: its base interpreter and import roots
    come from running probe.py in it, never from this process."""
    python, roots = normalised.target(sys.executable)
    assert (python, roots) == (os.path.realpath(sys.executable), normalised.import_roots())
    bare = tmp_path / "bare"
    import subprocess
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    with pytest.raises(normalised.InterpreterError, match="cannot import torch"):
        normalised.target(str(bare / "bin" / "python"))
    with pytest.raises(normalised.InterpreterError, match="cannot run"):
        normalised.target(str(tmp_path / "no-such-python"))


def test_a_count_stays_reusable_when_a_family_is_added_or_another_familys_sizes_change():
    """A workload's settings digest its own sizes only: adding the transformer family, or
    resizing the autograd models, leaves an LSTM's count reusable; its own sizes do not."""
    def digest(name, tables):
        return reuse.settings({"name": name, "windows": 4, "window": 10, "tables": tables,
                               "helper": None})

    tables = sizes.counting()
    before = digest("rnns/py/forward", dict(sizes.INSTRUCTIONS))
    assert digest("rnns/py/forward", tables) == before
    assert digest("rnns/py/forward", {**tables, "autograd": {}}) == before
    resized = {**tables, "fastrnns": {**tables["fastrnns"], "seq_length": 15}}
    assert digest("rnns/py/forward", resized) != before
    encoder = "transformers/encoder/forward"
    longer = {**tables, "transformers": {"encoder": {**tables["transformers"]["encoder"],
                                                     "seq": 9}}}
    assert digest(encoder, longer) != digest(encoder, tables)
    assert digest("autograd/ppl_simple_reg/vjp", longer) == \
        digest("autograd/ppl_simple_reg/vjp", tables)
