"""The tiny base shared by the workload suites (underscore: asv does not collect it).

torch and torchpulse are imported here, at module level, because asv's forkserver imports
the suite once per commit and forks every benchmark from it: the ~1.2 s torch import is paid
once instead of once per benchmark. A commit whose package lacks torchpulse.suite still
imports this module; its benchmarks are then skipped in setup instead of failing.
"""

import torch  # noqa: F401  (preimport for the forkserver)

try:
    from torchpulse import suite as _suite
except ImportError as _exc:  # an old commit's package
    _suite = None
    _suite_error = str(_exc)


# torchpulse.suite.API_VERSION these suites need (older packages: benchmarks skipped)
_REQUIRED_API = 1


def _read_region_clock() -> float:
    return _suite.read_clock()


class _WorkloadSuite:
    family = ""
    param_names = ["runner"]
    # One process per benchmark, warmed up by torchpulse: no asv warm-up, one call per
    # sample, at least 10 samples, more (up to 40) while under 0.6 s.
    rounds = 1
    number = 1
    warmup_time = 0.0
    repeat = (10, 40, 0.6)
    timer = staticmethod(_read_region_clock)

    def setup(self, runner):
        if _suite is None:
            raise NotImplementedError(f"torchpulse.suite missing: {_suite_error}")
        if getattr(_suite, "API_VERSION", 0) < _REQUIRED_API:
            raise NotImplementedError("this commit's torchpulse.suite predates these suites")
        self.workload = _suite.workload(runner, self.family)
        self.clock = _suite.clock()

    # Each process measures one thing and warms up only that, on its first call and outside
    # the timed region (setup cannot tell which benchmark it is preparing).
    def time_forward(self, runner):
        _suite.warm_up(self.workload, "forward")
        self.workload.forward(self.clock)

    def time_backward(self, runner):
        _suite.warm_up(self.workload, "step")
        # the forward pass runs too, outside the timed region
        self.workload.step(backward_clock=self.clock)

    def peakmem_step(self, runner):
        # peak RSS of the process: import, build and one step; warm-up would not lower it
        self.workload.step()
