"""The transformer family: a small encoder's forward alone, backward alone, and the peak
memory of a training step (the process's), on CPU runs; on CUDA runs bench_gpu measures
them. Its version digests the family's own sizes (sizes.TRANSFORMERS) only: adding this
family left every other suite's series and version alone."""

# a fleet shard of this module alone still reads its machine
from ._canary import MachineCanary  # noqa: F401
from ._common import _check_cpu_run, _registry, _sizes, _suite, _version, _WorkloadSuite

# torchpulse.suite.API_VERSION that builds the family: older commits skip it
_REQUIRED_API = 11


class Transformer(_WorkloadSuite):
    version = _version(_sizes.TRANSFORMERS)
    family = "transformers"
    params = [list(_registry.TRANSFORMER_MODELS)]
    param_names = ["model"]

    def setup(self, model):
        _check_cpu_run()
        if getattr(_suite, "API_VERSION", 0) < _REQUIRED_API:
            raise NotImplementedError("this commit's torchpulse has no transformer family")
        self.workload = _suite.transformer(model, _sizes.TRANSFORMERS)
        self.clock = _suite.clock()
