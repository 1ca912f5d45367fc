"""Fleet runs: the plan (commits, groups, what is stored), a node's machine name, the
command's errors, and Ray itself: an embedded instance and a cluster of two simulated nodes
(Ray's cluster utilities) measuring a fixture repository, one of them killed mid-run."""

import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from torchpulse.cli import main
from torchpulse.fleet import driver, plan
from torchpulse.fleet.node import MACHINE, SLOT, NodeError, final_round_commit, machine_name
from torchpulse.results import asv_results
from torchpulse.results.project import Project
from torchpulse.testing import fleet_cluster as simulated


def _fixture(root: Path, commits: int = 4, environments: Path | None = None
             ) -> tuple[Project, list[str]]:
    """The culprit fixture (pure Python, no torch) with a second benchmark group; with
    ``environments``, its .asv folder is that one, where the nodes' asv environments are
    kept (a node builds one in about 13 s of pip; the Ray tests share them)."""
    shas = simulated.fixture(root, commits)
    if environments is not None:
        environments.mkdir(exist_ok=True)
        (root / ".asv").symlink_to(environments)
    return Project.load(root / "asv.conf.json"), shas


@pytest.fixture(scope="module")
def environments(tmp_path_factory) -> Path:
    """The .asv folder the Ray tests' fixtures share: each node's environment is built once
    for the file (asv checks the commits of each new fixture out into it)."""
    return tmp_path_factory.mktemp("fleet-asv") / ".asv"


def _covered(results: Path) -> dict[tuple[str, str], set[str]]:
    """(commit, benchmark) -> the machines whose results files hold a value for it."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in results.glob("*/*.json"):
        if path.name == "machine.json":
            continue
        data = asv_results.load(path)
        for name in asv_results.benchmarks(data):
            if any(value is not None for _, value, _ in asv_results.rows(data, name)):
                found.setdefault((data.commit_hash, name), set()).add(path.parent.name)
    return found


# --------------------------------------------------------------------------- the plan


def test_groups_are_the_benchmark_modules_asv_finds(tmp_path):
    for name in ("bench_a.py", "_common.py", "notes.txt"):
        (tmp_path / name).write_text("")
    for package, init in (("bench_pkg", True), ("external", True), ("data", False)):
        (tmp_path / package).mkdir()
        if init:
            (tmp_path / package / "__init__.py").write_text("")
    assert plan.groups(tmp_path) == ["bench_a", "bench_pkg"]


def test_bench_expression_needs_the_group_and_the_users_selection():
    both = re.compile(plan.bench_expression("bench_rnns", "time_forward|cudnn"))
    assert both.search("bench_rnns.LSTM.time_forward")
    assert both.search("bench_rnns.LSTM.time_backward('cudnn')")
    assert not both.search("bench_rnns.LSTM.time_backward('jit')")
    assert not both.search("bench_cnns.ResNet.time_forward")
    assert not re.search(plan.bench_expression("bench_rnns", None), "bench_rnns_x.A.time_b")


def test_plan_covers_the_range_and_remembers_what_is_stored(tmp_path):
    project, shas = _fixture(tmp_path / "repo")
    shards = plan.plan(project, f"{shas[0]}..{shas[-1]}")
    assert [s.group for s in shards] == ["bench_more", "bench_work"]
    assert all(s.commits == tuple(shas[1:]) for s in shards)
    assert all(s.stored == {} for s in shards)
    assert shards[0].rest(shas[1:3]).commits == (shas[3],)
    single = driver.split_by_commit(shards)
    assert [(s.group, s.commits) for s in single][:2] == [("bench_more", (shas[1],)),
                                                         ("bench_more", (shas[2],))]


@pytest.mark.parametrize("spec, bench, message", [
    ("nosuch..main", None, "range 'nosuch..main'"),
    ("main..main", None, "holds no commits"),
    ("--all", None, "not a revision range"),
    ("main", "(", "--bench '(': not a regular expression"),
])
def test_bad_plans_are_one_line_errors(tmp_path, spec, bench, message):
    project, _ = _fixture(tmp_path / "repo", commits=3)
    with pytest.raises(plan.PlanError, match=re.escape(message)):
        plan.plan(project, spec, bench)


def test_a_nodes_machine_name_is_its_resource_or_its_host():
    assert machine_name({SLOT: 1, MACHINE + "gpu-a100-1": 1, "CPU": 8}) == "gpu-a100-1"
    assert machine_name({SLOT: 1}, host="box7") == "box7"
    with pytest.raises(NodeError, match="more than one machine name"):
        machine_name({MACHINE + "a": 1, MACHINE + "b": 1})
    with pytest.raises(ValueError):
        machine_name({MACHINE + "<script>": 1})


def test_a_commit_is_handed_on_only_in_its_final_round():
    # asv --interleave-rounds visits every commit once per round: a commit's files are whole
    # only after its last round, so earlier rounds' lines start nothing
    line = "[ 50.00%] · For proj commit d5d6f24e <main>{}:"
    assert final_round_commit(line.format("")) == "d5d6f24e"
    assert final_round_commit(line.format(" (round 1/2)")) is None
    assert final_round_commit(line.format(" (round 2/2)")) == "d5d6f24e"
    assert final_round_commit("[ 50.00%] ·· Building for virtualenv-py3.11") is None


def test_an_address_where_nothing_listens_is_refused_at_once():
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(driver.FleetError, match="nothing answers there"):
        driver.check_reachable(f"127.0.0.1:{port}", timeout=5)
    with pytest.raises(driver.FleetError, match="expected HOST:PORT"):
        driver.check_reachable("somewhere")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        driver.check_reachable(f"ray://127.0.0.1:{server.getsockname()[1]}")


def test_command_errors_are_one_line_exit_2(tmp_path, capsys):
    project, _ = _fixture(tmp_path / "repo", commits=3)
    conf = str(project.config)
    assert main(["fleet", "run", "nosuch..main", "--config", conf]) == 2
    assert main(["fleet", "run", "main~1..main", "--identical", "--config", conf]) == 2
    assert main(["fleet", "run", "main~1..main", "--machine-class", "<b>", "--config",
                 conf]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "range 'nosuch..main'" in err[0]
    assert "--identical needs --machine-class" in err[1]
    assert "--machine-class" in err[2] and "<b>" in err[2]


# --------------------------------------------------------------------------- with Ray

HERE = "sim-a"  # the embedded run's machine: a simulated node's name (fleet_cluster.cluster)


@pytest.mark.slow
def test_embedded_ray_stores_what_asv_run_stores_even_when_killed(tmp_path, environments):
    """Without --address: one local slot, the machine name given. A driver killed (SIGKILL)
    after its first commit leaves whole results files; run again, it measures only the
    rest; the (commit, benchmark) values are then those `asv run` of the range stores, and
    a third run measures nothing. (The name is a simulated node's, so that the cluster tests
    below find its environment built.)"""
    project, shas = _fixture(tmp_path / "repo", commits=3, environments=environments)
    conf = str(project.config)
    command = [sys.executable, "-m", "torchpulse.cli", "fleet", "run", f"{shas[0]}..{shas[-1]}",
               "--machine", HERE, "--bench", "time_work", "--config", conf]
    killed = subprocess.Popen(command, cwd=project.root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    assert killed.stderr is not None
    for line in killed.stderr:
        if ": stored" in line:
            killed.kill()
            break
    assert killed.wait(timeout=600) == -signal.SIGKILL
    assert len(_covered(project.results_dir)) == 1  # each file loads: none half-written

    first = subprocess.run(command, cwd=project.root, capture_output=True, text=True,
                           timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    # bench_more's shard selects nothing: asv says so, and nothing of it is stored
    assert "fleet: 1 measured, 1 already stored, 2 with nothing selected" in first.stdout
    assert "[4/4] bench_work @" in first.stderr

    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", "seq",
                    "--config", conf], cwd=project.root, check=True, capture_output=True)
    settings = project.elsewhere(tmp_path / "seq-results", tmp_path / "html")
    settings["env_dir"] = str(project.root / ".asv" / "fleet" / HERE / "env")  # built
    (tmp_path / "seq.json").write_text(json.dumps(settings))
    seq = subprocess.run([sys.executable, "-m", "asv", "run", "--config",
                          str(tmp_path / "seq.json"), "--machine", "seq", "--record-samples",
                          "--bench", "time_work", f"{shas[0]}..{shas[-1]}"], cwd=project.root,
                         capture_output=True, text=True, timeout=900)
    assert seq.returncode == 0, seq.stdout[-3000:]
    fleet, sequential = _covered(project.results_dir), _covered(tmp_path / "seq-results")
    assert set(fleet) == set(sequential) and len(fleet) == 2
    assert all(machines == {HERE} for machines in fleet.values())

    again = subprocess.run(command, cwd=project.root, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0 and "fleet: 0 measured, 2 already stored" in again.stdout


@pytest.fixture(scope="module")
def cluster():
    """A Ray head with no measurement slot and two simulated nodes with one each, started
    once for the file (10 s): the test that loses a node comes last."""
    with simulated.cluster() as made:
        yield made


@pytest.mark.slow
def test_a_class_of_identical_machines_is_one_machine_over_its_nodes(tmp_path, cluster,
                                                                    environments):
    made, _nodes = cluster
    project, shas = _fixture(tmp_path / "repo", commits=3, environments=environments)
    shards = plan.plan(project, f"{shas[0]}..{shas[-1]}", "time_work")
    lines: list[str] = []
    summary = driver.run(project, shards, address=made.address, machine_class="sim",
                         identical=True, say=lines.append)
    assert summary.measured == 2 and summary.machines == {"sim"}, lines
    covered = _covered(project.results_dir)
    assert set(covered) == {(c, "bench_work.time_work") for c in shas[1:]}
    assert all(machines == {"sim"} for machines in covered.values())
    with pytest.raises(driver.FleetError, match="--machine-class gpu: no node carries it "
                       r"\(classes: sim\)"):
        driver.run(project, shards, address=made.address, machine_class="gpu")


@pytest.mark.slow
def test_two_nodes_measure_each_series_on_one_machine_and_survive_a_lost_node(tmp_path,
                                                                             cluster,
                                                                             environments):
    made, nodes = cluster
    project, shas = _fixture(tmp_path / "repo", commits=4, environments=environments)
    shards = plan.plan(project, f"{shas[0]}..{shas[-1]}")
    killed: list[str] = []

    def kill_first_node(item):  # the first commit a node hands back: that node dies
        if not killed:
            killed.append(item.machine)
            made.remove_node(nodes[item.machine], allow_graceful=False)

    lines: list[str] = []
    summary = driver.run(project, shards, address=made.address, machine_class="sim",
                         say=lines.append, on_result=kill_first_node)
    assert not summary.failed, (summary.failed, lines)
    assert summary.requeued == 2 and any("was lost" in line for line in lines), lines
    covered = _covered(project.results_dir)
    # every (commit, benchmark) of the range, each from exactly one machine
    assert set(covered) == {(c, b) for c in shas[1:] for b in ("bench_more.time_more",
                                                                "bench_work.time_work")}
    assert all(len(machines) == 1 for machines in covered.values())
    survivor = ({"sim-a", "sim-b"} - set(killed)).pop()
    # the lost node's first commit stays its own; the rest was measured by the survivor
    lost_group = {b for (c, b), m in covered.items() if m == set(killed)}
    assert len(lost_group) == 1
    assert sum(1 for m in covered.values() if m == {survivor}) == 5


def test_each_node_describes_its_machine_in_a_file_of_its_own(tmp_path):
    """asv rewrites ~/.asv-machine.json whole, in place: a node's `asv run` once read it half
    written while another node described its machine. Each node keeps its own now."""
    from torchpulse.fleet.node import Node

    project, _ = _fixture(tmp_path / "repo")
    home = Path.home() / ".asv-machine.json"
    before = home.read_bytes() if home.exists() else None
    nodes = [Node(project.config, name, tmp_path / f"work-{name}", "bench_work", ".")
             for name in ("node-a", "node-b")]
    for node in nodes:
        node.prepare()
    for node in nodes:
        own = json.loads((node.scratch / "asv-machine.json").read_text())
        assert set(own) == {node.machine, "version"}
    assert (home.read_bytes() if home.exists() else None) == before
