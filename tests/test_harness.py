"""The public harness: a user's model as asv benchmarks with the built-in runners' semantics."""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from asvproject import _git
from torch import nn

from torchpulse import harness


class Toy(harness.ModelBenchmark):
    params = [[2, 4]]
    param_names = ["batch"]
    builds: list = []

    def build(self, device, generator, batch):
        type(self).builds.append((device, batch))
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        return model, (torch.randn(batch, 8, generator=generator),)


class TwoHeads(harness.ModelBenchmark):
    """Outputs in a dict, and a head the step never reaches."""

    def build(self, device, generator):
        body, unused = nn.Linear(4, 4), nn.Linear(4, 4)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body, self.unused = body, unused

            def forward(self, x):
                y = self.body(x)
                return {"a": y, "b": y.sum(1), "n": torch.ones(1, dtype=torch.long)}

        return Net(), (torch.randn(3, 4, generator=generator),)


class Compiled(harness.CompiledModelBenchmark):
    params = [[2, 3]]
    param_names = ["batch"]
    backends = ("eager", "aot_eager")
    compile_repeat = 3

    def build(self, device, generator, batch):
        return nn.Linear(8, 4), (torch.randn(batch, 8, generator=generator),)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("TORCHPULSE_PRESET", "smoke")
    monkeypatch.setenv("TORCHPULSE_DEVICE", "cpu")
    harness._built.clear()
    Toy.builds = []
    yield
    harness._built.clear()


def test_built_once_per_process_and_timed_only_inside_the_regions():
    bench = Toy()
    bench.setup(2)
    first = bench.workload
    bench.setup(2)  # asv runs setup before every sample
    assert bench.workload is first and Toy.builds == [("cpu", 2)]
    t0 = Toy.timer()
    bench.time_forward(2)
    t1 = Toy.timer()
    bench.time_backward(2)
    t2 = Toy.timer()
    assert t0 < t1 < t2
    bench.peakmem_step(2)
    assert all(p.grad is not None and not p.grad.any() for p in first.model.params)
    bench.setup(4)
    assert bench.workload is not first and Toy.builds[-1] == ("cpu", 4)


def test_inputs_and_weights_come_from_fixed_seeds():
    def built():
        harness._built.clear()
        bench = Toy()
        bench.setup(2)
        return bench.workload.model

    a, b = built(), built()
    assert torch.equal(a.inputs[0], b.inputs[0])
    assert all(torch.equal(x, y) for x, y in zip(a.params, b.params, strict=True))


def test_tuple_or_dict_outputs_and_unreached_parameters():
    bench = TwoHeads()
    bench.setup()
    bench.time_backward()
    bench.time_backward()
    params = bench.workload.model.params
    assert len(params) == 4 and sum(p.grad is not None for p in params) == 2


def test_a_model_without_floating_outputs_says_so():
    class Ints(harness.ModelBenchmark):
        def build(self, device, generator):
            return (lambda x: x.long()), (torch.ones(2),)

    bench = Ints()
    bench.setup()
    with pytest.raises(TypeError, match="no floating-point tensor"):
        bench.time_backward()


def test_a_class_without_build_is_no_benchmark():
    """Abstract: asv's discovery skips it, so importing the base classes into a benchmark
    module adds nothing (the asv test below would find them measured otherwise)."""
    import inspect

    class Unfinished(harness.ModelBenchmark):
        params = [[1]]

    for cls in (harness.ModelBenchmark, harness.CompiledModelBenchmark, Unfinished):
        assert inspect.isabstract(cls)
        with pytest.raises(TypeError, match="abstract"):
            cls()
    assert not inspect.isabstract(Toy) and not inspect.isabstract(Compiled)


def test_compiled_metrics_per_parameter_and_backend_from_one_measurement():
    for name, unit in (("compile_time", "seconds"), ("latency_ratio", "compiled/eager"),
                       ("step_time", "seconds")):
        track = getattr(Compiled, f"track_{name}")
        assert track.params == [[2, 3], ["eager", "aot_eager"]]
        assert track.param_names == ["batch", "backend"] and track.unit == unit
    # its own setup_cache, keyed to this module for asv
    assert Compiled.setup_cache.__module__ == __name__
    assert Compiled.setup_cache is not harness.CompiledModelBenchmark.__dict__.get(
        "setup_cache")

    bench = Compiled()
    cache = Compiled.setup_cache(bench)
    assert len(cache) == 4
    bench.setup(cache, 3, "aot_eager")  # a track_* call: nothing built
    assert not hasattr(bench, "workload")
    ratio = bench.track_latency_ratio(cache, 3, "aot_eager")
    assert ratio > 0 and bench.track_compile_time(cache, 3, "aot_eager") >= 0
    assert bench.track_step_time(cache, 2, "eager") > 0
    bench.setup(cache, 2)  # a time_* call builds the eager workload
    t0 = Compiled.timer()
    bench.time_forward(cache, 2)
    assert Compiled.timer() > t0


def test_a_model_that_fails_to_compile_is_a_missing_point(monkeypatch):
    monkeypatch.setattr(harness, "_compiled_modules", {})  # as if in a module of its own

    class Broken(harness.CompiledModelBenchmark):
        backends = ("eager",)

        def build(self, device, generator):
            raise RuntimeError("no model today")

    assert all(math.isnan(v) for d in Broken.setup_cache(Broken()).values()
               for v in d.values())


def test_one_compiled_class_per_module():
    with pytest.raises(TypeError, match="each in its own module"):
        class Another(harness.CompiledModelBenchmark):
            def build(self, device, generator):
                return nn.Linear(2, 2), (torch.ones(1, 2),)


@pytest.mark.slow
def test_asv_runs_a_user_suite_through_the_harness(tmp_path):
    """asv discovers and runs a benchmark file that only subclasses ModelBenchmark (recorded
    in this environment, at a commit of a throwaway repository), launched from asv's
    forkserver as `torchpulse init` configures it (asv's default, a fresh interpreter per
    benchmark, imports torch in each: 52 s of this test instead of 17)."""
    root = tmp_path / "proj"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_user.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        from torchpulse.harness import ModelBenchmark


        class UserNet(ModelBenchmark):
            params = [[2, 8]]
            param_names = ["batch"]

            def build(self, device, generator, batch):
                net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
                                    nn.LazyLinear(10))
                x = torch.randn(batch, 3, 16, 16, generator=generator)
                net(x)  # materialise the lazy layer
                return net, (x,)
        """))
    (root / "benchmarks" / "bench_compiled.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        from torchpulse.harness import CompiledModelBenchmark


        class Mlp(CompiledModelBenchmark):
            backends = ["eager", "aot_eager"]
            compile_repeat = 3

            def build(self, device, generator):
                net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
                return net, (torch.randn(4, 16, generator=generator),)
        """))
    (root / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "user", "project_url": "https://example.invalid/",
        "repo": ".", "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv",
        "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html",
        "launch_method": "forkserver"}))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "one")
    env = {**os.environ, "HOME": str(tmp_path), "TORCHPULSE_PRESET": "smoke",
           "TORCHPULSE_DEVICE": "cpu"}
    proc = subprocess.run([sys.executable, "-m", "torchpulse.cli", "record", "--commit",
                           "HEAD", "--machine", "h", "--config", str(root / "asv.conf.json")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = [p for p in (root / "results" / "h").glob("*.json") if p.name != "machine.json"]
    results = json.loads(path.read_text())["results"]
    for name in ("time_forward", "time_backward", "peakmem_step"):
        values = results[f"bench_user.UserNet.{name}"][0]
        assert len(values) == 2 and all(v is not None and v > 0 for v in values), name
        assert results[f"bench_compiled.Mlp.{name}"][0][0] > 0, name
    for name in ("track_compile_time", "track_latency_ratio", "track_step_time"):
        result, params = results[f"bench_compiled.Mlp.{name}"][:2]
        assert params == [["'eager'", "'aot_eager'"]], name
        assert len(result) == 2 and all(v is not None and v >= 0 for v in result), name
