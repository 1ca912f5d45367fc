"""What `torchpulse triage list` and `triage stats` print: the triage file's entries, and
what the marks say about the detector (its false alarms as users judged them, and the
threshold that would have kept them quiet)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from torchpulse.analysis.triage import Mark, Suggestion, Tally
from torchpulse.reports.phrases import percent
from torchpulse.results.triage import FALSE_ALARMS, STATES, Triage
from torchpulse.text import printable

RULE_NAMES = {"time": "times and memory", "count": "instruction counts",
              "device": "kernel time", "exact": "exact counters"}


def entries_text(triage: Triage, where: str) -> str:
    if not triage:
        return f"{printable(where)}: no triage entries and no benchmark rules\n"
    lines = [f"{printable(where)}: {len(triage.entries)} triage entries, "
             f"{len(triage.rules)} benchmark rules"]
    for i, e in enumerate(triage.entries, 1):
        fixed = f" by {e.fixed_by[:12]}" if e.fixed_by else ""
        span = f"{e.commit[:12]}..{e.through[:12]}" if e.through else e.commit[:12]
        lines.append(f"  {i:>3}  {e.state}{fixed}  {span}  {e.series}"
                     + (f"  [machine {e.machine}]" if e.machine != "*" else "")
                     + (f"  -- {e.note}" if e.note else ""))
    for r in triage.rules:
        said = [f"threshold {r.threshold * 100:g}%" if r.threshold is not None else "",
                "ignored" if r.ignore else "", (r.direction or "").replace("_", " ")]
        lines.append(f"  rule {r.match}: {', '.join(s for s in said if s) or 'nothing'}")
    return "\n".join(printable(line) for line in lines) + "\n"


def entries_json(triage: Triage) -> str:
    return json.dumps({"triage": [e.as_dict() for e in triage.entries],
                       "benchmark": [r.as_dict() for r in triage.rules]}, indent=2) + "\n"


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def stats_text(marks: Sequence[Mark], tallies: Sequence[Tally],
               suggestions: Sequence[Suggestion], thresholds: dict[str, float | None]) -> str:
    landed = len(marks)
    lines = [f"torchpulse triage stats: the triage file speaks of {landed} change(s) in the "
             f"series; {sum(sum(t.states.values()) for t in tallies)} of them were rises the "
             "detector reported"]
    if tallies:
        lines.append(f"  {'series':24} {'machine':20} " + " ".join(f"{s:>14}" for s in STATES)
                     + f" {'false alarms':>13}")
        for t in tallies:
            lines.append(f"  {RULE_NAMES.get(t.rule, t.rule):24} {t.machine[:20]:20} "
                         + " ".join(f"{t.states.get(s, 0):>14}" for s in STATES)
                         + f" {t.false_alarms:>13}")
    for s in suggestions:
        name = RULE_NAMES.get(s.rule, s.rule)
        now = thresholds.get(s.rule)
        now_text = "any increase" if now is None else percent(now, 1)
        if not s.false_alarms:
            lines.append(f"  {name}: no false alarm marked (threshold now {now_text})")
        elif s.threshold is None:
            lines.append(f"  {name}: no threshold separates them: the largest false alarm "
                         f"{_fraction(s.largest_false)} is not below the smallest real change "
                         f"{_fraction(s.smallest_real)} (threshold now {now_text})")
        else:
            lines.append(f"  {name}: a threshold of {s.threshold * 100:.1f}% would have kept "
                         f"{s.false_alarms} false alarm(s) quiet (largest "
                         f"{_fraction(s.largest_false)}) and lost none of {s.real} real "
                         f"change(s)" + (f" (smallest {_fraction(s.smallest_real)})"
                                         if s.smallest_real is not None else "")
                         + f"; threshold now {now_text}")
    lines.append("false alarms: the rises marked " + " or ".join(sorted(FALSE_ALARMS))
                 + "; real: accepted, investigating or fixed")
    return "\n".join(printable(line) for line in lines) + "\n"


def stats_json(marks: Sequence[Mark], tallies: Sequence[Tally],
               suggestions: Sequence[Suggestion], thresholds: dict[str, float | None]) -> str:
    return json.dumps({
        "marks": [{"benchmark": m.key.benchmark, "params": list(m.key.params),
                   "machine": m.key.machine, "env": m.key.env, "commit": m.commit,
                   "rule": m.rule, "size": m.size if m.size != float("inf") else None,
                   "detected": m.detected, "triage": m.entry.as_dict()} for m in marks],
        "tally": [{"rule": t.rule, "machine": t.machine, "states": t.states,
                   "false_alarms": t.false_alarms} for t in tallies],
        "suggestions": [{"rule": s.rule, "false_alarms": s.false_alarms, "real": s.real,
                         "largest_false": s.largest_false, "smallest_real": s.smallest_real,
                         "threshold": s.threshold, "threshold_now": thresholds.get(s.rule)}
                        for s in suggestions]}, indent=2) + "\n"
