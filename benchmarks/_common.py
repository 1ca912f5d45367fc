"""The tiny base shared by the workload suites (underscore: asv does not collect it).

Imports of torchpulse happen in setup so that a commit whose package lacks a workload, or
the whole suite module, records the benchmark as skipped instead of failing.
"""


def _read_region_clock() -> float:
    from torchpulse import suite

    return suite.read_clock()


class _WorkloadSuite:
    family = ""
    param_names = ["runner"]
    # One process per benchmark and a warmed-up workload: no asv warm-up, one call per sample,
    # at least 15 samples, more while under a second.
    rounds = 1
    number = 1
    warmup_time = 0.0
    repeat = (15, 60, 1.0)
    timer = staticmethod(_read_region_clock)

    def setup(self, runner):
        try:
            from torchpulse import suite
        except ImportError as exc:
            raise NotImplementedError(f"torchpulse.suite missing: {exc}") from None
        self.workload = suite.workload(runner, self.family)
        self.clock = suite.clock()

    def time_forward(self, runner):
        self.workload.forward(self.clock)

    def time_backward(self, runner):
        # the forward pass runs too, outside the timed region
        self.workload.step(backward_clock=self.clock)

    def peakmem_step(self, runner):
        self.workload.step()
