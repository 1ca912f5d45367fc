"""A region's kernels, device time and synchronisations read from a profile (CPU: the
attribution on made-up traces, the reader on torch's own events)."""

import pytest
import torch

from torchpulse.gpu import trace
from torchpulse.gpu.trace import (
    ANNOTATION,
    API,
    COPY,
    DRAIN,
    FILL,
    KERNEL,
    OP,
    REGION,
    Activity,
    Call,
)


def _region(start, end, drain_end):
    return [Activity(ANNOTATION, REGION, start, end), Activity(ANNOTATION, DRAIN, end,
                                                               drain_end)]


def _launch(at, correlation, name="cudaLaunchKernel"):
    return Activity(API, name, at, at + 3, correlation)


def test_each_device_activity_belongs_to_the_call_that_launched_it():
    acts = [
        *_region(100, 200, 260), *_region(300, 400, 450),
        # untimed work before the first call (a backward workload's forward pass)
        _launch(50, 1), Activity(KERNEL, "fwd", 60, 90, 1),
        # call 1: two kernels, one still running after the region's end, a copy, a sync
        _launch(110, 2), Activity(KERNEL, "gemm", 120, 150, 2),
        _launch(150, 3), Activity(KERNEL, "tail", 155, 230, 3),
        _launch(160, 4, "cudaMemcpyAsync"), Activity(COPY, "Memcpy DtoH", 231, 236, 4),
        Activity(API, "cudaStreamSynchronize", 170, 236, 5),
        # untimed work between the calls (zeroing gradients, the next forward pass)
        _launch(270, 6), Activity(KERNEL, "zero", 275, 280, 6),
        # call 2: a kernel found through its operator (launched from another thread with
        # no runtime record), one with neither, placed by its time in the region or drain
        Activity(OP, "aten::add", 310, 330, 77),
        Activity(KERNEL, "add", 320, 330, 0, linked=77),
        Activity(KERNEL, "orphan", 405, 415),
        Activity(FILL, "Memset", 340, 342, 8), _launch(335, 8, "cudaMemsetAsync"),
        # the region's own drain is no synchronisation of the region
        Activity(API, "cudaDeviceSynchronize", 401, 449, 9),
        # after the last call
        Activity(KERNEL, "late", 500, 510),
    ]
    assert trace.calls(acts) == [
        Call(kernels=2, copies=1, device_ns=30 + 75 + 5, syncs=1, by_time=0),
        Call(kernels=2, copies=1, device_ns=10 + 10 + 2, syncs=0, by_time=1,
             placed_by_time=("orphan",)),
    ]


def test_no_region_no_calls_and_a_region_without_its_drain_still_counts():
    assert trace.calls([_launch(1, 1), Activity(KERNEL, "k", 2, 3, 1)]) == []
    acts = [Activity(ANNOTATION, REGION, 0, 10), _launch(2, 1), Activity(KERNEL, "k", 3, 9, 1)]
    assert trace.calls(acts) == [Call(1, 0, 6, 0, 0)]


def test_synchronisations_are_the_host_calls_that_wait_for_the_device():
    for name in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                 "cuCtxSynchronize", "cuStreamSynchronize_ptsz"):
        assert trace.is_sync(Activity(API, name, 0, 1))
    for kind, name in ((API, "cudaLaunchKernel"), (API, "cudaStreamWaitEvent"),
                       (OP, "aten::synchronize"), (KERNEL, "Synchronize")):
        assert not trace.is_sync(Activity(kind, name, 0, 1))


class _Event:
    """kineto's event, as a torch build without ``activity_type`` exposes it."""

    def __init__(self, name, device, start, duration, correlation=0, linked=0):
        self._v = (name, device, start, duration, correlation, linked)

    def name(self):
        return self._v[0]

    def device_type(self):
        return self._v[1]

    def start_ns(self):
        return self._v[2]

    def duration_ns(self):
        return self._v[3]

    def correlation_id(self):
        return self._v[4]

    def linked_correlation_id(self):
        return self._v[5]


def test_an_annotations_span_on_the_device_is_no_kernel_of_the_region():
    """torch 2.11 on an H200 drew the region's annotation on the device's timeline too,
    spanning its kernels: read as a kernel, it counted one more and doubled the time."""
    cuda, cpu = "DeviceType.CUDA", "DeviceType.CPU"
    acts = trace.read([_Event(REGION, cpu, 100, 100), _Event(DRAIN, cpu, 200, 10),
                       _Event(REGION, cuda, 105, 90),
                       _Event("cudaLaunchKernel", cpu, 101, 2, 7), _Event("k", cuda, 110, 80, 7)])
    assert trace.calls(acts) == [Call(1, 0, 80, 0, 0)]


def test_events_without_their_type_are_read_by_device_and_name():
    cuda, cpu = "DeviceType.CUDA", "DeviceType.CPU"
    read = trace.read([
        _Event(REGION, cpu, 10, 5), _Event("aten::mm", cpu, 11, 2, 3),
        _Event("cudaLaunchKernel", cpu, 12, 1, 40, 3), _Event("ampere_sgemm", cuda, 13, 4, 40, 3),
        _Event("Memcpy HtoD (Pageable -> Device)", cuda, 20, 1),
        _Event("Memset (Device)", cuda, 21, 1), _Event("python", cpu, 0, 1)])
    assert [(a.kind, a.start_ns, a.end_ns) for a in read] == [
        (ANNOTATION, 10, 15), (OP, 11, 13), (API, 12, 13), (KERNEL, 13, 17), (COPY, 20, 21),
        (FILL, 21, 22), (trace.OTHER, 0, 1)]
    assert (read[3].correlation, read[3].linked) == (40, 3)


def test_a_real_cpu_profile_marks_every_call_and_launches_nothing():
    """torch's own profiler events (this torch's API) through the reader: the regions are
    found, one call each, and a CPU run has no device activity."""
    from torch.profiler import ProfilerActivity, profile

    clock = trace.ProfiledClock("cpu")
    x = torch.ones(64, 64)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            (x @ x).sum()  # outside every region
            with clock.region():
                y = (x @ x).sum().item()
    assert y == 64.0 * 64 * 64
    acts = trace.read(prof.profiler.kineto_results.events())
    assert {a.kind for a in acts} >= {ANNOTATION, OP}
    assert trace.calls(acts) == [Call(0, 0, 0, 0, 0)] * 3


@pytest.mark.parametrize("kind", ["kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime",
                                  "cuda_driver", "user_annotation", "cpu_op", "overhead",
                                  "gpu_user_annotation"])
def test_kinetos_activity_types_map_to_ours(kind):
    class Typed(_Event):
        def activity_type(self):
            return kind

    [got] = trace.read([Typed("x", "DeviceType.CPU", 0, 1)])
    assert got.kind == {"kernel": KERNEL, "gpu_memcpy": COPY, "gpu_memset": FILL,
                        "cuda_runtime": API, "cuda_driver": API, "user_annotation": ANNOTATION,
                        "cpu_op": OP}.get(kind, trace.OTHER)


def test_each_call_says_what_it_is_made_of_and_where_it_synchronised():
    acts = [
        *_region(100, 200, 260), *_region(300, 400, 450),
        _launch(110, 1), Activity(KERNEL, "gemm", 120, 150, 1),
        _launch(151, 2), Activity(KERNEL, "gemm", 152, 162, 2),
        _launch(163, 3), Activity(KERNEL, "tail", 165, 170, 3),
        # `if tensor:` inside aten::is_nonzero, itself inside a Python-level op
        Activity(OP, "aten::lstm", 105, 195, 40),
        Activity(OP, "aten::is_nonzero", 171, 190, 41),
        Activity(API, "cudaStreamSynchronize", 175, 185, 4),
        _launch(310, 5), Activity(KERNEL, "gemm", 320, 350, 5),
        Activity(API, "cudaDeviceSynchronize", 360, 365, 6),  # outside any operator
    ]
    first, second = trace.calls(acts)
    assert first.by_name == (("gemm", 2, 40), ("tail", 1, 5))
    assert first.sync_sites == (("aten::is_nonzero", 1),)
    assert second.by_name == (("gemm", 1, 30),)
    assert second.sync_sites == (("(outside any operator)", 1),)


def test_a_workloads_profile_is_the_median_call_bounded_and_printable(monkeypatch):
    def call(gemm_ns, extra):
        by_name = (("gemm", 2, gemm_ns),) + ((("elementwise\x1b[2J", 1, 7),) if extra else ())
        return Call(2 + extra, 0, gemm_ns + 7 * extra, extra, 0, by_name=by_name,
                    sync_sites=(("aten::item", 1),) if extra else ())

    # the extra kernel and sync in two calls of three: per call, the median has them
    got = trace.profile([call(100, 1), call(110, 1), call(90, 0)])
    assert got["kernel_time"] == {"gemm": 100, "elementwise\\x1b[2J": 7}
    assert got["kernel_launches"] == {"gemm": 2, "elementwise\\x1b[2J": 1}
    assert got["syncs"] == {"aten::item": 1}
    # in one call of three: not in the median call, so not in the profile
    assert trace.profile([call(100, 1), call(100, 0), call(100, 0)])["syncs"] == {}
    monkeypatch.setattr(trace, "KEEP", 3)
    monkeypatch.setattr(trace, "NAME_CHARS", 12)
    many = Call(7, 0, 0, 0, 0, by_name=(
        *((f"kernel_{i:02d}_long_name", 1, i) for i in range(1, 6)),
        ("void gemm<float, 1>", 1, 2), ("void gemm<float, 2>", 1, 2)))
    # the three costliest, names cut; two names alike once cut are one entry
    assert trace.profile([many])["kernel_time"] == {
        "kernel_05...": 5, "kernel_04...": 4, "void gemm...": 4}
