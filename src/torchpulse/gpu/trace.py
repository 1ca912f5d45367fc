"""A region's work on the GPU, read from a torch.profiler trace: per call of the region, the
kernels it launched, their summed device time and the host synchronisations it made.

Kernel durations come from CUPTI (through torch.profiler's CUDA activity): they do not see the
host's launch gaps, which are what moves an eager model's wall time between processes. The
kernel count and the synchronisations are exact: the same code launches the same kernels.

``ProfiledClock`` marks each call of a region in the trace: it drains the device first (so
nothing launched before the region runs inside it), wraps the region in a user annotation
(``REGION``) and its closing synchronisation in another (``DRAIN``). ``read`` turns the
profiler's events into plain ``Activity`` records, the one place that knows torch's event
API; ``calls`` attributes them to the calls, plain arithmetic a test can feed.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

REGION = "torchpulse::region"
DRAIN = "torchpulse::drain"

# Activity kinds
KERNEL, COPY, FILL = "kernel", "copy", "fill"  # on the device: kernels, memcpy, memset
API = "api"  # a CUDA runtime or driver call on the host (a launch, a synchronisation)
ANNOTATION = "annotation"  # a user annotation on the host (REGION, DRAIN)
OP = "op"  # an operator on the host (aten::mm)
OTHER = "other"
ON_DEVICE = frozenset({KERNEL, COPY, FILL})

# kineto's activity types (``_KinetoEvent.activity_type()``) -> our kinds; the rest (among
# them "gpu_user_annotation": an annotation's span drawn on the device's timeline, which
# covers the region's kernels and is none of them) is OTHER
_KINDS = {"kernel": KERNEL, "gpu_memcpy": COPY, "gpu_memset": FILL, "cuda_runtime": API,
          "cuda_driver": API, "user_annotation": ANNOTATION, "cpu_op": OP}


@dataclass(frozen=True)
class Activity:
    kind: str
    name: str
    start_ns: int
    end_ns: int
    # CUPTI's correlation id: a kernel and the runtime call that launched it share it
    correlation: int = 0
    # the operator a device activity or an API call belongs to (its correlation id)
    linked: int = 0


@dataclass(frozen=True)
class Call:
    """One call of a region on the device."""

    kernels: int
    copies: int  # memcpy and memset activities
    device_ns: int  # summed durations of its kernels, copies and fills
    syncs: int  # host calls that wait for the device (cuda*Synchronize, cu*Synchronize)
    by_time: int  # device activities placed by their time alone (no launch call found)
    placed_by_time: tuple[str, ...] = ()  # their names, for a diagnosis
    # what the call is made of, for naming what changed: (name, launches, device ns) of each
    # kernel, copy and fill by name; (site, count) of its synchronisations, the site being
    # the innermost host operator open when it was made
    by_name: tuple[tuple[str, int, int], ...] = field(default=(), compare=False)
    sync_sites: tuple[tuple[str, int], ...] = field(default=(), compare=False)


# what a workload's kernel profile keeps: the costliest names, each cut to a length (CUDA
# kernels' template names run to kilobytes)
KEEP = 200
NAME_CHARS = 500


def is_sync(activity: Activity) -> bool:
    """A host call that blocks until the device catches up: a device, stream, event or
    context synchronisation (``.item()``, ``.cpu()`` and ``if tensor:`` end in one)."""
    return activity.kind == API and "Synchronize" in activity.name


def _kind(event) -> str:
    kind = getattr(event, "activity_type", None)
    if kind is not None:
        return _KINDS.get(str(kind()), OTHER)
    # torch builds whose events do not say their type (2.11): by device and name
    on_device = "cuda" in str(event.device_type()).lower()
    name = event.name()
    if name in (REGION, DRAIN):  # on the device: the annotation's span, seen on an H200
        return OTHER if on_device else ANNOTATION
    if on_device:
        return COPY if name.startswith("Memcpy") else FILL if name.startswith("Memset") \
            else KERNEL
    if name.startswith(("cuda", "cu")) and "::" not in name:
        return API
    return OP if "::" in name else OTHER


def read(events: Iterable) -> list[Activity]:
    """Activities from kineto's events (``prof.profiler.kineto_results.events()``)."""
    out = []
    for e in events:
        start = int(e.start_ns())
        out.append(Activity(_kind(e), e.name(), start, start + int(e.duration_ns()),
                            int(e.correlation_id()), int(e.linked_correlation_id())))
    return out


def _windows(activities: Sequence[Activity]) -> list[tuple[Activity, Activity | None]]:
    """Each call's REGION annotation with the DRAIN that follows it, in time order."""
    regions = sorted((a for a in activities if a.kind == ANNOTATION and a.name == REGION),
                     key=lambda a: a.start_ns)
    drains = sorted((a for a in activities if a.kind == ANNOTATION and a.name == DRAIN),
                    key=lambda a: a.start_ns)
    out = []
    for region in regions:
        drain = next((d for d in drains if d.start_ns >= region.end_ns), None)
        out.append((region, drain))
    return out


def _index(windows: list[tuple[Activity, Activity | None]], t: int, *, drained: bool
           ) -> int | None:
    """The call whose region (with its drain when ``drained``) holds time ``t``."""
    for i, (region, drain) in enumerate(windows):
        end = drain.end_ns if drained and drain is not None else region.end_ns
        if region.start_ns <= t <= end:
            return i
    return None


def calls(activities: Sequence[Activity]) -> list[Call]:
    """The calls of the region in ``activities``, in order.

    A device activity belongs to the call whose region was open when the host launched it:
    its launch call (same correlation id) or, failing that, its operator (linked id) started
    inside the region. The autograd engine launches a backward pass's kernels from its own
    thread, inside the region's time all the same. An activity with neither is placed by its
    own start on the device, inside the region or its drain: the device was idle when the
    region began. Activities of the untimed work around the region belong to no call."""
    windows = _windows(activities)
    hosts = {a.correlation: a.start_ns for a in activities if a.kind == API}
    ops = {a.correlation: a.start_ns for a in activities if a.kind == OP}
    host_ops = [a for a in activities if a.kind == OP]
    counts = [[0, 0, 0, 0, 0] for _ in windows]  # kernels, copies, device ns, syncs, by time
    names: list[list[str]] = [[] for _ in windows]
    by_name: list[dict[str, list[int]]] = [{} for _ in windows]
    sites: list[dict[str, int]] = [{} for _ in windows]
    for a in activities:
        if a.kind in ON_DEVICE:
            launched = hosts.get(a.correlation) if a.correlation else None
            if launched is None and a.linked:
                launched = ops.get(a.linked)
            if launched is not None:
                i = _index(windows, launched, drained=False)
                by_time = 0
            else:
                i = _index(windows, a.start_ns, drained=True)
                by_time = 1
            if i is None:
                continue
            row = counts[i]
            row[0 if a.kind == KERNEL else 1] += 1
            row[2] += a.end_ns - a.start_ns
            row[4] += by_time
            if by_time:
                names[i].append(a.name)
            mine = by_name[i].setdefault(a.name, [0, 0])
            mine[0] += 1
            mine[1] += a.end_ns - a.start_ns
        elif is_sync(a):
            i = _index(windows, a.start_ns, drained=False)
            if i is not None:
                counts[i][3] += 1
                site = _site(host_ops, a.start_ns)
                sites[i][site] = sites[i].get(site, 0) + 1
    return [Call(*row, tuple(n), tuple((k, v[0], v[1]) for k, v in sorted(b.items())),
                 tuple(sorted(t.items())))
            for row, n, b, t in zip(counts, names, by_name, sites, strict=True)]


def _site(ops: Sequence[Activity], t: int) -> str:
    """The innermost host operator open at ``t``: where a synchronisation was made."""
    inside = [op for op in ops if op.start_ns <= t <= op.end_ns]
    return min(inside, key=lambda op: op.end_ns - op.start_ns).name if inside \
        else "(outside any operator)"


def profile(calls: Sequence[Call]) -> dict[str, dict[str, int]]:
    """What a workload's calls are made of, per call (the median over ``calls``; a name
    missing from a call counts 0 there): {"kernel_time": {name: device ns},
    "kernel_launches": {name: launches}, "syncs": {site: synchronisations}}, each the KEEP
    largest, names printable and cut to NAME_CHARS. What an alert on kernel time, the
    kernel count or the synchronisations compares between two commits."""
    def median(values: list[int]) -> int:
        return int(statistics.median_low(values)) if values else 0

    def kept(table: dict[str, list[int]]) -> dict[str, int]:
        values: dict[str, int] = {}
        for name, v in table.items():  # names alike once cut are one entry: their sum
            shown = _shown(name)
            values[shown] = values.get(shown, 0) + median(v + [0] * (len(calls) - len(v)))
        top = sorted(((v, n) for n, v in values.items() if v > 0), reverse=True)[:KEEP]
        return {n: v for v, n in top}

    time: dict[str, list[int]] = {}
    launches: dict[str, list[int]] = {}
    syncs: dict[str, list[int]] = {}
    for call in calls:
        for name, n, ns in call.by_name:
            time.setdefault(name, []).append(ns)
            launches.setdefault(name, []).append(n)
        for site, n in call.sync_sites:
            syncs.setdefault(site, []).append(n)
    return {"kernel_time": kept(time), "kernel_launches": kept(launches), "syncs": kept(syncs)}


def _shown(name: str) -> str:
    name = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 3] + "..."


class ProfiledClock:
    """A clock for the workloads' ``run(clock)``: each region call is marked for ``calls``.
    Use it inside a torch.profiler session with the CUDA activity."""

    def __init__(self, device: str) -> None:
        import torch

        self._torch = torch
        self._cuda = torch.device(device).type == "cuda"

    def _synchronize(self) -> None:
        if self._cuda:
            self._torch.cuda.synchronize()

    @contextmanager
    def region(self) -> Iterator[None]:
        record = self._torch.profiler.record_function
        self._synchronize()  # what ran before (an untimed forward pass) is not in the region
        with record(REGION):
            yield
        with record(DRAIN):
            self._synchronize()
