"""Host memory that a measured process frees stays in that process, so a timed call does not
page-fault on memory an earlier call already had.

Why: glibc hands large freed blocks back to the kernel (blocks it mmap'ed, and the heap's top
beyond ``M_TRIM_THRESHOLD``), and the next call faults them in again, a page at a time. On a
VM whose guest reports freed pages to the host (virtio-balloon free page reporting, as on the
machines this project runs on), each such fault also costs a host fault, whose price drifts
with the host. ResNet-18's vjp at the cpu preset took 11,560 faults a call (46 MB): 53 ms a
call with them, 33 ms without, and 31.7 to 82.8 ms over one `make dashboard` run
(docs/measurements.md). On the GPU, CUDA's caching allocator keeps freed memory in the same
way, and PyTorch's own CPU benchmarks preload jemalloc or tcmalloc for this reason.

The policy is part of the suites' versions (``POLICY``): measurements taken under another
policy belong to other series. Standard library only: the suites load this file by path from
the working tree (benchmarks/_tree.py), whatever commit's torchpulse is installed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
from collections.abc import Callable, MutableMapping

# in the suites' versions: a change here starts new series
POLICY = "kept"

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
# give the heap's top back only beyond 2 GiB (mallopt takes a C int: INT_MAX at most)
TRIM_THRESHOLD = (1 << 31) - 1
# glibc reads these when a process starts: the processes a measured one starts (the compile
# zoo's spawned workers, whatever commit's code they run) keep their memory too
ENVIRONMENT = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD)}


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """This process's glibc, its mallopt typed (looked up once a process)."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None  # macOS, musl: another allocator, nothing of glibc's to set
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return libc


def keep_freed_memory(environ: MutableMapping[str, str] | None = None) -> bool:
    """Keep freed memory in this process (no mmap'ed blocks, no trimming of the heap) and in
    the processes it starts (``ENVIRONMENT``). False where the C library is not glibc: then
    nothing is changed."""
    libc = _glibc()
    if libc is None:
        return False
    if (libc.mallopt(M_MMAP_MAX, 0) != 1
            or libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1):
        raise OSError("glibc refused mallopt(M_MMAP_MAX / M_TRIM_THRESHOLD)")
    (os.environ if environ is None else environ).update(ENVIRONMENT)
    return True


def release_freed_memory() -> bool:
    """Give the memory this process has freed back to the kernel now (glibc's malloc_trim),
    whatever the policy above: before a workload whose own peak memory is to be read, so
    that what an earlier workload freed and the policy kept is not counted for it, nor
    reused without showing. False where the C library is not glibc."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def page_faults(fn: Callable[[], object]) -> int:
    """Minor page faults this process took while ``fn()`` ran (memory it touched for the first
    time since the kernel gave it, or gave it again)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
