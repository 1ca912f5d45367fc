"""The results index: the same series as reading the files, kept up to date as files change,
appear and go, rebuilt when damaged, skipped where it cannot be written, and never half
updated."""

import json
import sqlite3

import pytest

from torchpulse.analysis.series import load_series
from torchpulse.cli import main
from torchpulse.evaluation import project as evaluation_project
from torchpulse.evaluation import synthetic
from torchpulse.results import asv_results
from torchpulse.results import index as results_index
from torchpulse.results.gitrepo import History


@pytest.fixture
def project(tmp_path):
    truths = synthetic.build(tmp_path, commits=12, per_cell=1, noise_series=1, seed=8,
                             kinds=("step", "noise"), sizes=(0.2,), distances=(3,))
    return tmp_path, truths


def _indexed(path):
    """The project's index built, its files old enough not to be racy (so they are read
    from it next time), and what reading the files directly gives."""
    import os
    import time

    for file in (path / "results").rglob("*.json"):
        os.utime(file, (time.time() - 60, time.time() - 60))
    where = results_index.location(path, path / "results")
    direct = _load(path, None)
    assert _load(path, where) == direct
    return where, direct


def _load(path, index):
    history = History(synthetic.history(path))
    series, off = load_series(path / "results", history, index=index)
    return [(s.key, s.unit, s.params, s.points) for s in series], off


def test_the_index_gives_the_series_the_files_give(project):
    path, _ = project
    where = results_index.location(path, path / "results")
    direct = _load(path, None)
    assert _load(path, where) == direct  # built
    assert where.is_file()
    assert _load(path, where) == direct  # read back


def test_changed_added_and_removed_files_are_read_again(project):
    path, truths = project
    where = results_index.location(path, path / "results")
    _load(path, where)
    shas = synthetic.history(path)
    # a commit measured again (a new file content), one removed, one on another branch
    synthetic.remeasure(path, truths, [shas[-1]], {truths[0].benchmark}, seed=3)
    gone = path / "results" / asv_results.filename(synthetic.MACHINE, shas[2], synthetic.ENV)
    gone.unlink()
    assert _load(path, where) == _load(path, None)
    series, _ = _load(path, where)
    assert all(shas[2] not in [p.commit for p in points] for *_, points in series)


def test_a_file_rewritten_in_the_same_clock_tick_is_read_again(project, monkeypatch):
    """File times are coarse: a rewrite that keeps size and time must not be missed."""
    import os

    path, truths = project
    where = results_index.location(path, path / "results")
    _load(path, where)
    shas = synthetic.history(path)
    file = path / "results" / asv_results.filename(synthetic.MACHINE, shas[-1], synthetic.ENV)
    before = file.stat()
    text = file.read_text()
    data = json.loads(text)
    name = truths[0].benchmark
    old = data["results"][name][data["result_columns"].index("result")][0]
    digits = repr(old)
    at = next(i for i in range(5, len(digits)) if digits[i].isdigit())
    changed = digits[:at] + ("7" if digits[at] != "7" else "3") + digits[at + 1:]
    new = float(changed)
    file.write_text(text.replace(digits, changed))  # in place: same inode and size
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same time
    assert (file.stat().st_size, file.stat().st_ino) == (before.st_size, before.st_ino)
    series, _ = _load(path, where)
    assert [points[-1].value for key, _, _, points in series if key.benchmark == name
            and key.params == (truths[0].param,)] == [new]


def test_a_damaged_index_is_rebuilt_and_an_unwritable_one_skipped(project, tmp_path_factory):
    path, _ = project
    where = results_index.location(path, path / "results")
    direct = _load(path, None)
    where.parent.mkdir(parents=True)
    where.write_bytes(b"not a database" * 100)
    assert _load(path, where) == direct
    assert sqlite3.connect(where).execute("SELECT count(*) FROM files").fetchone()[0] == 12
    blocked = tmp_path_factory.mktemp("ro") / "a-file"
    blocked.write_text("")
    assert _load(path, blocked / "index.sqlite") == direct  # its folder cannot be made


def test_a_file_that_cannot_be_read_leaves_the_index_as_it_was(project):
    path, _ = project
    where = results_index.location(path, path / "results")
    _load(path, where)
    before = sqlite3.connect(where).execute(
        "SELECT path, size, mtime_ns, packed FROM files ORDER BY path").fetchall()
    series = sqlite3.connect(where).execute("SELECT * FROM series").fetchall()
    shas = synthetic.history(path)
    # one new good file and one damaged one: the update is all or nothing
    good = path / "results" / asv_results.filename(synthetic.MACHINE, shas[3], synthetic.ENV)
    good.write_text(good.read_text().replace('"version": 2', '"version": 2 '))
    bad = path / "results" / asv_results.filename(synthetic.MACHINE, shas[4], synthetic.ENV)
    bad.write_text("{not json")
    with pytest.raises(asv_results.ResultsFileError):
        _load(path, where)
    con = sqlite3.connect(where)
    assert con.execute("SELECT path, size, mtime_ns, packed FROM files ORDER BY path"
                       ).fetchall() == before
    assert con.execute("SELECT * FROM series").fetchall() == series


def test_alert_reads_through_the_index_and_says_the_same(project, capsys):
    path, _ = project
    config = str(path / "asv.conf.json")
    assert main(["alert", "--config", config, "--format", "json"]) == 1
    first = capsys.readouterr().out
    assert results_index.location(path, path / "results").is_file()
    assert main(["alert", "--config", config, "--format", "json"]) == 1
    assert capsys.readouterr().out == first


def test_any_parameter_text_round_trips(tmp_path):
    """asv's repr strings can hold anything a user's parameters do: separators included."""
    shas = evaluation_project.git_repo(tmp_path, 2)
    results = tmp_path / "results"
    from torchpulse.files import write_json_atomically

    write_json_atomically(results / "m" / "machine.json", {"machine": "m", "version": 1})
    params = [["'a\x1fb'", "'c, d'", "'[e]'", '"\\"f\\""']]
    write_json_atomically(results / "benchmarks.json", {
        "b.track_x": {"name": "b.track_x", "params": params, "param_names": ["p"],
                      "type": "track", "unit": "unit", "version": "1"}, "version": 2})
    for i, sha in enumerate(shas):
        r = asv_results.new({"machine": "m"}, sha, 1_700_000_000_000 + i, "3.11", "e")
        asv_results.add(r, "b.track_x", "1", params, [1.0, 2.0, 3.0, 4.0])
        asv_results.save(r, results, asv_results.filename("m", sha, "e"))
    where = results_index.location(tmp_path, results)
    direct = _load(tmp_path, None)
    assert {key.params for key, *_ in direct[0]} == {(p,) for p in params[0]}
    assert _load(tmp_path, where) == direct
    assert _load(tmp_path, where) == direct


@pytest.mark.parametrize("forge", [
    "UPDATE files SET nrows = 1000000000000 WHERE rowid = 1",  # counts it does not hold
    "UPDATE files SET nsamples = -1 WHERE rowid = 1",
    "UPDATE files SET packed = substr(packed, 1, 40) WHERE rowid = 1",
    "UPDATE series SET id = id + 1000",  # rows naming series that are not there
    "UPDATE files SET params = '{not json' WHERE rowid = 1",
    "UPDATE series SET combo = '[[1]]' WHERE id = 0",
    "UPDATE series SET combo = '" + "[" * 100_000 + "]" * 100_000 + "' WHERE id = 0",
    "UPDATE files SET params = '" + "[" * 100_000 + "]" * 100_000 + "' WHERE rowid = 1",
    "UPDATE files SET params = '[1]' WHERE rowid = 1",
    "UPDATE files SET path = NULL WHERE rowid = 1",
    "a row naming a series number past the last",
    # rows that keep their shape: only their seals tell
    "UPDATE files SET commit_hash = (SELECT commit_hash FROM files WHERE rowid = 2) "
    "WHERE rowid = 1",
    "UPDATE series SET id = -1 WHERE id = 0; UPDATE series SET id = 0 WHERE id = 1; "
    "UPDATE series SET id = 1 WHERE id = -1",
    "a bit flipped in a value",
    "UPDATE files SET env = 'other' WHERE rowid = 1",
    "UPDATE series SET benchmark = (SELECT benchmark FROM series WHERE id = 1) WHERE id = 0",
    "UPDATE files SET seal = (SELECT seal FROM files WHERE rowid = 2) WHERE rowid = 1",
    "UPDATE files SET mtime_ns = mtime_ns + 1 WHERE rowid = 1",
])
def test_an_index_whose_rows_do_not_hold_together_is_built_again(project, forge):
    """The index is derived data in the project's folder: what it holds is checked before
    anything is allocated from it or indexed with it, each row matches its seal, and a
    damaged or forged one is rebuilt (a forged commit, two series swapped, a flipped bit
    kept their shape and gave wrong verdicts on every run)."""

    path, _ = project
    where, direct = _indexed(path)
    con = sqlite3.connect(where)
    if forge.startswith("UPDATE"):
        con.executescript(forge)
    elif forge == "a bit flipped in a value":  # the first row's value, after its two ints
        blob = bytearray(con.execute("SELECT packed, nrows FROM files WHERE rowid = 1"
                                     ).fetchone()[0])
        n = int.from_bytes(blob[:8], "little")
        blob[16 + 16 * n + 3] ^= 0x10
        con.execute("UPDATE files SET packed = ? WHERE rowid = 1", (bytes(blob),))
    else:  # the first row's series number (after the 16-byte header), as large as it goes
        blob = con.execute("SELECT packed FROM files WHERE rowid = 1").fetchone()[0]
        con.execute("UPDATE files SET packed = ? WHERE rowid = 1",
                    (blob[:16] + (2**31 - 1).to_bytes(8, "little") + blob[24:],))
    con.commit()
    con.close()
    assert _load(path, where) == direct
    con = sqlite3.connect(where)
    assert con.execute("SELECT count(*) FROM files WHERE nrows < 1000000").fetchone()[0] == 12
    assert con.execute("SELECT min(id) FROM series").fetchone()[0] == 0


@pytest.mark.parametrize("plant", ["database link", "journal link", "journal fifo",
                                   "folder link"])
def test_links_and_fifos_where_sqlite_opens_files_are_never_followed(project, tmp_path, plant,
                                                                     capsys):
    """A symbolic link at the index's path (into another program's SQLite file, a file
    outside the project) was written through; a FIFO at its -journal path hung every alert.
    The index is then left unused: the series come from the files, nothing outside changes."""
    import os

    path, _ = project
    where = results_index.location(path, path / "results")
    direct = _load(path, None)
    outside = tmp_path / "outside"
    outside.mkdir()
    theirs = outside / "theirs.sqlite"
    con = sqlite3.connect(theirs)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = theirs.read_bytes()
    where.parent.mkdir(parents=True, exist_ok=True)
    if plant == "database link":
        where.symlink_to(theirs)
    elif plant == "journal link":
        where.with_name(where.name + "-journal").symlink_to(outside / "journal")
    elif plant == "journal fifo":
        os.mkfifo(where.with_name(where.name + "-journal"))
    else:
        where.parent.rmdir()
        where.parent.symlink_to(outside, target_is_directory=True)
    assert _load(path, where) == direct
    assert main(["alert", "--config", str(path / "asv.conf.json")]) in (0, 1)
    capsys.readouterr()
    assert theirs.read_bytes() == before
    assert sorted(p.name for p in outside.iterdir()) == ["theirs.sqlite"]


def test_a_results_file_edited_in_place_with_its_time_restored_is_read_again(project):
    """Same size, same inode, modification time set back: only the change time, which no
    one can set back, shows the edit."""
    import os
    import time

    path, truths = project
    where = results_index.location(path, path / "results")
    file = sorted((path / "results" / synthetic.MACHINE).glob("*-*.json"))[-1]
    past = time.time_ns() - 60 * 10**9
    os.utime(file, ns=(past, past))
    _load(path, where)
    text = file.read_text()
    data = json.loads(text)
    name = next(iter(data["results"]))
    value = data["results"][name][0][0]
    forged = text.replace(json.dumps(value), json.dumps(value)[:-1] + (
        "1" if json.dumps(value)[-1] != "1" else "2"), 1)
    assert forged != text and len(forged) == len(text)
    before = os.stat(file)
    with open(file, "r+") as f:  # in place: the same inode
        f.write(forged)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(file).st_ino == before.st_ino
    assert os.stat(file).st_mtime_ns == before.st_mtime_ns
    assert _load(path, where) == _load(path, None)


@pytest.mark.parametrize("plant", ["link", "fifo", "short"])
def test_a_key_that_is_not_a_plain_file_of_its_own_leaves_the_index_unused(project, tmp_path,
                                                                           plant):
    import os

    path, _ = project
    where = results_index.location(path, path / "results")
    direct = _load(path, None)
    assert _load(path, where) == direct
    key = where.parent / "key"
    secret = tmp_path / "secret"
    secret.write_bytes(b"x" * 32)
    key.unlink()
    if plant == "link":
        key.symlink_to(secret)
    elif plant == "fifo":
        os.mkfifo(key)
    else:
        key.write_bytes(b"short")
    assert _load(path, where) == direct
    assert secret.read_bytes() == b"x" * 32
    if plant == "short":  # torchpulse's own, damaged: replaced, and the index rebuilt
        assert len(key.read_bytes()) == 32 and key.stat().st_mode & 0o777 == 0o600
    else:
        assert key.is_symlink() or key.is_fifo()


@pytest.mark.parametrize("mode", [0o644, 0o620])
def test_a_planted_key_others_could_know_is_replaced_and_rows_sealed_with_it_rebuilt(
        project, mode):
    """Someone who can write the project's folder but is not its user planted 32 bytes they
    know as the key, and resealed a forged row with it (the adversarial run's "0 of 25
    regressions"): a key that others may read or write is not torchpulse's, so it is
    replaced, and the forged row does not match the new one."""

    from torchpulse.results import seal

    path, _ = project
    where, direct = _indexed(path)
    known = b"k" * 32
    key = where.parent / "key"
    key.write_bytes(known)
    key.chmod(mode)
    con = sqlite3.connect(where)
    generation = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
    row = list(con.execute("SELECT * FROM files WHERE rowid = 1").fetchone())
    row[6] = con.execute("SELECT commit_hash FROM files WHERE rowid = 2").fetchone()[0]
    row[-1] = seal.seal(seal.derived(known, generation), *row[:-1])
    con.execute("DELETE FROM files WHERE rowid = 1")
    con.execute(f"INSERT INTO files VALUES ({', '.join('?' * len(row))})", row)
    con.commit()
    con.close()
    assert _load(path, where) == direct
    assert key.read_bytes() != known and key.stat().st_mode & 0o777 == 0o600


def test_rows_of_two_builds_of_the_index_never_mix(project):
    """Two snapshots of the index, each sealed with the same key, built from nothing at
    different times: the series of one with the files of the other were read as one index
    (every regression on the wrong machine). Each build seals with its own generation."""
    import shutil

    path, _ = project
    where, direct = _indexed(path)
    first = where.with_name("first.sqlite")
    shutil.copy(where, first)
    where.unlink()
    assert _load(path, where) == direct  # built again: another generation
    con = sqlite3.connect(where)
    second = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
    con.execute("ATTACH DATABASE ? AS first", (str(first),))
    con.executescript("DELETE FROM series; INSERT INTO series SELECT * FROM first.series;")
    con.commit()
    con.close()
    assert _load(path, where) == direct
    con = sqlite3.connect(where)
    assert con.execute("SELECT value FROM meta WHERE key = 'generation'"
                       ).fetchone()[0] != second  # found out, and built again
