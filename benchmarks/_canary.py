"""The machine canary: a fixed workload timed between the suites' benchmarks, so that a
disturbed machine (another job, throttling) is seen as such.

It runs the standard library's C loops (SHA-256 over a fixed block, zlib over a fixed text),
on one thread per core the process may use (both release the GIL): nothing of torch or of
any package under test, so a new torch build, a commit or an environment never moves it and
only the machine does. A busy core slows it as it slows the suites' two-thread work. Its code
lives here, in the working tree, so every commit of a run times the same workload.
torchpulse.analysis.disturbance reads its timings and flags the points measured next to a
slow one. asv runs a commit's benchmarks in name order, one setup_cache group after another:
this module's own ``_canary.MachineCanary`` ("_" sorts before "b") opens each commit's run,
and the suite modules that import the class run it again after the autograd pairs, between
the LSTM classes and at the end of the compile zoo."""

import hashlib
import os
import random
import zlib
from concurrent.futures import ThreadPoolExecutor

CANARY_SEED = 0
ROUNDS = 2  # of each thread's loop a sample: 8.7 ms on an idle 2-core VM
_WORDS = ("tensor", "grad", "kernel", "stride", "dtype", "view", "shape", "lstm")


def _inputs() -> tuple[bytes, bytes]:
    """A 256 KiB block of fixed bytes to hash and a 240 KB fixed text to compress."""
    rng = random.Random(CANARY_SEED)
    block = rng.randbytes(1 << 18)
    text = " ".join(rng.choice(_WORDS) for _ in range(40_000)).encode()
    return block, text


def _loop(block: bytes, text: bytes, rounds: int) -> int:
    done = 0
    for _ in range(rounds):
        done += len(hashlib.sha256(block).digest())
        done += len(zlib.compress(text, 6))
    return done


def cores() -> int:
    """The cores this process may run on: the canary's threads."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class MachineCanary:
    # Read in both rounds of the suites around it, 10 samples each (a fixed count:
    # torchpulse.analysis.disturbance splits the stored samples back into rounds and takes
    # the slower round's median as the reading). Version 2: the standard library's loops
    # (version 1 timed torch's matmuls, and so a torch build read as a disturbed machine)
    version = "2"
    rounds = 2
    number = 1
    repeat = (10, 10, 1.0)
    warmup_time = 0.05

    def setup(self, *cache, threads: int | None = None):
        self.block, self.text = _inputs()
        self.threads = threads or cores()
        self.pool = ThreadPoolExecutor(self.threads)
        self.time_reference()  # the threads started before the first timed sample

    def teardown(self, *cache):
        self.pool.shutdown()

    # *cache: in a suite with a setup_cache, asv passes its value first
    def time_reference(self, *cache):
        args = [(self.block, self.text, ROUNDS)] * self.threads
        list(self.pool.map(lambda a: _loop(*a), args))


def reading(threads: int, samples: int = 5, warmup: int = 0) -> float:
    """The canary timed outside asv: the median of ``samples`` timings (after ``warmup``
    untimed ones) on ``threads`` threads."""
    import statistics
    import time

    canary = MachineCanary()
    canary.setup(threads=threads)
    try:
        for _ in range(warmup):
            canary.time_reference()
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            canary.time_reference()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        canary.teardown()
