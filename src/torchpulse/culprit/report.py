"""What ``compare`` and ``bisect`` print: text, markdown, JSON and GitHub annotations.

Benchmark names come from the measured project's suite: every one goes through
``printable`` for a terminal, ``markdown_cell`` for markdown and ``workflow_data`` for
annotations, so none can become markup or an escape sequence."""

from __future__ import annotations

import json

from torchpulse.analysis import sequential
from torchpulse.analysis.defaults import MIN_ROUNDS
from torchpulse.culprit.bisect import Bisection, odds
from torchpulse.culprit.compare import DECISIONS, NOT_COMPARED, Comparison, Outcome
from torchpulse.reports.phrases import build_name, cut, human, thresholds_said
from torchpulse.text import markdown_cell, printable, workflow_data


def _value(o: Outcome, v: float | None) -> str:
    """A measured value in its benchmark's unit (instructions in full, seconds scaled, in
    the scale its comparison's two values share); a bare number when no run declared the
    unit."""
    if v is None:
        return "-"
    both = [x for x in (o.base, o.head) if x is not None]
    return human(v, o.unit, *both) if o.unit else f"{v:.4g}"


def _change(o: Outcome) -> str:
    if o.interval is None:
        return o.why
    iv = o.interval
    return (f"{iv.ratio:.3f}x [{iv.ratio_low:.3f}, {iv.ratio_high:.3f}]")


def _level(c: Comparison) -> str:
    # a comparison of stored results (one look, max_rounds 1) spends all of alpha at once
    alpha = c.alpha if c.max_rounds < MIN_ROUNDS else sequential.per_look_alpha(
        c.alpha, c.max_rounds)
    return f"{(1 - alpha) * 100:.2f} %"


def _headline(c: Comparison) -> str:
    counts = {d: sum(o.decision == d for o in c.outcomes) for d in (
        sequential.SLOWER, sequential.FASTER, sequential.EQUIVALENT, sequential.UNDECIDED,
        NOT_COMPARED)}
    said = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
    return (f"{c.head[:12]} against {c.base[:12]}: {said} "
            f"({thresholds_said(c.settings, exact=False)}, alpha {c.alpha:g}, {c.runs} runs)")


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


def _compare_dict(c: Comparison) -> dict:
    def one(o: Outcome) -> dict:
        iv = o.interval
        return {"benchmark": o.key, "decision": o.decision, "runs": o.rounds,
                "base": o.base, "head": o.head, "unit": o.unit, "why": o.why or None,
                "ratio": iv.ratio if iv else None,
                "interval": [iv.ratio_low, iv.ratio_high] if iv else None,
                "level": iv.level if iv else None}

    return {"base": c.base, "head": c.head, "threshold": c.threshold, "alpha": c.alpha,
            "max_runs": c.max_rounds, "runs": c.runs, "slower": len(c.slower),
            "benchmarks": [one(o) for o in c.outcomes]}


def compare_json(c: Comparison) -> str:
    return json.dumps(_compare_dict(c), indent=2) + "\n"


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


# ---- two environments (torchpulse compare --python A --python B) ----------------------------

def _build_name(side) -> str:
    """'torch 2.14.1+cu130 (git 1a2b3c4d5e6f, CUDA 13.0)': what a side's process imported."""
    b = side.build
    if not b:
        return "torch not timed"
    extra = [f"git {str(b['git_version'])[:12]}"] if b.get("git_version") else []
    extra.append(f"CUDA {b['cuda']}" if b.get("cuda") else "CPU build")
    if b.get("debug"):
        extra.append("debug")
    return f"torch {b.get('torch')} ({', '.join(extra)})"


def _resident(side) -> str:
    """', 296 MiB resident once torch is imported': what every process of the build costs."""
    got = side.build.get("resident") if side.build else None
    return f", {human(got, 'bytes')} resident once torch is imported" if got else ""


def _by_workload(c: Comparison) -> dict[str, dict[str, Outcome]]:
    from torchpulse.culprit.environments import split_key

    rows: dict[str, dict[str, Outcome]] = {}
    for o in c.outcomes:
        workload, metric = split_key(o.key)
        rows.setdefault(workload, {})[metric] = o
    return rows


def _ratio(o: Outcome | None) -> str:
    if o is None:
        return "-"
    if o.interval is None:
        return o.why or "-"
    iv = o.interval
    if iv.ratio_low == iv.ratio_high or o.rounds <= 1:
        return f"{(iv.ratio - 1) * 100:+.2f} %"
    return f"{(iv.ratio - 1) * 100:+.1f} % [{(iv.ratio_low - 1) * 100:+.1f}, " \
           f"{(iv.ratio_high - 1) * 100:+.1f}]"


def _levels(o: Outcome | None) -> str:
    return "-" if o is None else f"{_value(o, o.base)} -> {_value(o, o.head)}"


def _environments_summary(c: Comparison, runs) -> list[str]:
    from torchpulse.culprit.environments import CPU_METRICS, GPU_METRICS, split_key

    a, b = runs.sides["A"], runs.sides["B"]
    said = []
    for metric in (*CPU_METRICS, *GPU_METRICS):
        mine = [o for o in c.outcomes if split_key(o.key)[1] == metric]
        if not mine:
            continue
        counts = {d: sum(o.decision == d for o in mine) for d in DECISIONS}
        said.append(f"{metric}: " + ", ".join(f"{n} {d}" for d, n in counts.items() if n))
    return [f"B {printable(_build_name(b))} against A {printable(_build_name(a))}",
            f"  A: {printable(a.python)}{_resident(a)}",
            f"  B: {printable(b.python)}{_resident(b)}",
            f"{len(_by_workload(c))} workloads; " + "; ".join(said),
            f"(slower or faster beyond {c.threshold * 100:g}% on wall time and peak memory, "
            f"{c.settings.count_threshold * 100:g}% on instruction counts"
            + (f", {c.settings.device_threshold * 100:g}% on kernel time, any change of the "
               "kernels or synchronizations a call" if _on_gpu(c) else "")
            + f"; alpha {c.alpha:g}; {c.runs} runs)"]


def _on_gpu(c: Comparison) -> bool:
    from torchpulse.culprit.environments import GPU_METRICS, split_key

    return any(split_key(o.key)[1] in GPU_METRICS for o in c.outcomes)


# what a moved metric's list names, by its name in culprit.environments: (what, of what, in
# what a call, whose growth, scale to the list's unit, that unit)
_BEHIND = {"instructions": ("functions", "counts", "own instructions a call", "the count", 1.0,
                            "instructions"),
           "kernel time": ("kernels", "kernel times", "device ns a call", "it", 1e9, "ns")}


def _moved_rows(c: Comparison, runs, metric: str) -> list[tuple[str, Outcome, tuple]]:
    """(workload, its ``metric``'s outcome, what is behind it) for every instruction count
    or kernel time decided slower or faster: what grew, or what shrank."""
    from torchpulse.culprit.environments import changes_behind

    out = []
    for workload, metrics in _by_workload(c).items():
        o = metrics.get(metric)
        if o is None or o.decision not in (sequential.SLOWER, sequential.FASTER):
            continue
        direction = 1 if (o.head or 0) >= (o.base or 0) else -1
        out.append((workload, o, changes_behind(runs.sides["A"], runs.sides["B"], workload,
                                                metric, direction)))
    return out


def _functions_text(moved: list[tuple[str, Outcome, tuple]], change: str,
                    metric: str = "instructions") -> list[str]:
    """What is behind each moved count or kernel time (name, its outcome, its functions or
    kernels), as lines; ``change``: how the difference is taken ("B - A")."""
    if not moved:
        return []
    what, of, measure, whose, scale, unit = _BEHIND[metric]
    lines = ["", f"the {what} behind the {of} that moved ({measure}, {change}; grew where "
             f"{whose} grew, shrank where it shrank):"]
    for name, o, functions in moved:
        total = ((o.head or 0) - (o.base or 0)) * scale
        lines.append(f"  {printable(name)}: {_ratio(o)}, {total:+,.0f} {unit}")
        lines += [f"    {printable(_function_line(f, total))}" for f in functions]
    return lines


def _functions_markdown(moved: list[tuple[str, Outcome, tuple]], a: str, b: str) -> list[str]:
    """The same as markdown tables, the sides' columns named ``a`` and ``b``."""
    lines = []
    for name, o, functions in moved:
        total = (o.head or 0) - (o.base or 0)
        lines += ["", f"**{markdown_cell(name)}**: instructions {markdown_cell(_ratio(o))}"
                  f" ({total:+,.0f} a call)", "",
                  f"| change | share | function | {a} | {b} | was |",
                  "|---:|---:|---|---:|---:|---|"]
        lines += [f"| {f.change:+,} | {f.change / total:.0%} | {markdown_cell(cut(f.name, 120))} "
                  f"| {f.before:,} | {f.after:,} | "
                  f"{markdown_cell(cut(f.renamed_from, 120)) if f.renamed_from else ''} |"
                  for f in functions if total]
    return lines


def _function_line(f, total: float) -> str:
    share = f" ({f.change / total:.0%} of the change)" if total else ""
    renamed = f", was {cut(f.renamed_from, 80)}" if f.renamed_from else ""
    return (f"{f.change:+,}{share}  {cut(f.name, 100)} ({f.before:,} -> {f.after:,}"
            f"{renamed})")


def _row(m: dict[str, Outcome], metrics: tuple[str, ...]) -> list[str]:
    """A workload's cells: per metric its levels A -> B, its change and its verdict."""
    from torchpulse.culprit.environments import INSTRUCTIONS, KERNELS, SYNCS

    cells = []
    for metric in metrics:
        o = m.get(metric)
        levels = "-" if o is None else (
            f"{o.base:,.0f} -> {o.head:,.0f}" if metric in (INSTRUCTIONS, KERNELS, SYNCS)
            and o.base is not None and o.head is not None else _levels(o))
        cells += [levels, _ratio(o), o.decision if o else ""]
    return cells


ENVIRONMENT_COLUMNS = ("workload", "instructions A -> B", "change", "", "wall time A -> B",
                       "change [interval]", "", "peak memory A -> B", "change", "")
GPU_COLUMNS = ("workload on CUDA", "kernel time A -> B", "change [interval]", "",
               "kernels A -> B", "change", "", "synchronizations A -> B", "change", "",
               "GPU memory A -> B", "change", "")


def _tables(c: Comparison) -> list[tuple[tuple[str, ...], tuple[str, ...],
                                         list[tuple[str, dict[str, Outcome]]]]]:
    """(columns, metrics, rows) of each table: the CPU one, and on CUDA the GPU one."""
    from torchpulse.culprit.environments import CPU_METRICS, GPU_METRICS

    tables = []
    for columns, metrics in ((ENVIRONMENT_COLUMNS, CPU_METRICS), (GPU_COLUMNS, GPU_METRICS)):
        rows = [(w, m) for w, m in _by_workload(c).items() if any(x in m for x in metrics)]
        if rows:
            tables.append((columns, metrics, rows))
    return tables


def environments_text(c: Comparison, runs) -> str:
    from torchpulse.culprit.environments import INSTRUCTIONS, KERNEL_TIME

    lines = _environments_summary(c, runs)
    for columns, metrics, found in _tables(c):
        rows = [list(columns)] + [[workload, *_row(m, metrics)] for workload, m in found]
        rows = [[printable(cell) for cell in row] for row in rows]
        widths = [max(len(row[k]) for row in rows) for k in range(len(columns))]
        lines.append("")
        for row in rows:
            lines.append("  ".join(cell.ljust(w) if k == 0 or k % 3 == 0 else cell.rjust(w)
                                   for k, (cell, w) in enumerate(zip(row, widths, strict=True))
                                   ).rstrip())
    lines += _functions_text(_moved_rows(c, runs, INSTRUCTIONS), "B - A")
    lines += _functions_text(_moved_rows(c, runs, KERNEL_TIME), "B - A", KERNEL_TIME)
    return "\n".join(lines) + "\n"


def environments_markdown(c: Comparison, runs) -> str:
    from torchpulse.culprit.environments import INSTRUCTIONS, KERNEL_TIME

    summary = _environments_summary(c, runs)
    lines = [f"## torchpulse compare: {markdown_cell(summary[0])}", "",
             *(f"- {markdown_cell(s.strip())}" for s in summary[1:])]
    for columns, metrics, found in _tables(c):
        lines += ["", "| " + " | ".join(columns) + " |",
                  "|---|" + "---:|---:|---|" * len(metrics)]
        for workload, m in found:
            lines.append("| " + " | ".join(markdown_cell(x)
                                           for x in (workload, *_row(m, metrics))) + " |")
    lines += _functions_markdown(_moved_rows(c, runs, INSTRUCTIONS), "A", "B")
    lines += _kernels_markdown(_moved_rows(c, runs, KERNEL_TIME))
    return "\n".join(lines) + "\n"


def _kernels_markdown(moved: list[tuple[str, Outcome, tuple]]) -> list[str]:
    """The kernels behind each moved kernel time, as a markdown list."""
    if not moved:
        return []
    lines = ["", "The kernels behind the kernel times that moved (device ns a call, B - A):", ""]
    for name, o, kernels in moved:
        total = ((o.head or 0) - (o.base or 0)) * 1e9
        lines.append(f"- {markdown_cell(name)}: {markdown_cell(_ratio(o))}, {total:+,.0f} ns")
        lines += [f"  - {markdown_cell(_function_line(f, total))}" for f in kernels]
    return lines


def environments_json(c: Comparison, runs) -> str:
    from torchpulse.culprit.environments import INSTRUCTIONS, KERNEL_TIME

    def one(o: Outcome | None) -> dict | None:
        if o is None:
            return None
        iv = o.interval
        return {"decision": o.decision, "a": o.base, "b": o.head, "unit": o.unit,
                "runs": o.rounds, "ratio": iv.ratio if iv else None,
                "interval": [iv.ratio_low, iv.ratio_high] if iv else None,
                "why": o.why or None}

    functions = {w: [{"name": f.name, "a": f.before, "b": f.after, "change": f.change,
                      "renamed_from": f.renamed_from} for f in found]
                 for w, _, found in _moved_rows(c, runs, INSTRUCTIONS)}
    kernels = {w: [{"name": f.name, "a": f.before, "b": f.after, "change": f.change}
                   for f in found] for w, _, found in _moved_rows(c, runs, KERNEL_TIME)}
    sides = {label: {"python": s.python, "build": s.build or None,
                     "count_failed": s.count_failed or None}
             for label, s in runs.sides.items()}
    return json.dumps({
        "a": sides["A"], "b": sides["B"], "threshold": c.threshold,
        "count_threshold": c.settings.count_threshold, "alpha": c.alpha,
        "max_runs": c.max_rounds,
        "runs": c.runs, "slower": len(c.slower),
        "workloads": [{"name": w, **{metric: one(o) for metric, o in m.items()},
                       "functions": functions.get(w, []), "kernels": kernels.get(w, [])}
                      for w, m in _by_workload(c).items()]}, indent=2) + "\n"


def render_environments(c: Comparison, runs, fmt: str) -> str:
    if fmt == "github":
        return compare_github(c)
    return {"text": environments_text, "markdown": environments_markdown,
            "json": environments_json}[fmt](c, runs)


# ---- two recorded commits (torchpulse compare BASE HEAD --stored) -----------------------------

def _stored_summary(s) -> list[str]:
    from torchpulse.culprit.stored import canary_ratio

    c = s.comparison
    base, head = (build_name(b) if b else "build not recorded" for b in s.builds)
    counts = {d: sum(o.decision == d for o in c.outcomes) for d in DECISIONS}
    said = ", ".join(f"{n} {d}" for d, n in counts.items() if n)
    lines = [f"{c.head[:12]} ({head}) against {c.base[:12]} ({base})",
             f"from the results stored on machine {s.machine}, nothing measured: {said} "
             f"({thresholds_said(c.settings, exact=False)}, alpha {c.alpha:g})",
             "counts decided from one value a side; timed series only from two or more "
             "records a side (one record's samples do not see the machine's noise between "
             "processes: `torchpulse compare --python A --python B` decides them)"]
    ratio = canary_ratio(c)
    if ratio is not None:
        lines.append(f"the machine canary moved {(ratio - 1) * 100:+.1f} % between the two "
                     "records" + (": the timed verdicts are the machine's as much as the "
                                  "build's" if abs(ratio - 1) > c.threshold else ""))
    if s.one_sided:
        lines.append(f"{s.one_sided} series recorded at only one of the two commits: "
                     "not compared")
    return lines


def _stored_functions(s) -> list[tuple[str, Outcome, tuple]]:
    return [(o.key, o, s.functions[o.key]) for o in s.comparison.outcomes
            if s.functions.get(o.key)]


def stored_text(s) -> str:
    lines = [printable(line) for line in _stored_summary(s)] + [""]
    lines += compare_text(s.comparison).splitlines()[2:]
    lines += _functions_text(_stored_functions(s), "head - base")
    return "\n".join(lines) + "\n"


def stored_markdown(s) -> str:
    summary = _stored_summary(s)
    lines = [f"## torchpulse compare: {markdown_cell(summary[0])}", "",
             *(f"- {markdown_cell(line)}" for line in summary[1:]), ""]
    lines += compare_markdown(s.comparison).splitlines()[4:]
    lines += _functions_markdown(_stored_functions(s), "base", "head")
    return "\n".join(lines) + "\n"


def stored_json(s) -> str:
    from dataclasses import asdict

    from torchpulse.culprit.stored import canary_ratio

    data = _compare_dict(s.comparison)
    data.update({
        "stored": True, "machine": s.machine, "one_sided": s.one_sided,
        "canary_ratio": canary_ratio(s.comparison),
        "builds": {"base": asdict(s.builds[0]) if s.builds[0] else None,
                   "head": asdict(s.builds[1]) if s.builds[1] else None},
        "functions": {k: [{"name": f.name, "base": f.before, "head": f.after,
                           "change": f.change, "renamed_from": f.renamed_from}
                          for f in found] for k, found in s.functions.items()}})
    return json.dumps(data, indent=2) + "\n"


def render_stored(s, fmt: str) -> str:
    if fmt == "github":
        return compare_github(s.comparison)
    return {"text": stored_text, "markdown": stored_markdown, "json": stored_json}[fmt](s)
