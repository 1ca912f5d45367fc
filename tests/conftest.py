import os

import pytest

# A CI machine may set PYTHONDONTWRITEBYTECODE=1 (this project's does). The asv environments
# the end-to-end tests build then never hold byte-code, and every pip, asv and benchmark
# process in them compiles its modules from source again: 0.9 s of each of the many pip
# calls asv makes (its own modules, 335 of them). The suite's processes may write the
# byte-code of what they import, once, as on a machine without the variable (set here,
# before xdist starts its workers, so that they and every process they start inherit it).
# The counted process sets its own environment (instructions/normalised.py).
os.environ["PYTHONDONTWRITEBYTECODE"] = ""

# the files handed out first, in this order, to whichever worker is free (make test:
# --dist loadfile --no-loadscope-reorder): the end-to-end ones, the init test (which needs
# a quiet core for its machine canary) ahead
FIRST = ("tests/e2e/test_init.py", "tests/e2e/test_culprit.py", "tests/fleet/test_fleet.py",
         "tests/compile/test_compile.py", "tests/e2e/test_asv_e2e.py",
         "tests/e2e/test_instruction_step.py")


def pytest_configure(config):
    """Under xdist, each worker keeps to a core of its own: a test's processes then share
    their core with nothing but themselves, so that a machine canary in one worker does not
    read the other worker's load as a disturbed machine."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(
        "PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= int(count) > 1:
        try:
            os.sched_setaffinity(0, {cpus[int(worker.removeprefix("gw")) % len(cpus)]})
        except OSError:  # a sandbox that forbids it: the workers share the cores, as before
            pass


def _first(item) -> int:
    path = item.nodeid.split("::")[0]
    return FIRST.index(path) if path in FIRST else len(FIRST)


def pytest_collection_modifyitems(config, items):
    """The end-to-end files first (FIRST), and tests marked ``gpu`` skipped, with the
    reason, where torch has no CUDA.

    The order: by default xdist hands out the files with the most tests first, which left
    the init test (which must not share its core: it was alone at the end, 1.5-2 minutes
    of one idle core) and the other long files for last. Started together on unpinned
    workers, the heaviest loaded both cores so that the machine canary marked 5 of the init
    test's 8 commits disturbed and the dashboard rightly gave no verdict (2026-11-27); with
    each worker on a core of its own (pytest_configure) they start first (2026-11-28:
    pytest 626 s, against 686-736 s that night)."""
    items.sort(key=_first)  # stable: the rest keep their order
    # the marker, not the keyword: a test's keywords hold its folder's name (tests/gpu/)
    gpu = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (run on a GPU machine: pytest -m gpu)")
    for item in gpu:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_preset_env(monkeypatch):
    """Tests choose presets and devices explicitly; the caller's shell must not leak them."""
    monkeypatch.delenv("TORCHPULSE_PRESET", raising=False)
    monkeypatch.delenv("TORCHPULSE_DEVICE", raising=False)


@pytest.fixture(scope="module")
def alert_project(tmp_path_factory):
    """A synthetic asv project with planted steps, improvements, spikes and pure noise:
    (directory, truths, first-parent history)."""
    from torchpulse.evaluation import synthetic

    path = tmp_path_factory.mktemp("synthetic")
    truths = synthetic.build(path, commits=30, per_cell=1, noise_series=2, seed=3)
    return path, truths, synthetic.history(path)


@pytest.fixture(scope="module")
def quiet_project(tmp_path_factory):
    """A synthetic asv project without regressions: noise, improvements and spikes."""
    from torchpulse.evaluation import synthetic

    path = tmp_path_factory.mktemp("quiet")
    synthetic.build(path, commits=30, per_cell=3, noise_series=10, seed=4,
                    kinds=("noise", "improvement", "spike"))
    return path
