"""The measured processes keep the host memory they free: a call that frees and reallocates
tens of MB does not page-fault again (torchpulse.allocation)."""

import mmap
import os
import subprocess
import sys

import pytest

from torchpulse import allocation

GLIBC = allocation._glibc() is not None
needs_glibc = pytest.mark.skipif(not GLIBC, reason="the policy is glibc's mallopt")

# a child that allocates, fills and frees 64 MB five times and prints the page faults of the
# last four (the first one's are the heap growing once)
CHURN = """
import sys
from torchpulse import allocation
if sys.argv[1] == "keep":
    assert allocation.keep_freed_memory()
counts = [allocation.page_faults(lambda: len(b"x" * (64 << 20))) for _ in range(5)]
print(max(counts[1:]))
"""
PAGES = (64 << 20) // mmap.PAGESIZE


def _plain_environment() -> dict:
    """This environment without the policy's variables (another test's import of the suites
    may have set them in this process)."""
    return {k: v for k, v in os.environ.items() if k not in allocation.ENVIRONMENT}


def _faults(mode: str, env: dict) -> int:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], env=env, check=True,
                         capture_output=True, text=True).stdout
    return int(out)


@needs_glibc
def test_a_process_that_keeps_freed_memory_does_not_fault_on_it_again():
    plain = _faults("plain", _plain_environment())
    kept = _faults("keep", _plain_environment())
    assert plain > PAGES * 0.9  # glibc gave the 64 MB back and the next call faulted it in
    assert kept < PAGES * 0.01


@needs_glibc
def test_the_processes_it_starts_keep_theirs_too():
    env = _plain_environment()
    assert allocation.keep_freed_memory(env)
    assert {k: env[k] for k in allocation.ENVIRONMENT} == allocation.ENVIRONMENT
    assert _faults("plain", env) < PAGES * 0.01  # the child set nothing itself


def test_without_glibc_nothing_is_changed(monkeypatch):
    monkeypatch.setattr(allocation, "_glibc", lambda: None)
    env = {"PATH": "/bin"}
    assert allocation.keep_freed_memory(env) is False
    assert env == {"PATH": "/bin"}


def test_page_faults_counts_the_pages_a_call_touches_first():
    size = 8 << 20
    region = mmap.mmap(-1, size)
    try:
        touched = allocation.page_faults(lambda: region.write(b"x" * size))
        again = allocation.page_faults(lambda: region[0:size:mmap.PAGESIZE])
    finally:
        region.close()
    # the 8 MB region's pages at least (the bytes object written from may add its own)
    assert touched >= size // mmap.PAGESIZE
    assert again < size // mmap.PAGESIZE // 10  # reading pages already there


def test_the_suites_measure_under_the_policy_and_say_so_in_their_versions():
    """Importing the suites (asv's forkserver parent does, before forking each benchmark)
    applies the policy, and the workload suites' versions carry it: series measured under
    another policy are other series."""
    code = """
import os, sys
sys.path.insert(0, sys.argv[1])
from benchmarks import bench_autograd, bench_cnns, bench_compile, bench_rnns
from torchpulse import allocation
print(all(os.environ.get(k) == v for k, v in allocation.ENVIRONMENT.items()))
for cls in (bench_rnns.LSTM, bench_rnns.VariableLengthLSTM, bench_cnns.ResNet,
            bench_autograd.FunctionalAutograd, bench_autograd.FunctionalAutogradAllTasks,
            bench_autograd.FunctionalAutogradVjpOnly, bench_compile.CompiledModel):
    print(cls.version)
print(allocation.page_faults(lambda: len(b"x" * (64 << 20))))
print(allocation.page_faults(lambda: len(b"x" * (64 << 20))))
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**_plain_environment(), "TORCHPULSE_PRESET": "smoke"}
    out = subprocess.run([sys.executable, "-c", code, root], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0] == str(GLIBC)
    versions = out[1:-2]
    assert len(versions) == 7
    assert all(v.endswith("-" + allocation.POLICY) for v in versions)
    if GLIBC:
        assert int(out[-1]) < PAGES * 0.01  # the second 64 MB reused the first's pages


@pytest.fixture
def unset_policy(monkeypatch):
    """The policy's variables unset for the test and put back afterwards (another test's
    import of the suites may have set them in this process)."""
    for name in allocation.ENVIRONMENT:
        monkeypatch.setenv(name, "unset")
        monkeypatch.delenv(name)


def _policy_set() -> bool:
    return all(os.environ.get(k) == v for k, v in allocation.ENVIRONMENT.items())


@needs_glibc
@pytest.mark.parametrize("argv", [
    ["bench", "--rnns", "aten", "--preset", "smoke", "--device", "cpu", "--nloops", "2",
     "--warmup", "1"],
    ["autograd", "--num-iters", "1", "--model-filter", "ppl_simple_reg", "--task-filter", "vjp",
     "--gpu", "-1", "--preset", "smoke", "--no-functorch", "--output", "{tmp}/autograd.md"],
    ["dynamo", "--performance", "--inference", "--backend", "aot_eager", "--device", "cpu",
     "--size", "smoke", "-k", "^mlp$", "--repeat", "1", "--output", "{tmp}/dynamo.csv"],
], ids=lambda argv: argv[0])
def test_the_command_line_runners_measure_under_the_policy(argv, tmp_path, unset_policy):
    from torchpulse.cli import main

    assert not _policy_set()
    assert main([a.format(tmp=tmp_path) for a in argv]) == 0
    assert _policy_set()  # this process, and the workers `dynamo` spawned after it


@needs_glibc
def test_a_users_model_benchmark_measures_under_the_policy(unset_policy):
    import torch

    from torchpulse import harness

    class Tiny(harness.ModelBenchmark):
        def build(self, device, generator):
            return torch.nn.Linear(4, 2), (torch.randn(3, 4, generator=generator),)

    assert not _policy_set()
    Tiny().setup()
    assert _policy_set()


def _churn_faults() -> int:
    """As CHURN: the most faults of calls 2-5 (the first one's are the heap growing once)."""
    counts = [allocation.page_faults(lambda: len(b"x" * (64 << 20))) for _ in range(5)]
    return max(counts[1:])


@needs_glibc
def test_a_spawned_worker_keeps_its_memory_as_the_zoos_do(unset_policy):
    """The compile zoo's workers are spawned (a fresh interpreter, not a fork): they keep
    their memory through the environment alone, whatever commit's code they run."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        plain = pool.apply(_churn_faults)
    assert allocation.keep_freed_memory()
    with context.Pool(1) as pool:
        kept = pool.apply(_churn_faults)
    assert plain > PAGES * 0.9
    assert kept < PAGES * 0.01
