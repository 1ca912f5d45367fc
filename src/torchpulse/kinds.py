"""The kinds of metric torchpulse judges, one row each, and the units that belong to each:
what the alert, the reports, compare and bisect, the canary's rule and the triage file's
statistics read instead of special cases of unit strings. Adding a unit of an existing
kind is one row of UNITS; a kind is one row of KINDS (and, for its own threshold, the
Settings field ``Kind.setting`` names: every command that judges takes its option from the
row). Standard library only.

- TIME: wall time, memory, ratios and anything not listed: the detector's steps with
  --threshold; a busy machine moves it.
- COUNT: callgrind's instructions, nearly deterministic: the same detector with the smaller
  --count-threshold; load does not move it, one run a side decides compare and bisect.
- DEVICE: a GPU region's summed kernel time (CUPTI): the detector with --device-threshold;
  launch gaps and a busy host do not move it, but it varies between processes.
- EXACT: exact counters (dynamo's graph breaks, graphs, eager frames, 1/calls captured; the
  kernels a CUDA region launches, its host synchronisations): no noise to estimate, any
  increase is a regression at the commit it appears (analysis/detector/exact.py).
"""

from __future__ import annotations

from dataclasses import dataclass

TIME, COUNT, DEVICE, EXACT = "time", "count", "device", "exact"

DEFAULT_THRESHOLD = 0.05  # smallest change worth an alert, as a fraction
# ... on counted work (callgrind's instructions): nearly deterministic, so a step well under
# the wall-time threshold is real. Not lower: over 20 commits that changed nothing counted,
# counts moved by up to 0.64 % (rnns/py/forward; docs/instructions.md, "Threshold"); PyTorch's
# tightest instruction-count gate margin is 1.5 %
DEFAULT_COUNT_THRESHOLD = 0.01
# ... on the kernel time of a GPU region (CUPTI's device time, unit "device seconds"): launch
# gaps and a busy host do not move it. Between processes of one commit, 74 workloads on an
# H200 moved by a median 0.13 %, 72 of them within 1 %; cuDNN's LSTM backward most (its
# smallest detectable step over 11 processes and two leases: 2.7 %). At 2 % a planted step
# of +2.0 % and +2.3 % was named with no false alarm (docs/gpu.md, run 12)
DEFAULT_DEVICE_THRESHOLD = 0.02


@dataclass(frozen=True)
class Kind:
    """How the series of one kind of metric are judged and spoken of."""

    name: str  # the rule: TIME, COUNT, DEVICE or EXACT
    label: str  # what its series are, in a table: 'instruction counts'
    setting: str | None  # the Settings field holding its threshold; None: any increase
    default_threshold: float | None
    # what else runs on the machine leaves its values alone: the machine canary never marks
    # its points disturbed, and a step in it is not measured again to confirm it
    load_independent: bool
    # a run repeats the last one's value: one run a side decides compare and bisect, read to
    # ``resolution`` (how far two runs of one commit may be apart, as a fraction)
    repeats: bool
    resolution: float = 0.0
    # how the thresholds line names it: '1% on instruction counts'
    threshold_phrase: str = ""
    # what its threshold option (--<setting>, every command that judges) says of it
    option_help: str = ""


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind(TIME, "times and memory", "threshold", DEFAULT_THRESHOLD, False, False,
         option_help="smallest change worth an alert, 0.05 or 5%: changes clearly below it "
         "are not reported"),
    Kind(COUNT, "instruction counts", "count_threshold", DEFAULT_COUNT_THRESHOLD, True, True,
         0.001, "on instruction counts",  # counts repeat to the instruction: 0.1 % is the
         # determinism the family is held to (docs/instructions.md)
         "the same for counted work (series in unit 'instructions'), which a busy machine "
         "does not move and one run of each commit decides"),
    Kind(DEVICE, "kernel time", "device_threshold", DEFAULT_DEVICE_THRESHOLD, True, False,
         0.0, "on kernel time", "the same for a GPU region's kernel time (series in unit "
         "'device seconds'), which launch gaps and a busy host do not move"),
    Kind(EXACT, "exact counters", None, None, True, True, 0.0, "on exact counters"),
)}


@dataclass(frozen=True)
class Unit:
    """A unit a benchmark declares, the kind of its series and how its values are written."""

    name: str
    kind: str
    # how a value reads: "time" (s, ms, us, ns), "bytes" (GiB ... B), "count" (every digit),
    # "inverse calls" (stored as 1/calls, lower is better: shown as calls), "plain"
    shown: str = "plain"
    # a drop is the regression (a throughput, a speedup stored as measured); a benchmark
    # rule of the triage file can say so per series too
    higher_is_better: bool = False
    # the stored profile that says what is behind a change of it, where one is kept
    # (torchpulse.instructions.profiles' kinds: a count's functions, a GPU region's kernels
    # or synchronisation sites); "" for none
    profile: str = ""


DEVICE_SECONDS = "device seconds"  # bench_gpu's kernel time
INVERSE_CALLS = "1/calls captured"  # dynamo's calls_captured, inverted: lower is better

UNITS: dict[str, Unit] = {u.name: u for u in (
    Unit("seconds", TIME, "time"),
    Unit("bytes", TIME, "bytes"),
    Unit("instructions", COUNT, "count", profile="instructions"),
    Unit(DEVICE_SECONDS, DEVICE, "time", profile="kernel_time"),
    Unit("graph breaks", EXACT, "count"),
    Unit("breaks", EXACT, "count"),
    Unit("graphs", EXACT, "count"),
    Unit("eager frames", EXACT, "count"),
    Unit(INVERSE_CALLS, EXACT, "inverse calls"),
    Unit("kernels", EXACT, "count", profile="kernel_launches"),
    Unit("synchronizations", EXACT, "count", profile="syncs"),
)}

# the unit of a benchmark asv declares none for, by its method's prefix
UNIT_BY_PREFIX = {"time_": "seconds", "mem_": "bytes", "peakmem_": "bytes"}


def unit_of(name: str) -> Unit:
    """The row of unit ``name``; an unlisted unit is a plain TIME one."""
    return UNITS.get(name) or Unit(name, TIME)


def kind_of(unit: str) -> Kind:
    """The kind of a series in ``unit``."""
    return KINDS[unit_of(unit).kind]
