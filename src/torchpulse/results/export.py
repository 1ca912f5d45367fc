"""``torchpulse export pytorch-v3``: a results tree as records of PyTorch's benchmark database
(v3, the shape its upload-benchmark-results action takes; importers/pytorch_v3.py reads it).

One record per stored point (benchmark, parameter combination, commit, machine), with every
sample as ``benchmark_values``:

- points imported from v3 records go back as they came: the series' benchmark, model,
  backend, mode, dtype and device, the metric's name, and the values un-inverted (a
  higher-is-better metric is stored as 1/value);
- every other benchmark (torchpulse's suites, other imports) becomes benchmark
  ``asv:<module.Class>``, model ``<method>`` with its parameter values, metric
  ``<method>`` in the benchmark's asv unit (seconds for time_*, bytes for peakmem_*), device
  from a ``device`` parameter where it has one, else ``unknown``.

The runner is asv's machine.json; ``head_sha`` the measured commit; ``dependencies`` the
project's commit and the torch version asv recorded for the environment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from torchpulse.errors import TorchpulseError
from torchpulse.results import asv_results, gitrepo
from torchpulse.results.external import STUBS, SUITE_DIR
from torchpulse.results.importers.pytorch_v3 import series_fields
from torchpulse.results.project import Project

_PYTORCH = STUBS["pytorch"]


class ExportError(TorchpulseError, ValueError):
    """A range, machine or results tree that cannot be exported."""


def _commits(project: Project, spec: str | None) -> set[str] | None:
    """The full shas of ``spec`` (REV, or A..B: the first-parent commits after A up to B);
    None: every stored commit."""
    if spec is None:
        return None
    repo = project.local_repo()
    try:
        if ".." in spec:
            first, _, last = spec.partition("..")
            return set(gitrepo.first_parent_range(repo, gitrepo.resolve(repo, first),
                                                  gitrepo.resolve(repo, last)))
        return {gitrepo.resolve(repo, spec)}
    except gitrepo.GitError as exc:
        raise ExportError(f"range {spec!r}: {exc}") from None


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value


def _runner(machine: dict) -> dict:
    def count(key: str) -> int:
        """A whole number machine.json gives as text; 0 where it is none or past any
        machine's (a 400-digit ram overflowed the division below)."""
        text = str(machine.get(key, "0")).strip()
        return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else 0

    ram = count("ram")
    return {"name": str(machine.get("machine", "")), "type": str(machine.get("machine", "")),
            "cpu_info": str(machine.get("cpu", "")), "cpu_count": count("num_cpu"),
            "avail_mem_in_gb": round(ram / 2**30) if ram else 0, "gpu_info": "",
            "gpu_count": 0, "extra_info": {"os": str(machine.get("os", "")),
                                           "arch": str(machine.get("arch", ""))}}


def _values(value: object, samples: object) -> list[float]:
    """The finite numbers of a stored point: its samples, else its value. A damaged tree's
    NaN, Infinity or text is left out (JSON has no NaN, and v3 readers choke on it)."""
    found = samples if isinstance(samples, list) and samples else [value]
    return [float(v) for v in found
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]


def _record(name: str, combo: tuple[str, ...], values: list[float], unit: str | None,
            param_names: list[str]) -> dict:
    module_class, _, method = name.rpartition(".")
    if module_class == f"{SUITE_DIR}.{_PYTORCH.module}.{_PYTORCH.cls}" and len(combo) == 2:
        series, metric = (_unquote(v) for v in combo)
        fields = series_fields(series)
        if method == "track_inverse":
            values = [1.0 / v for v in values if v]
        extra = {"device": fields.get("device", "")}
        return {"benchmark": {"name": fields.get("benchmark", ""), "mode": fields.get("mode", ""),
                              "dtype": fields.get("dtype", ""), "extra_info": extra},
                "model": {"name": fields.get("model", ""), "type": "",
                          "backend": fields.get("backend", "")},
                "metric": {"name": metric, "benchmark_values": values}}
    params = {k: _unquote(v) for k, v in zip(param_names, combo, strict=False)}
    device = params.get("device") or "unknown"
    model = method + "".join(f"[{k}:{v}]" for k, v in params.items())
    return {"benchmark": {"name": f"asv:{module_class}", "mode": "", "dtype": "",
                          "extra_info": {"device": device}},
            "model": {"name": model, "type": "asv benchmark", "backend": ""},
            "metric": {"name": method, "benchmark_values": values,
                       "extra_info": {"unit": unit or ""}}}


def records(project: Project, spec: str | None = None,
            machines: Iterable[str] | None = None) -> list[dict]:
    """The v3 records of ``project``'s results tree: commits of ``spec``, ``machines`` (every
    machine when None), in machine, date and name order."""
    root = project.results_dir
    if not root.is_dir():
        raise ExportError(f"{root}: no results directory")
    asv_results.check_tree(root)
    wanted = _commits(project, spec)
    present = sorted(d.name for d in root.iterdir() if (d / "machine.json").is_file())
    chosen = present if machines is None else list(machines)
    unknown = [m for m in chosen if m not in present]
    if unknown:
        raise ExportError(f"no results of machine {unknown[0]!r} (machines: "
                          f"{', '.join(present) or 'none'})")
    try:
        benchmarks = json.loads((root / "benchmarks.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ExportError(f"{root / 'benchmarks.json'}: cannot read ({exc})") from None
    if not isinstance(benchmarks, dict):
        raise ExportError(f"{root / 'benchmarks.json'}: not a JSON object")
    branch = project.default_branch
    out: list[dict] = []
    for machine in chosen:
        try:
            info = json.loads((root / machine / "machine.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ExportError(f"{root / machine / 'machine.json'}: cannot read ({exc})") from None
        if not isinstance(info, dict):
            raise ExportError(f"{root / machine / 'machine.json'}: not a JSON object")
        runner = _runner({**info, "machine": machine})
        files = []
        for path in sorted((root / machine).glob("*.json")):
            if path.name == "machine.json":
                continue
            try:
                results = asv_results.load(path, machine)
            except asv_results.ResultsFileError as exc:
                raise ExportError(str(exc)) from None
            if wanted is None or results.commit_hash in wanted:
                files.append(results)
        for results in sorted(files, key=lambda r: (r.date or 0, r.commit_hash)):
            torch_version = str(results.params.get("torch", ""))
            for name in sorted(asv_results.benchmarks(results)):
                entry = benchmarks.get(name)
                entry = entry if isinstance(entry, dict) else {}
                names = entry.get("param_names")
                for combo, value, samples in asv_results.rows(results, name):
                    values = _values(value, samples)
                    if not values:
                        continue
                    record = _record(name, combo, values, str(entry.get("unit") or ""),
                                     [str(n) for n in names] if isinstance(names, list)
                                     else [])
                    record.update({
                        "inputs": {},
                        "dependencies": {
                            project.settings.get("project") or "project": {
                                "repo": str(project.settings.get("project_url") or ""),
                                "branch": branch, "sha": results.commit_hash,
                                "version": ""},
                            "torch": {"repo": "pytorch/pytorch", "branch": "", "sha": "",
                                      "version": torch_version}},
                        "runners": [runner],
                        "head_sha": results.commit_hash,
                        "head_branch": branch,
                        "repo": str(project.settings.get("project_url") or ""),
                        "timestamp": int((results.date or 0) // 1000),
                    })
                    out.append(record)
    if not out:
        raise ExportError("nothing to export: no stored values for that range and machine")
    return out


def render(found: list[dict], each_row: bool = False) -> str:
    """The records as a JSON list, or one per line (``each_row``: ClickHouse's JSONEachRow)."""
    if each_row:  # allow_nan=False: a NaN that got this far is a bug, not output
        return "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in found)
    return json.dumps(found, indent=1, sort_keys=True, allow_nan=False) + "\n"
