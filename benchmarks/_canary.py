"""The machine canary: a fixed torch workload timed between the suites' benchmarks, so that a
disturbed machine (another job, throttling) is seen as such.

Its code lives here, in the working tree, so every commit of a run times the same workload
with the same torch: its level moves only when the machine does. torchpulse.analysis.disturbance
reads its timings and flags the points measured next to a slow one. asv runs a commit's
benchmarks in name order, one setup_cache group after another: this module's own
``_canary.MachineCanary`` ("_" sorts before "b") opens each commit's run, and the suite
modules that import the class run it again after the autograd pairs, between the LSTM
classes and at the end of the compile zoo."""

import torch

CANARY_SEED = 0


class MachineCanary:
    # ~17 ms a sample on an idle 2-core VM. Read in both rounds of the suites around it,
    # 10 samples each (a fixed count: torchpulse.analysis.disturbance splits the stored
    # samples back into rounds and takes the slower round's median as the reading)
    version = "1"
    rounds = 2
    number = 1
    repeat = (10, 10, 1.0)
    warmup_time = 0.05

    def setup(self, *cache):
        g = torch.Generator().manual_seed(CANARY_SEED)
        self.a = torch.randn(256, 256, generator=g)
        self.b = torch.randn(256, 256, generator=g)
        self.x = torch.randn(64, 512, generator=g)

    # *cache: in a suite with a setup_cache, asv passes its value first
    def time_reference(self, *cache):
        c = self.a
        for _ in range(24):  # matmuls on every intra-op thread
            c = torch.tanh(c @ self.b)
        y = self.x
        for _ in range(24):  # elementwise work and reductions
            y = torch.nn.functional.gelu(y) * 0.5 + y.sum(dim=1, keepdim=True) * 1e-3


def reading(threads: int, samples: int = 5, warmup: int = 0) -> float:
    """The canary timed outside asv: the median of ``samples`` timings (after ``warmup``
    untimed ones) on ``threads`` torch threads, the thread count put back afterwards."""
    import statistics
    import time

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        canary = MachineCanary()
        canary.setup()
        for _ in range(warmup):
            canary.time_reference()
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            canary.time_reference()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        torch.set_num_threads(before)
