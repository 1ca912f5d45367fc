"""The suites' versions: a series keeps its history only while its version stays, so each
class digests the sizes of the workloads it measures and nothing else."""

import copy
import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("bench_rnns", "bench_cnns", "bench_autograd", "bench_gpu", "bench_instructions",
           "bench_transformers", "bench_compile", "_canary")
# every class of a series before the transformer family came (recorded at bcb4f08)
BEFORE = Path(__file__).parent / "suite_versions.json"


def _versions() -> dict[str, str]:
    out = {}
    for name in MODULES:
        module = importlib.import_module(f"benchmarks.{name}")
        module = importlib.reload(module)
        for attr, value in vars(module).items():
            if isinstance(value, type) and "version" in dir(value) \
                    and not attr.startswith("_"):
                out[f"{name}.{attr}"] = value.version
    return out


@pytest.fixture
def tree_sizes():
    sys.path.insert(0, str(ROOT))
    try:
        sizes = importlib.import_module("benchmarks._tree").load("sizes.py")
        # one copy of all: a table and MODEL_SIZES' row of it stay one object
        kept = copy.deepcopy({name: getattr(sizes, name) for name in dir(sizes)
                              if name.isupper()})
        yield sizes
    finally:
        for name, table in kept.items():
            setattr(sizes, name, table)
        _versions()  # the modules as they were
        sys.path.remove(str(ROOT))


def test_no_series_of_the_older_families_changed_its_version(tree_sizes):
    """Adding the transformer family kept every older class's version: their histories go
    on. A version changed on purpose (a size changed) restarts those series: update
    tests/suite_versions.json in the same commit, and say so."""
    before = json.loads(BEFORE.read_text())
    now = _versions()
    assert {name: now.get(name) for name in before} == before
    assert set(now) - set(before) == {"bench_transformers.Transformer",
                                      "bench_transformers.MachineCanary",
                                      "bench_gpu.TransformerWorkloads",
                                      "bench_instructions.TransformerInstructions"}


# a table of sizes.py -> the classes whose series it sizes
FEEDS = {
    "FASTRNNS": {"bench_rnns.LSTM", "bench_rnns.VariableLengthLSTM", "bench_cnns.ResNet",
                 "bench_gpu.Workloads"},
    "AUTOGRAD": {"bench_autograd.FunctionalAutograd", "bench_autograd.FunctionalAutogradVjpOnly",
                 "bench_autograd.FunctionalAutogradAllTasks", "bench_gpu.Workloads"},
    "TRANSFORMERS": {"bench_transformers.Transformer", "bench_gpu.TransformerWorkloads"},
    "INSTRUCTIONS": {"bench_instructions.Instructions"},
    "INSTRUCTION_TRANSFORMERS": {"bench_instructions.TransformerInstructions"},
}


@pytest.mark.parametrize("table", sorted(FEEDS))
def test_a_change_of_one_familys_sizes_moves_the_versions_of_its_classes_only(tree_sizes,
                                                                              table):
    before = _versions()

    def touch(node):  # every row gets a field more
        rows = [v for v in node.values() if isinstance(v, dict)]
        if not rows or not all(isinstance(v, dict) for v in node.values()):
            node["resized"] = 1
        for v in rows:
            touch(v)

    original = getattr(tree_sizes, table)
    changed = copy.deepcopy(original)
    touch(changed)
    setattr(tree_sizes, table, changed)
    # as sizes.py read again would: MODEL_SIZES holds the model families' tables themselves
    tree_sizes.MODEL_SIZES = {family: tuple(changed if t is original else t for t in tables)
                              for family, tables in tree_sizes.MODEL_SIZES.items()}
    after = _versions()
    moved = {name for name in before if after[name] != before[name]}
    assert moved == FEEDS[table]
