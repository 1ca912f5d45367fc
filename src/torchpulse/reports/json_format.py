"""The alert report as JSON: the contract other tools read (docs/alerts.md), every number
finite or null."""

from __future__ import annotations

import dataclasses
import json
import math

from torchpulse.analysis.model import STATUSES, Report
from torchpulse.analysis.trust import trust
from torchpulse.kinds import KINDS
from torchpulse.reports.phrases import bisect_command, repro_command, status_text, unmeasured


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: a number that is not finite is written as null."""
    return value if value is not None and math.isfinite(value) else None


def to_json(report: Report) -> str:
    alerts = [{
        "benchmark": a.key.benchmark, "params": list(a.key.params), "machine": a.key.machine,
        "env": a.key.env, "commit": a.commit, "previous_commit": a.previous_commit,
        "culprits": list(a.culprits), "before": a.before, "after": a.after,
        "ratio": _finite(a.ratio), "unit": a.unit, "pvalue": a.pvalue,
        "direction": a.direction, "higher_is_better": a.higher_is_better, "noisy": a.noisy,
        "below_threshold": a.below_threshold,
        "unmeasured_commits": unmeasured(report, a),
        "disturbed_before": list(a.disturbed_before), "confirmed": a.confirmed,
        "bisect": bisect_command(report, a),
        "repro": repro_command(a),
        "drifts": [{"first": first, "last": last} for first, last in a.drifts],
        "functions_of": a.functions_kind or None, "functions_total": a.functions_total,
        "functions": [{"name": f.name, "before": f.before, "after": f.after,
                       "change": f.change, "renamed_from": f.renamed_from}
                      for f in a.functions],
        "builds": [dataclasses.asdict(b) if b else None for b in a.builds]
        if any(a.builds) else None,
        "triage": a.triage.as_dict() if a.triage else None,
    } for a in report.alerts]
    triaged = [{
        "benchmark": m.key.benchmark, "params": list(m.key.params), "machine": m.key.machine,
        "env": m.key.env, "commit": m.commit, "before": m.before, "after": m.after,
        "unit": m.unit, "triage": m.entry.as_dict(),
    } for m in report.absorbed]
    verdicts = [{
        "benchmark": c.series.key.benchmark, "params": list(c.series.key.params),
        "machine": c.series.key.machine, "env": c.series.key.env, "status": c.status,
        "commits": c.commits, "commits_needed": c.needed, "latest": c.series.points[-1].value,
        "unit": c.series.unit, "cv": _finite(c.verdict.noise.cv),
        "within_cv": _finite(c.verdict.noise.within_cv), "mde": _finite(c.verdict.noise.mde),
        "toggling": c.verdict.noise.toggling, "reach": c.verdict.noise.reach,
        "disturbed": list(c.disturbed),
        "status_text": status_text(c), "rule": c.series.rule,
        "threshold": report.threshold_for(c.series),
        "higher_is_better": c.series.higher_is_better,
    } for c in report.checked]
    canary = {
        "levels": [{"machine": m, "env": e, "benchmark": b, "seconds": level,
                    "slow_above": report.canary.limits[(m, e, b)]}
                   for (m, e, b), level in sorted(report.canary.levels.items())],
        "readings": [{"machine": r.machine, "env": r.env, "commit": r.commit,
                      "benchmark": r.benchmark, "seconds": r.value, "ratio": r.ratio,
                      "slow": r.slow} for r in report.canary.readings],
        "disturbed_points": report.disturbed_points,
    }
    return json.dumps({"alerts": alerts, "series": report.series_count,
                       "thresholds": {kind: report.settings.threshold_for(kind)
                                      for kind in KINDS},
                       "counts": {s: report.count(s) for s in STATUSES},
                       "verdicts": verdicts, "canary": canary, "triaged": triaged,
                       "trust": [{**dataclasses.asdict(t), "trusted": t.trusted}
                                 for t in trust(report)],
                       "ignored": report.ignored}, indent=2) + "\n"
