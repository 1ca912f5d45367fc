"""`torchpulse record`: two builds of a package installed in turn (pip from git, as a nightly
or a local build would be) are measured as installed and filed at the commits they came
from; a commit asv could not show is refused with one line and nothing written."""

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from asvproject import _git, package_repo

from torchpulse.analysis.series import load_series
from torchpulse.results import builds, record, records
from torchpulse.results.project import Project

WORK = {  # the package at each commit: the second does 4x the work and says it is build 2
    "A": "BUILD = 1\n\n\ndef work():\n    return sum(i * i for i in range(20000))\n",
    "B": "BUILD = 2\n\n\ndef work():\n    return sum(i * i for i in range(80000))\n",
}


def _package_repo(root: Path) -> dict[str, str]:
    """A git repository of a small package: commits A and B on main, S on a side branch."""
    shas = dict(zip("AB", package_repo(root, "fixturepkg", [WORK["A"], WORK["B"]]),
                    strict=True))
    _git(root, "checkout", "-q", "-b", "side")
    (root / "fixturepkg" / "__init__.py").write_text(WORK["A"] + "# side\n")
    _git(root, "commit", "-q", "-am", "side")
    shas["S"] = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "main")
    return shas


def _project(root: Path, repo: Path) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_work.py").write_text(textwrap.dedent("""\
        import fixturepkg


        class Work:
            repeat = (5, 10, 1.0)

            def time_work(self):
                fixturepkg.work()

            def track_build(self):
                return fixturepkg.BUILD


        def _profile(self):
            # what the counting suite does in its setup_cache (suite.count_instructions):
            # file the function profiles of the commit and environment being recorded
            from torchpulse.instructions import profiles

            stored = profiles.write_from_asv({"w": {"work": fixturepkg.BUILD}},
                                             {"w": fixturepkg.BUILD})
            return str(stored)


        class Profiled:
            setup_cache = _profile

            def track_profiled(self, stored):
                return 1 if stored != "None" else 0
        """))
    conf = root / "asv.conf.json"
    conf.write_text(json.dumps({
        "version": 1, "project": "fixturepkg", "project_url": "https://example.invalid/",
        "repo": str(repo), "branches": ["main"], "dvcs": "git",
        "environment_type": "virtualenv", "benchmark_dir": "benchmarks",
        "results_dir": "results", "html_dir": "html"}))
    return conf


def _install(repo: Path, sha: str, target: Path) -> None:
    """pip install from git at ``sha``, as one installs a build of a commit (pip records the
    commit in direct_url.json)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target),
                    f"git+file://{repo}@{sha}"], check=True, capture_output=True, timeout=600)


def _record(conf: Path, home: Path, site: Path | None, *args: str,
            python: str = sys.executable, relative: bool = False):
    """``record`` run as a user would; ``relative``: from the project's folder, with
    ``--config asv.conf.json``."""
    env = {**os.environ, "HOME": str(home)}
    env.pop("PYTHONPATH", None)
    for name in ("TORCHPULSE_PROFILES", "ASV_CONF_DIR", "ASV_ENV_NAME", "ASV_COMMIT"):
        env.pop(name, None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    where = conf.name if relative else str(conf)
    return subprocess.run([python, "-m", "torchpulse.cli", "record", "--package",
                           "fixturepkg", "--config", where, "--machine", "e2e", *args],
                          env=env, capture_output=True, text=True, timeout=900,
                          cwd=conf.parent if relative else None)


def _stored(results: Path) -> dict[str, tuple[float, float]]:
    """commit -> the stored (track_build, time_work) values."""
    found = {}
    for path in results.glob("e2e/*.json"):
        if path.name == "machine.json":
            continue
        r = json.loads(path.read_text())
        found[r["commit_hash"]] = tuple(r["results"][f"bench_work.Work.{name}"][0][0]
                                        for name in ("track_build", "time_work"))
    return found


def _tree(results: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(results.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_two_installed_builds_are_filed_at_their_commits_and_published(tmp_path):
    repo = tmp_path / "fixturepkg"
    shas = _package_repo(repo)
    conf = _project(tmp_path / "proj", repo)
    results = tmp_path / "proj" / "results"
    # B from a virtualenv of its own, at another path (this suite's packages through a .pth)
    other = tmp_path / "venv-b"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True)
    import torchpulse
    (next(other.glob("lib/python3*/site-packages")) / "suite.pth").write_text(
        f"{Path(torchpulse.__file__).resolve().parents[1]}\n"
        f"{sysconfig.get_paths()['purelib']}\n")
    for name, python in (("A", sys.executable), ("B", str(other / "bin" / "python"))):
        site = tmp_path / f"site-{name}"
        _install(repo, shas[name], site)
        proc = _record(conf, tmp_path, site, python=python, relative=name == "B")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert f"as commit {shas[name][:12]} of main" in proc.stderr
    stored = _stored(results)
    assert set(stored) == {shas["A"], shas["B"]}
    # each commit's results come from the build of that commit, as installed
    assert stored[shas["A"]][0] == 1 and stored[shas["B"]][0] == 2
    assert all(time > 0 for _, time in stored.values())
    # both builds are commits of one series: one environment, whatever their interpreters
    envs = {json.loads(p.read_text())["env_name"] for p in results.glob("e2e/*.json")
            if p.name != "machine.json"}
    assert envs == {record.environment_name(Project.load(conf))}
    series, _ = load_series(results, Project.load(conf).history())
    (work,) = [s for s in series if s.key.benchmark == "bench_work.Work.track_build"]
    assert [p.value for p in work.points] == [1, 2]
    # the torch each build ran with, for the alert to name, and the function profiles,
    # filed under the environment's name (a relative --config gave the build another name,
    # and asv gives an existing environment's benchmarks no ASV_CONF_DIR: none were stored)
    import torch

    from torchpulse.instructions import profiles
    env = record.environment_name(Project.load(conf))
    for name in ("A", "B"):
        build = builds.read(tmp_path / "proj", shas[name], env)
        assert build is not None and build.version == torch.__version__
        stored = profiles.read(profiles.folder(tmp_path / "proj"), shas[name], env)
        assert stored == {"w": {"work": stored["w"]["work"]}}
        assert stored["w"]["work"] == (1 if name == "A" else 2)

    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "publish", "--config",
                           str(conf)], env={**os.environ, "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    index = json.loads((tmp_path / "proj" / "html" / "index.json").read_text())
    assert {shas["A"], shas["B"]} <= set(index["revision_to_hash"].values())

    # each build recorded again: asv keeps the newest record only; record keeps both
    # records' levels, and compare --stored judges the timed series from two a side
    for name, python in (("A", sys.executable), ("B", str(other / "bin" / "python"))):
        proc = _record(conf, tmp_path, tmp_path / f"site-{name}", python=python)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert f"2 records of commit {shas[name][:12]} kept" in proc.stderr
        kept = records.read(tmp_path / "proj", "e2e", shas[name], env)
        assert len(kept) == 2 and all(r["bench_work.Work.time_work"] > 0 for r in kept)
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "compare", shas["A"],
                           shas["B"], "--stored", "--config", str(conf), "--format", "json"],
                          env={**os.environ, "HOME": str(tmp_path)}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    (work,) = [b for b in json.loads(proc.stdout)["benchmarks"]
               if b["benchmark"] == "bench_work.Work.time_work"]
    # B does 4x A's work; how sure two records a side make it depends on this machine's
    # noise between records, so the test holds only what cannot depend on it
    assert work["runs"] == 2 and work["why"] is None
    assert work["decision"] in ("slower", "undecided") and work["ratio"] > 1

    # refused with one line, nothing written: a commit off the branch, an unknown one, and
    # a build that does not say where it comes from (installed from a directory)
    before = _tree(results)
    off_branch = _record(conf, tmp_path, tmp_path / "site-A", "--commit", shas["S"])
    unknown = _record(conf, tmp_path, tmp_path / "site-A", "--commit", "0123456789ab")
    plain = tmp_path / "site-plain"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(plain), str(repo)],
                   check=True, capture_output=True, timeout=600)
    no_commit = _record(conf, tmp_path, plain)
    for proc, says in ((off_branch, "not on the first-parent history of main"),
                       (unknown, "is not in"), (no_commit, "pass --commit")):
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert _tree(results) == before


def test_torch_says_its_commit_as_torch_itself_does():
    """Read from torch/version.py without importing torch (the CLI stays fast)."""
    import torch

    build = record.installed_build("torch")
    assert build.source == "torch.version.git_version"
    assert (build.commit, build.version) == (torch.version.git_version, torch.__version__)


def test_commits_asv_cannot_show_are_refused(tmp_path):
    from asvproject import make_project

    proj = make_project(tmp_path / "p")
    project = Project.load(proj.conf)
    assert record.resolve(project, proj.main[1][:10]) == (proj.main[1], "main")
    with pytest.raises(record.RecordError, match="not on the first-parent history"):
        record.resolve(project, proj.side)
    with pytest.raises(record.RecordError, match="fetch it"):
        record.resolve(project, "feedfacefeedface")
    with pytest.raises(record.RecordError, match="not installed"):
        record.installed_build("no-such-package-here")


def test_the_benchmarks_see_what_record_sees(monkeypatch):
    """asv drops PYTHONPATH for the benchmarks unless it comes as ASV_PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", "/opt/nightly/site")
    monkeypatch.delenv("ASV_PYTHONPATH", raising=False)
    assert record.asv_environment()["ASV_PYTHONPATH"] == "/opt/nightly/site"
    # the commit, for the counts' function profiles (asv sets no ASV_COMMIT there)
    from torchpulse.instructions.profiles import RECORD_COMMIT_ENV
    assert record.asv_environment("a" * 40)[RECORD_COMMIT_ENV] == "a" * 40
    commands = record.asv_commands(Project.load(Path(__file__).parents[2] / "asv.conf.json"),
                                   "a" * 40, "^x", "m", python="/py")
    assert commands[0][:4] == ["/py", "-m", "asv", "machine"]
    run = commands[1]
    assert run[run.index("--environment") + 1] == "existing:/py"
    assert run[run.index("--set-commit-hash") + 1] == "a" * 40
