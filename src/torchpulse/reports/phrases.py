"""The phrases every report shares: values in their units, changes, p-values, percentages,
a series' name and status, thresholds, what more commits would do, the canary's lines, the
functions that grew, and the commands that measure a change again or find its culprit. The
formats (text, markdown, github, json_format) and the site's pages say things in these
words, each escaping them for where they are shown."""

from __future__ import annotations

import math
import re
import shlex
from collections import defaultdict
from collections.abc import Callable, Collection

from torchpulse.analysis.model import (
    REGRESSION,
    STATUSES,
    TOO_FEW,
    UNSTABLE,
    Alert,
    Checked,
    Report,
)
from torchpulse.analysis.settings import Settings
from torchpulse.kinds import INVERSE_CALLS, KINDS, TIME, unit_of
from torchpulse.results.triage import FILE as TRIAGE_FILE
from torchpulse.results.triage import FIXED, Entry

NOISY_SHOWN = 10  # noisiest series listed in the noise report


_TIME_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))
_BYTE_SCALES = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))


def _scale(values: tuple[float, ...], unit: str) -> tuple[float, str] | None:
    """The one scale several values of ``unit`` are written in: the largest whose biggest
    value, rounded to three digits, is at least 1 (999.96 ms reads 1 s, never 1e+03 ms);
    None for units shown as they are."""
    scales = {"time": _TIME_SCALES, "bytes": _BYTE_SCALES}.get(unit_of(unit).shown)
    if scales is None:
        return None
    top = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    for scale, suffix in scales:
        if float(f"{top / scale:.3g}") >= 1:
            return scale, suffix
    return scales[-1]


def _number(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, never in exponent form (a level shown in
    another's scale may be far below 1: 0.0000005 s, not 5e-07 s)."""
    said = f"{value:.{digits}g}"
    if "e" not in said or not math.isfinite(value):
        return said
    if abs(value) >= 1:
        return f"{value:.0f}"
    places = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{places}f}".rstrip("0").rstrip(".")


def human(value: float, unit: str, *others: float) -> str:
    """A value in its unit, scaled to read well (seconds -> ms/us, bytes -> MiB ...); with
    ``others``, in the scale all of them share (a level and its change: one unit a line)."""
    found = _scale((value, *others), unit)
    if found is not None:
        scale, suffix = found
        if suffix == "B":
            return f"{value:.0f} B"
        return f"{_number(value / scale, 3)} {suffix}"
    shown = unit_of(unit).shown
    if shown == "inverse calls" and value > 0:  # stored inverted (lower is better): calls
        return f"{1.0 / value:.4g} calls captured"
    if shown in ("count", "inverse calls"):  # every digit (6,494,123, not 6.494e+06): a
        return f"{value:,.0f} {unit}"  # median per call may end in .5, which no reader needs
    return _number(value, 4) + ("" if unit == "unit" else f" {unit}")


def levels_text(before: float, after: float, unit: str) -> str:
    """'1 s -> 1.1 s': two levels of a series in one scale."""
    return f"{human(before, unit, after)} -> {human(after, unit, before)}"


def triage_text(entry: Entry) -> str:
    """What the triage file says of a change: 'accepted: a note', 'fixed by 1a2b3c4d'."""
    state = f"fixed by {entry.fixed_by[:8]}" if entry.state == FIXED else entry.state
    return f"{state}: {entry.note}" if entry.note else state


def triaged_text(report: Report) -> str:
    """'' or what the triage file took out of the series and left out: '3 changes taken out
    of their series by torchpulse.toml (2 accepted, 1 infrastructure); 4 series ignored'."""
    parts = []
    absorbed = report.absorbed
    if absorbed:
        states = defaultdict(int)
        for m in absorbed:
            states[m.entry.state] += 1
        said = "change taken out of its" if len(absorbed) == 1 else \
            "changes taken out of their"
        parts.append(f"{len(absorbed)} {said} series ("
                     + ", ".join(f"{n} {state}" for state, n in sorted(states.items())) + ")")
    if report.ignored:
        parts.append(f"{report.ignored} series ignored")
    return f"triage ({TRIAGE_FILE}): {'; '.join(parts)}" if parts else ""


def change(alert: Alert) -> str:
    """The change an alert reports: relative, or absolute when it rose from zero."""
    if not alert.before or alert.unit == INVERSE_CALLS:
        if alert.unit == INVERSE_CALLS and alert.before and alert.after:
            return f"{round(1 / alert.after - 1 / alert.before):+d} calls captured"
        return f"+{human(alert.after - alert.before, alert.unit, alert.before, alert.after)}"
    return f"{(alert.ratio - 1) * 100:+.1f}%"


def drift_text(alert: Alert) -> str:
    """'' or the drifts a change is made of: 'drift over 1a2b3c4d..5e6f7a8b'."""
    return ", ".join(f"drift over {a[:8]}..{b[:8]}" for a, b in alert.drifts)


# what an alert's list names, by the profile it comes from
# (torchpulse.instructions.profiles): what grew, and in what a call
_BEHIND = {"": ("functions", "own instructions a call"),
           "instructions": ("functions", "own instructions a call"),
           "kernel_time": ("kernels", "device ns a call"),
           "kernel_launches": ("kernels", "launches a call"),
           "syncs": ("synchronisation sites", "synchronisations a call")}


def behind(alert: Alert) -> tuple[str, str]:
    """What the alert's list names and in what: ('functions', 'own instructions a call'),
    ('kernels', 'device ns a call')."""
    return _BEHIND.get(alert.functions_kind, _BEHIND[""])


def functions_heading(alert: Alert) -> str:
    """'functions that grew most (own instructions a call)', 'kernels that grew most
    (device ns a call)'."""
    what, measure = behind(alert)
    return f"{what} that grew most ({measure})"


def share_text(alert: Alert, change: int) -> str:
    """' (62% of the change)': a function's part of the workload's net change, when the
    profiles say it."""
    total = alert.functions_total
    return f" ({change / total:.0%} of the change)" if total and change * total > 0 else ""


def function_lines(alert: Alert, width: int = 100) -> list[str]:
    """The functions (or kernels) that grew most in the step, one line each: '+41,200 (62%
    of the change)  name (1,200 -> 42,400)', and the name it had before where the code moved
    under another symbol; names longer than ``width`` are cut (C++ templates run to
    pages)."""
    return [f"{f.change:+,}{share_text(alert, f.change)}  {cut(f.name, width)} "
            f"({f.before:,} -> {f.after:,}"
            + (f", was {cut(f.renamed_from, width)})" if f.renamed_from else ")")
            for f in alert.functions]


def build_name(build) -> str:
    """'torch 2.14.1+cu130 (CUDA 13.0, git 1a2b3c4d5e6f)': a recorded build."""
    extra = [build.kind] + ([f"git {build.git_version[:12]}"] if build.git_version else []) \
        + (["debug"] if build.debug else [])
    return f"torch {build.version} ({', '.join(extra)})"


def builds_text(alert: Alert) -> str:
    """'' or the recorded builds either side of the change: 'torch 2.13.0+cpu (CPU) ->
    torch 2.14.1+cu130 (CUDA 13.0)'."""
    before, after = alert.builds
    if before is None and after is None:
        return ""
    return " -> ".join(build_name(b) if b else "not recorded" for b in (before, after))


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def p_text(alert: Alert) -> str:
    return "n/a" if alert.pvalue is None else f"{alert.pvalue:.2g}"


def qualifiers(alert: Alert) -> str:
    """What the change cell adds to a change: ' (noisy series, measured twice)'."""
    said = [text for flag, text in ((alert.noisy, "noisy series"),
                                    (alert.confirmed, "measured twice"),
                                    (alert.below_threshold, below_text(alert))) if flag]
    return f" ({', '.join(said)})" if said else ""


def below_text(alert: Alert) -> str:
    """What --history says of a change smaller than its series' threshold."""
    return (f"below its {(alert.threshold or 0) * 100:g}% threshold: the alert does not "
            "report it")


def unmeasured(report: Report, alert: Alert) -> int:
    """First-parent commits between the alert's commit and the measured one before it."""
    position = report.history.position if report.history else {}
    if alert.commit not in position or alert.previous_commit not in position:
        return 0
    return max(0, position[alert.commit] - position[alert.previous_commit] - 1)


def gap_text(report: Report, alert: Alert, it: str = "it") -> str:
    """What lies between the alert's commit and the measured one before it: '2 unmeasured
    commit(s) before it', or that some were measured on a disturbed machine (not counted),
    so the step may lie at those as well."""
    n, k = unmeasured(report, alert), len(alert.disturbed_before)
    if not k:
        return f"{n} unmeasured commit(s) before {it}"
    if k >= n:
        return f"{k} commit(s) before {it} measured on a disturbed machine"
    return f"{n} commit(s) before {it} unmeasured or measured on a disturbed machine ({k})"


def bisect_command(report: Report, alert: Alert) -> str | None:
    """The command that finds the culprit among unmeasured commits, when there are any and
    the series is one torchpulse measures (not an imported one)."""
    if not unmeasured(report, alert) or alert.key.benchmark.startswith("external."):
        return None
    return (f"torchpulse bisect {alert.previous_commit[:12]} {alert.commit[:12]} --bench "
            f"{shlex.quote(alert.key.name)} --machine {shlex.quote(alert.key.machine)}")


def repro_command(alert: Alert) -> str | None:
    """The one command that measures the change again on the user's machine: the commit
    before it against the newest commit it spans (its commit, or the end of its drift or its
    last culprit, as asv's Regressions tab shows it), this benchmark alone (an exact asv
    --bench). None for an imported series, which torchpulse cannot run."""
    if alert.key.benchmark.startswith("external."):
        return None
    name = alert.key.name
    bench = "^" + re.escape(name) + "$"
    return (f"torchpulse compare {alert.previous_commit[:12]} {alert.last[:12]} --bench "
            f"{shlex.quote(bench)}")


def after_text(alert: Alert, commit: Callable[[str], str]) -> str:
    """'after P' (``commit`` renders a hash), or, for a drift that rises from the first
    commit the series has, that it has none before."""
    if alert.previous_commit == alert.commit:
        return "the series' first commit"
    return f"after {commit(alert.previous_commit)}"


def thresholds_text(report: Report) -> str:
    """'threshold 5%', with the other rules the series checked are judged by:
    'threshold 5%, 1% on instruction counts, 2% on kernel time, any increase on exact
    counters'."""
    return thresholds_said(report.settings, report.rules)


def thresholds_said(settings: Settings, rules: Collection[str] | None = None,
                    exact: bool = True) -> str:
    """Each kind's threshold in ``settings`` (torchpulse.kinds), wall time's first:
    those of ``rules`` (every kind when None); ``exact``: exact counters' too."""
    parts = [f"threshold {settings.threshold * 100:g}%"]
    for kind in KINDS.values():
        if kind.name == TIME or (rules is not None and kind.name not in rules):
            continue
        level = settings.threshold_for(kind.name)
        if level is None and not exact:
            continue
        parts.append(f"{'any increase' if level is None else f'{level * 100:g}%'} "
                     f"{kind.threshold_phrase}")
    return ", ".join(parts)


def what_text(report: Report) -> str:
    return "change points" if report.history_mode else "active regressions"


def unstable(report: Report) -> list[Checked]:
    return [c for c in report.checked if c.status == UNSTABLE]


def upper_first(text: str) -> str:
    """``text`` as a sentence's start (str.capitalize would lower every other letter)."""
    return text[:1].upper() + text[1:]


def reach_text(report: Report) -> str:
    """'' or what more commits would do for the unstable series, at the noise measured so
    far: how many would then detect a threshold-size step, and from how many commits."""
    shaky = unstable(report)
    if not shaky:
        return ""
    reach = sorted(c.verdict.noise.reach for c in shaky if c.verdict.noise.reach is not None)
    toggling = sum(c.verdict.noise.toggling for c in shaky)
    never = len(shaky) - len(reach) - toggling
    parts = []
    if reach:
        span = f"{reach[0]}" if reach[0] == reach[-1] else f"{reach[0]} to {reach[-1]}"
        parts.append(f"{len(reach)} would be within the threshold from {span} commits")
    if never:
        parts.append(f"{never} would not at any number (they need a quieter machine or a "
                     "larger threshold)")
    if toggling:
        parts.append(f"{toggling} toggle between levels")
    return f"of {len(shaky)} unstable series, at the noise measured so far: {', '.join(parts)}"


def noisiest(report: Report) -> list[Checked]:
    judged = [c for c in report.checked if c.status != TOO_FEW]
    return sorted(judged, key=lambda c: -c.verdict.noise.cv)[:NOISY_SHOWN]


def noise_row(c: Checked) -> tuple[str, str, str, str, str]:
    n = c.verdict.noise
    return (c.series.key.label(), percent(n.cv, 2), percent(n.within_cv), percent(n.mde),
            status_text(c))


def counts(report: Report) -> str:
    """'2 regression, 150 ok, 5 unstable, 6 too few commits (of 163 series)'."""
    parts = [f"{report.count(s)} {s}" for s in STATUSES]
    return f"{', '.join(parts)} (of {report.series_count} series)"


def _span(texts: list[str]) -> str:
    """'a' when every text is the same, else 'lowest to highest' (texts sorted by value)."""
    return texts[0] if len(set(texts)) == 1 else f"{texts[0]} to {texts[-1]}"


def canary_lines(report: Report, only: str | None = None) -> list[str]:
    """What the machine canary said, per machine (or on machine ``only``) and environment,
    and how many points it marked disturbed."""
    canary = report.canary
    places: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    for where in sorted(canary.levels):
        if only is None or where[0] == only:
            places[where[:2]].append(where)
    lines = []
    for (machine, env), keys in places.items():
        readings = [r for r in canary.readings if (r.machine, r.env) == (machine, env)]
        slow = [r for r in readings if r.slow]
        usual = _span([human(v, "seconds") for v in sorted(canary.levels[k] for k in keys)])
        over = _span([percent(v - 1, 0) for v in sorted(canary.limits[k] for k in keys)])
        lines.append(f"machine canary on {machine}/{env}: {len(readings)} readings at "
                     f"{len(keys)} place(s), usually {usual}, {len(slow)} slow (over +{over})"
                     + (f" at {', '.join(sorted({r.commit[:8] for r in slow}))}" if slow
                        else ""))
    disturbed = sum(len(c.disturbed) for c in report.checked
                    if only is None or c.series.key.machine == only)
    if disturbed:
        lines.append(f"{disturbed} point(s) measured next to a slow reading are marked "
                     "disturbed and not counted")
    return lines


def percent(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: "-" when unknown, "inf" when infinite."""
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value * 100:.{digits}f}%"


def disturbed_text(c: Checked) -> str:
    """'' or what the disturbed points mean for this series' verdict."""
    n = len(c.disturbed)
    if not n:
        return ""
    if c.newest_disturbed:
        return ("newest commit measured on a disturbed machine: not counted, re-measure it"
                + (f" ({n} such commits)" if n > 1 else ""))
    return f"{n} commit{'s' if n > 1 else ''} measured on a disturbed machine, not counted"


def status_text(c: Checked) -> str:
    """A series' status with what qualifies it: commits so far, the detectable step, the
    commits measured on a disturbed machine."""
    disturbed = disturbed_text(c)
    return _qualified_status(c) + (f"; {disturbed}" if disturbed else "")


def _qualified_status(c: Checked) -> str:
    if c.status == TOO_FEW:
        return f"{TOO_FEW} ({c.commits} of {c.needed})"
    if c.status == UNSTABLE:
        noise = c.verdict.noise
        if noise.toggling:
            return f"{UNSTABLE} (toggles between levels, smallest detectable step " \
                   f"{percent(noise.mde)})"
        reach = (f"within the threshold from {noise.reach} commits at this noise"
                 if noise.reach is not None else "not within the threshold at this noise")
        return f"{UNSTABLE} (smallest detectable step {percent(noise.mde)}; {reach})"
    if c.status == REGRESSION and c.alert is not None and c.alert.noisy:
        return (f"{REGRESSION} (noisy series: the step exceeds its smallest detectable "
                f"step {percent(c.verdict.noise.mde)})")
    return c.status

