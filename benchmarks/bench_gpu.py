"""Every CUDA workload (the fastrnns LSTMs and ResNets and the transformer encoder, forward
and backward, and the functional-autograd pairs) measured in one process a commit (asv's
setup_cache): one CUDA context, each model built and warmed up once. Per workload: its wall
time, its kernels' summed device time (CUPTI, which launch gaps on the host do not move),
the kernels it launches and the host synchronisations it makes (exact counters), and its
GPU memory.
CPU runs skip it (the per-process suites measure them there), each benchmark saying why;
$TORCHPULSE_GPU_SUITE=cpu runs it on the CPU as a dry run of its path.
By default it measures every workload but the variable-length Python and TorchScript loops
(workloads/registry.py GPU_LEFT_OUT, as upstream's fastrnns); $TORCHPULSE_GPU_WORKLOADS=all
measures those too, and comma-separated shell patterns (``rnns/cudnn*,cnns/*``) measure the
workloads they match only; the others skip."""

import os

from asv_runner.benchmarks.mark import SkipNotImplemented

from . import _canary
from ._common import _OLDER_FAMILIES, _asked, _model_classes, _registry, _sizes, _suite, _version
from ._tree import load

WORKLOADS = _registry.workloads(load("fastrnns/choices.py"), load("autograd/choices.py"))
SELECTION_ENV = _registry.GPU_SELECTION_ENV
SELECTED = _registry.gpu_selected(WORKLOADS, os.environ.get(SELECTION_ENV))


def _measure(self):
    api = getattr(_suite, "API_VERSION", 0)
    if _suite is None or api < 6:
        return None  # an older package: the benchmarks skip in setup
    return _suite.measure_gpu(_asked(SELECTED), _sizes.by_preset())


_measure.timeout = 3600


def _samples(values):
    """A track_* result with its samples: asv reads {"samples", "number"} from any benchmark
    as a timing (the median, its statistics and, with --record-samples, the samples)."""
    return {"samples": list(values), "number": 1}


class Workloads:
    version = _version(_sizes.FASTRNNS, _sizes.AUTOGRAD, _sizes.REVISIONS)
    params = [_registry.of_families(WORKLOADS, _OLDER_FAMILIES)]
    param_names = ["workload"]
    setup_cache = _measure
    # one process measures a commit; a second round would read the same numbers again
    rounds = 1

    def setup(self, measured, workload):
        if workload not in SELECTED:
            raise NotImplementedError(f"{workload} is not in the GPU suite's selection "
                                      f"(${SELECTION_ENV}: default, all or patterns)")
        if measured is None:
            raise NotImplementedError("this commit's torchpulse has no GPU suite")
        if measured["unavailable"]:
            raise NotImplementedError(measured["unavailable"])
        if workload in measured["skipped"]:
            raise NotImplementedError(measured["skipped"][workload])
        if workload in measured["failed"]:
            self.row = None
        elif workload in measured["workloads"]:
            self.row = measured["workloads"][workload]
        else:
            raise NotImplementedError(f"{workload} is not in this commit's torchpulse")
        self.error = measured["failed"].get(workload)

    def _row(self):
        if self.row is None:
            raise RuntimeError(self.error)
        return self.row

    def track_wall_time(self, measured, workload):
        return _samples(self._row()["wall"])

    track_wall_time.unit = "seconds"

    def track_kernel_time(self, measured, workload):
        return _samples(self._row()["kernel_time"])

    # judged by its own, smaller threshold (torchpulse/kinds.py: its unit is a DEVICE row)
    track_kernel_time.unit = "device seconds"

    def track_kernels(self, measured, workload):
        return self._row()["kernels"]

    track_kernels.unit = "kernels"

    def track_syncs(self, measured, workload):
        return self._row()["syncs"]

    track_syncs.unit = "synchronizations"

    def track_gpu_memory(self, measured, workload):
        memory = self._row()["gpu_memory"]
        if memory is None:  # a dry run on the CPU; asv skips, as for a NotImplementedError
            raise SkipNotImplemented("GPU memory is measured on CUDA runs only")
        return memory

    track_gpu_memory.unit = "bytes"


# each model family's (TransformerWorkloads, ...): from the same process (one setup_cache),
# under a version of its own sizes
globals().update(_model_classes(Workloads, "{suite}Workloads",
                                lambda tables: _version(tables[0]), WORKLOADS))


class MachineCanary(_canary.MachineCanary):
    # in the measurement's setup_cache group: read right after it; one round, as the
    # workloads' (a second would measure them all again)
    setup_cache = _measure
    rounds = 1
