"""Function profiles per commit: stored all or nothing beside asv's results, read back (or
not at all when damaged), and the functions that grew between two."""

import gzip

import pytest

from torchpulse.instructions import profiles

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_a_profile_is_read_back_as_written(tmp_path):
    target = profiles.path(tmp_path, SHA, "virtualenv-py3.11-torch2.13.0")
    workloads = {"rnns/py/forward": {"f": 10, "g": 3}, "autograd/ppl_simple_reg/vjp": {}}
    profiles.write(target, SHA, "virtualenv-py3.11-torch2.13.0", workloads,
                   {"rnns/py/forward": 100, "autograd/ppl_simple_reg/vjp": 50})
    assert target.name == f"{SHA}-virtualenv-py3.11-torch2.13.0.json.gz"
    assert gzip.decompress(target.read_bytes()).startswith(b"{")
    assert profiles.read(tmp_path, SHA, "virtualenv-py3.11-torch2.13.0") == workloads
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary left
    assert profiles.read(tmp_path, "f" * 40, "virtualenv-py3.11-torch2.13.0") is None


@pytest.mark.parametrize("commit, env", [
    ("abc", "e"),  # not a full sha
    (SHA.upper(), "e"),
    (SHA, "../../etc"),  # a path out of the folder
    (SHA, "a/b"),
    (SHA, ""),
    (SHA, ".hidden"),
])
def test_names_that_are_not_a_sha_and_a_plain_environment_have_no_file(tmp_path, commit, env):
    assert profiles.path(tmp_path, commit, env) is None
    assert profiles.read(tmp_path, commit, env) is None


@pytest.mark.parametrize("content", [
    b"", b"not gzip", gzip.compress(b"[1, 2]", mtime=0),
    gzip.compress(b'{"workloads": 3}', mtime=0),
    gzip.compress(b'{"workloads": {"w": {"functions": {"f": "x"}}}}', mtime=0),
    gzip.compress(b"{" * 100_000, mtime=0),
], ids=["empty", "not-gzip", "a-list", "not-a-mapping", "a-string-count", "too-deep"])
def test_a_damaged_profile_reads_as_none(tmp_path, content):
    (tmp_path / f"{SHA}-e.json.gz").write_bytes(content)
    assert profiles.read(tmp_path, SHA, "e") is None


def test_an_infinite_count_reads_as_none(tmp_path):
    (tmp_path / f"{SHA}-e.json.gz").write_bytes(gzip.compress(
        b'{"workloads": {"w": {"functions": {"f": Infinity}}}}', mtime=0))
    assert profiles.read(tmp_path, SHA, "e") is None


def test_what_is_no_profile_is_not_read_at_all(tmp_path):
    """A link (to /dev/zero), a FIFO (which would block forever) and a gzip bomb read as
    no profile, at once and without inflating it."""
    import os

    target = tmp_path / f"{SHA}-link.json.gz"
    target.symlink_to("/dev/zero")
    assert profiles.read(tmp_path, SHA, "link") is None
    os.mkfifo(tmp_path / f"{SHA}-fifo.json.gz")
    assert profiles.read(tmp_path, SHA, "fifo") is None  # returns: nothing writes the FIFO
    bomb = gzip.compress(b"{" + b" " * (profiles.MAX_INFLATED + 10) + b"}", mtime=0)
    assert len(bomb) < profiles.MAX_STORED
    (tmp_path / f"{SHA}-bomb.json.gz").write_bytes(bomb)
    assert profiles.read(tmp_path, SHA, "bomb") is None


def test_control_characters_in_a_symbol_are_shown_as_escapes(tmp_path):
    profiles.write(profiles.path(tmp_path, SHA, "e"), SHA, "e",
                   {"w": {"f\nfake line\x1b[31m": 5}}, {"w": 5})
    assert profiles.read(tmp_path, SHA, "e") == {"w": {"f\\nfake line\\x1b[31m": 5}}


def test_the_functions_that_grew_most_come_first_and_the_rest_are_left_out():
    before = {"same": 100, "grew": 10, "shrank": 50, "gone": 7}
    after = {"same": 100, "grew": 40, "shrank": 20, "new": 25, "new2": 25}
    found = profiles.differences(before, after, shown=3)
    assert [(f.name, f.before, f.after, f.change) for f in found] == [
        ("grew", 10, 40, 30), ("new", 0, 25, 25), ("new2", 0, 25, 25)]
    assert profiles.differences(after, after) == ()


def test_asvs_benchmark_process_stores_the_commit_it_installed(tmp_path, monkeypatch):
    for name in ("ASV_COMMIT", "ASV_ENV_NAME", "ASV_CONF_DIR", profiles.FOLDER_ENV):
        monkeypatch.delenv(name, raising=False)
    workloads, totals = {"w": {"f": 1}}, {"w": 1}
    assert profiles.write_from_asv(workloads, totals) is None  # not in an asv run
    monkeypatch.setenv("ASV_COMMIT", SHA)
    monkeypatch.setenv("ASV_ENV_NAME", "env-1")
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    stored = profiles.write_from_asv(workloads, totals)
    assert stored == tmp_path / ".asv" / "profiles" / f"{SHA}-env-1.json.gz"
    assert profiles.read(profiles.folder(tmp_path), SHA, "env-1") == workloads
    monkeypatch.setenv(profiles.FOLDER_ENV, str(tmp_path / "elsewhere"))
    assert profiles.write_from_asv(workloads, totals).parent == tmp_path / "elsewhere"
    monkeypatch.setenv("ASV_ENV_NAME", "../up")
    assert profiles.write_from_asv(workloads, totals) is None


def test_a_link_planted_on_the_way_to_the_projects_folder_is_not_written_through(
        tmp_path, monkeypatch):
    """The default folder `.asv/profiles` linked out of the project: nothing is stored
    there (the folder the user names with $TORCHPULSE_PROFILES is theirs to choose)."""
    monkeypatch.delenv(profiles.FOLDER_ENV, raising=False)
    monkeypatch.setenv("ASV_COMMIT", SHA)
    monkeypatch.setenv("ASV_ENV_NAME", "env-1")
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path / "proj"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "proj" / ".asv").mkdir(parents=True)
    (tmp_path / "proj" / ".asv" / "profiles").symlink_to(elsewhere, target_is_directory=True)
    assert profiles.write_from_asv({"w": {"f": 1}}, {"w": 1}) is None
    assert list(elsewhere.iterdir()) == []


BATCH_NORM = ("at::native::batch_norm_cpu_collect_stats_channels_last_impl<float>"
              "(at::Tensor const&) [libtorch_cpu.so]")
# the same kernel moved into a lambda of itself in an anonymous namespace (torch 2.14)
BATCH_NORM_LAMBDA = ("at::native::(anonymous namespace)::"
                     "batch_norm_cpu_collect_stats_channels_last_impl<float>(at::Tensor const&)"
                     "::{lambda(long, long)#1}::operator()(long, long) const [libtorch_cpu.so]")


def test_an_improvement_lists_what_shrank_and_a_moved_symbol_is_netted_with_its_old_name():
    before = {BATCH_NORM: 126_528, "empty_generic [libc10.so]": 900, "gone [libx.so]": 300}
    after = {BATCH_NORM_LAMBDA: 125_788, "empty_generic [libc10.so]": 1_400}
    # a regression: what grew (the renamed kernel is not "new": its net change is -740)
    grew = profiles.differences(before, after)
    assert [(f.name, f.change, f.renamed_from) for f in grew] == [
        ("empty_generic [libc10.so]", 500, None)]
    # an improvement: what shrank, largest first, the moved kernel as one change
    shrank = profiles.differences(before, after, direction=-1)
    assert [(f.name, f.before, f.after, f.renamed_from) for f in shrank] == [
        (BATCH_NORM_LAMBDA, 126_528, 125_788, BATCH_NORM), ("gone [libx.so]", 300, 0, None)]


@pytest.mark.parametrize("a,b,same", [
    (BATCH_NORM, BATCH_NORM_LAMBDA, True),
    ("f<int>(int) [l.so]", "f<float>(float) [l.so]", True),
    ("f(int) [l.so]", "f(int) [m.so]", False),  # another library
    ("f(int) [l.so]", "g(int) [l.so]", False),
    ("0x00000000004fee40 [python3.11]", "0x00000000005d9750 [python3.11]", False),
    ("f [l.so]", "f [l.so]", False),  # the same name is no rename
])
def test_a_rename_is_the_same_path_of_names_in_the_same_library(a, b, same):
    assert profiles.same_code(a, b) is same


def test_a_recorded_builds_profiles_are_stored_at_the_commit_record_files(tmp_path,
                                                                           monkeypatch):
    """asv sets no ASV_COMMIT in the existing environment record runs in, whose name holds
    its interpreter's path with "_" for "/": record passes the commit itself."""
    monkeypatch.delenv("ASV_COMMIT", raising=False)
    monkeypatch.delenv(profiles.FOLDER_ENV, raising=False)
    monkeypatch.setenv("ASV_ENV_NAME", "existing-py_home_me_proj_.asv_record_python")
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    assert profiles.write_from_asv({"w": {"f": 1}}, {"w": 1}) is None  # no commit: nothing
    monkeypatch.setenv(profiles.RECORD_COMMIT_ENV, SHA)
    stored = profiles.write_from_asv({"w": {"f": 1}}, {"w": 1})
    assert stored is not None and profiles.read(
        profiles.folder(tmp_path), SHA, "existing-py_home_me_proj_.asv_record_python") == \
        {"w": {"f": 1}}
