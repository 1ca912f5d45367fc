"""What ``compare`` and ``bisect`` print: text, markdown, JSON and GitHub annotations.

Benchmark names come from the measured project's suite: every one goes through
``printable`` for a terminal, ``markdown_cell`` for markdown and ``workflow_data`` for
annotations, so none can become markup or an escape sequence."""

from __future__ import annotations

import json

from torchpulse.analysis import sequential
from torchpulse.culprit.bisect import Bisection, odds
from torchpulse.culprit.compare import NOT_COMPARED, Comparison, Outcome
from torchpulse.reports.phrases import human
from torchpulse.text import markdown_cell, printable, workflow_data


def _value(o: Outcome, v: float | None) -> str:
    """A measured value in its benchmark's unit (instructions in full, seconds scaled); a
    bare number when no run declared the unit."""
    if v is None:
        return "-"
    return human(v, o.unit) if o.unit else f"{v:.4g}"


def _change(o: Outcome) -> str:
    if o.interval is None:
        return o.why
    iv = o.interval
    return (f"{iv.ratio:.3f}x [{iv.ratio_low:.3f}, {iv.ratio_high:.3f}]")


def _level(c: Comparison) -> str:
    return f"{(1 - sequential.per_look_alpha(c.alpha, c.max_rounds)) * 100:.2f} %"


def _headline(c: Comparison) -> str:
    counts = {d: sum(o.decision == d for o in c.outcomes) for d in (
        sequential.SLOWER, sequential.FASTER, sequential.EQUIVALENT, sequential.UNDECIDED,
        NOT_COMPARED)}
    said = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
    return (f"{c.head[:12]} against {c.base[:12]}: {said} (threshold {c.threshold:.0%}, "
            f"{c.count_threshold * 100:g}% on instruction counts, "
            f"{c.device_threshold * 100:g}% on kernel time, "
            f"alpha {c.alpha:g}, {c.runs} runs)")


def compare_text(c: Comparison) -> str:
    lines = [_headline(c), "",
             f"{'benchmark':50} {'verdict':12} {'head/base [' + _level(c) + ' interval]':34} "
             f"{'runs':>4}  base -> head"]
    for o in c.outcomes:
        lines.append(f"{printable(o.key):50} {o.decision:12} {_change(o):34} {o.rounds:>4}  "
                     f"{printable(_value(o, o.base))} -> {printable(_value(o, o.head))}")
    return "\n".join(lines) + "\n"


def compare_markdown(c: Comparison) -> str:
    slower = c.slower
    title = (f"{len(slower)} benchmark(s) slower beyond {c.threshold:.0%}" if slower
             else f"no benchmark slower beyond {c.threshold:.0%}")
    lines = [f"## torchpulse compare: {title}", "", markdown_cell(_headline(c)) + ".", "",
             f"| benchmark | verdict | head/base [{_level(c)} interval] | runs | base | head |",
             "|---|---|---|---:|---:|---:|"]
    for o in c.outcomes:
        lines.append(f"| {markdown_cell(o.key)} | {o.decision} | {markdown_cell(_change(o))} | "
                     f"{o.rounds} | {markdown_cell(_value(o, o.base))} | "
                     f"{markdown_cell(_value(o, o.head))} |")
    return "\n".join(lines) + "\n"


def compare_json(c: Comparison) -> str:
    def one(o: Outcome) -> dict:
        iv = o.interval
        return {"benchmark": o.key, "decision": o.decision, "runs": o.rounds,
                "base": o.base, "head": o.head, "unit": o.unit, "why": o.why or None,
                "ratio": iv.ratio if iv else None,
                "interval": [iv.ratio_low, iv.ratio_high] if iv else None,
                "level": iv.level if iv else None}

    return json.dumps({"base": c.base, "head": c.head, "threshold": c.threshold,
                       "alpha": c.alpha, "max_runs": c.max_rounds, "runs": c.runs,
                       "slower": len(c.slower),
                       "benchmarks": [one(o) for o in c.outcomes]}, indent=2) + "\n"


def compare_github(c: Comparison) -> str:
    lines = []
    for o in c.outcomes:
        if o.decision in (sequential.SLOWER, sequential.UNDECIDED, NOT_COMPARED):
            level = "error" if o.decision == sequential.SLOWER else "warning"
            lines.append(f"::{level} title={workflow_data(o.decision.capitalize())}::"
                         f"{workflow_data(o.key)}: {workflow_data(_change(o))} after "
                         f"{o.rounds} runs ({c.head[:12]} against {c.base[:12]})")
    return "\n".join(lines) + ("\n" if lines else "")


def render_comparison(c: Comparison, fmt: str) -> str:
    return {"text": compare_text, "markdown": compare_markdown, "json": compare_json,
            "github": compare_github}[fmt](c)


def bisection_text(b: Bisection, subjects: dict[str, str]) -> str:
    iv = b.baseline
    lines = [f"{printable(b.key)}: BAD {b.bad[:12]} against GOOD {b.good[:12]}: "
             f"{iv.ratio - 1:+.1%} [{iv.ratio_low - 1:+.1%}, {iv.ratio_high - 1:+.1%}] after "
             f"{iv.n} rounds: {b.step}"]
    runs = b.runs
    if b.found:
        probe = next((p for p in b.probes if p.commit == b.found), None)
        evidence = (f"probe {probe.interval.ratio - 1:+.1%} against the midpoint after "
                    f"{probe.rounds} rounds{', ' + odds(probe) if probe.llr is not None else ''}"
                    if probe else "BAD itself")
        lines.append(f"first bad commit: {b.found} {printable(subjects.get(b.found, ''))}")
        before = b.candidates[b.low] if b.low >= 0 else b.good
        lines.append(f"  evidence: {evidence}; its parent {before[:12]} is good; "
                     f"{len(b.probes)} probe(s), {runs} runs in all")
    elif b.bisected:
        lines.append(f"undecided: the first bad commit is one of these {len(b.suspects)} "
                     f"(a probe stayed undecided after {b.probes[-1].rounds} rounds; rerun with "
                     "a larger --max-runs to narrow it):")
        lines += [f"  {c[:12]} {printable(subjects.get(c, ''))}" for c in b.suspects]
    return "\n".join(lines) + "\n"
