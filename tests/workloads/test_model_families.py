"""The model families: a family is its module, its row in the registry, its tables in
sizes.py and a suite file naming it; everything else takes it from there."""

import importlib
import re
import sys
import types
from pathlib import Path

import pytest
from clocks import CountingClock

from torchpulse import sizes, suite
from torchpulse.autograd import choices as autograd
from torchpulse.fastrnns import choices as fastrnns
from torchpulse.gpu.measure import measure as gpu_measure
from torchpulse.gpu.measure import sizes_at
from torchpulse.workloads import registry
from torchpulse.workloads.regions import build, model_class

ROOT = Path(__file__).resolve().parents[2]


def test_every_model_family_has_a_model_and_a_row_per_model_at_every_preset():
    assert set(sizes.MODEL_SIZES) == set(registry.MODEL_FAMILIES)
    for family, (rows, counting) in sizes.MODEL_SIZES.items():
        models = set(registry.MODEL_FAMILIES[family].models)
        assert set(rows) == set(counting) == models
        assert all(set(by_preset) == set(sizes.FASTRNNS) for by_preset in rows.values())
        model = model_class(family)  # what regions.build and suite.model build
        assert isinstance(model.settle, int) and model.settle >= 1
        assert callable(model.forward) and callable(model.step) and callable(model.close)


# A family this torchpulse does not have: one linear layer, built from code
TOY = '''
import contextlib

import torch


class Model:
    settle = 1

    def __init__(self, name, row, device, seed):
        torch.manual_seed(seed)
        self.layer = torch.nn.Linear(row["width"], row["width"]).to(device)
        self.x = torch.randn(row["batch"], row["width"]).to(device)

    def forward(self, clock=None):
        with clock.region() if clock else contextlib.nullcontext():
            return self.layer(self.x)

    def step(self, forward_clock=None, backward_clock=None):
        out = self.forward(forward_clock)
        with backward_clock.region() if backward_clock else contextlib.nullcontext():
            out.sum().backward()
        self.layer.zero_grad()

    def close(self):
        del self.layer, self.x
'''
ROW = {"batch": 2, "width": 4}


def _reload_suites() -> dict[str, types.ModuleType]:
    """The suite modules and the stubs' patterns as the registry now declares them."""
    import torchpulse.results.external as external

    importlib.reload(external)
    return {name: importlib.reload(importlib.import_module(f"benchmarks.{name}"))
            for name in ("_common", "bench_instructions", "bench_gpu")}


@pytest.fixture
def toy_family(monkeypatch):
    """The toy family declared as a new one would be: its module, its registry row (in the
    package and in the copy the suites load by path) and its sizes (both copies too)."""
    sys.path.insert(0, str(ROOT))
    tree = importlib.import_module("benchmarks._tree")
    module = types.ModuleType("torchpulse.workloads.toy_mlp")
    exec(compile(TOY, "toy_mlp.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for reg in (registry, tree.load("workloads/registry.py")):
        monkeypatch.setitem(reg.MODEL_FAMILIES, "mlps",
                            reg.ModelFamily("toy_mlp", ("tiny",), "Mlp", 12))
        # FAMILIES is derived from MODEL_FAMILIES when the module is read
        monkeypatch.setitem(reg.FAMILIES, "mlps", ("mlps", True))
    for table in (sizes, tree.load("sizes.py")):
        monkeypatch.setitem(table.MODEL_SIZES, "mlps",
                            ({"tiny": {p: ROW for p in sizes.FASTRNNS}}, {"tiny": ROW}))
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    try:
        yield _reload_suites()
    finally:
        monkeypatch.undo()
        _reload_suites()
        sys.path.remove(str(ROOT))


def test_a_new_family_needs_its_module_its_registry_row_its_sizes_and_a_suite_file(
        toy_family):
    common, counts, gpu = (toy_family[n] for n in ("_common", "bench_instructions",
                                                   "bench_gpu"))
    from torchpulse.results.external import measured_on

    # named, after the older families, and sized for every meter
    names = registry.workloads(fastrnns, autograd)
    assert names[-2:] == ["mlps/tiny/forward", "mlps/tiny/backward"]
    assert sizes.counting()["mlps"] == {"tiny": ROW}
    assert sizes_at(sizes.by_preset(), "smoke")["mlps"] == {"tiny": ROW}
    # built as a region by the counts and the GPU suite: one model for both regions
    built: dict = {}
    clock = CountingClock()
    for region in ("forward", "backward"):
        build(f"mlps/tiny/{region}", sizes.counting(), "cpu", "instructions",
              built=built).run(clock)
    assert clock.entered == 2 and list(built) == ["mlps/tiny"]
    # measured by the GPU suite (here its dry run on the CPU), and closed after
    measured = gpu_measure(["mlps/tiny/forward", "mlps/tiny/backward", "rnns/cudnn/forward"],
                           sizes_at(sizes.by_preset(), "smoke"), "cpu", "smoke")
    assert not measured["failed"] and len(measured["workloads"]) == 3
    # the counts and the GPU suite have a class for it, under a version of its own sizes
    assert counts.MlpInstructions.params == [["mlps/tiny/forward", "mlps/tiny/backward"]]
    assert "mlps/tiny/forward" not in counts.Instructions.params[0]
    assert counts.MlpInstructions.version != counts.TransformerInstructions.version
    assert gpu.MlpWorkloads.params == counts.MlpInstructions.params
    # ... and ask only a package that builds it
    assert common._asked(names)[-2:] == ["mlps/tiny/forward", "mlps/tiny/backward"]
    # the wall-time suite a bench_mlps.py would hold: built through suite.model, timed
    wall = common._model_suite("mlps")
    assert (wall.__name__, wall.params, wall.param_names) == ("Mlp", [["tiny"]], ["model"])
    bench = wall()
    bench.setup("tiny")
    before = suite.read_clock()
    bench.time_forward("tiny")
    bench.time_backward("tiny")
    assert suite.read_clock() > before
    # left out of CUDA runs with the other per-process suites
    assert not re.match(measured_on("cuda"), "bench_mlps.Mlp.time_forward")
    assert re.match(measured_on("cpu"), "bench_mlps.Mlp.time_forward")


def test_a_package_older_than_a_family_is_not_asked_for_it(toy_family, monkeypatch):
    common = toy_family["_common"]
    monkeypatch.setattr(suite, "API_VERSION", 11)
    names = registry.workloads(fastrnns, autograd)
    asked = common._asked(names)
    assert "transformers/encoder/forward" in asked and "mlps/tiny/forward" not in asked
    monkeypatch.setattr(suite, "API_VERSION", 10)
    assert not [n for n in common._asked(names) if n.startswith(("mlps/", "transformers/"))]
    with pytest.raises(NotImplementedError, match="no mlps family"):
        common._model_suite("mlps")().setup("tiny")


def test_the_transformers_first_package_builds_them_by_its_own_function(monkeypatch):
    """API 11 had suite.transformer(model, table) and no suite.model(): a commit of it is
    still measured."""
    sys.path.insert(0, str(ROOT))
    try:
        common = importlib.import_module("benchmarks._common")
        called = []
        monkeypatch.setattr(suite, "API_VERSION", 11)
        monkeypatch.setattr(suite, "transformer", lambda *a: called.append(a) or "built",
                            raising=False)
        bench = common._model_suite("transformers")()
        bench.setup("encoder")
    finally:
        sys.path.remove(str(ROOT))
    assert bench.workload == "built"
    assert called == [("encoder", common._sizes.TRANSFORMERS)]
