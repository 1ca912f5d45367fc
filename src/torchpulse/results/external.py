"""The asv stub benchmarks that hold imported results, and their parameter values.

asv keeps a benchmark's points only while the suite still defines it (benchmarks.json is
rewritten from the suite on every run) and only for parameter values the suite lists. So each
importable metric has a stub class in benchmarks/external/ whose parameters are the values
already imported into the results tree, found by scanning it, plus fixed defaults.

Standard library only: the stubs load this file by path from the working tree, because the
package installed in asv's environment is an old commit's, which may predate this module.
For the same reason it reads the name lists (runners, autograd models and tasks) from the
choices modules beside it by path, not through the installed package.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


def _sibling(relative: str) -> ModuleType:
    """A standard-library-only module of the torchpulse tree this file is in, by path."""
    path = Path(__file__).resolve().parents[1] / relative
    name = "_torchpulse_tree_" + relative.removesuffix(".py").replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while executing it
        spec.loader.exec_module(module)
    return sys.modules[name]


_files = _sibling("files.py")  # a FIFO or a link to /dev/zero is not read
_fastrnns = _sibling("fastrnns/choices.py")
_autograd = _sibling("autograd/choices.py")
_registry = _sibling("workloads/registry.py")

# one character set for every parameter value that comes from a foreign file: no quotes,
# angle brackets, ampersands or backslashes, so nothing can inject markup into the site
PARAM_VALUE = re.compile(r"[A-Za-z0-9_.:/\[\]\-+=,@ ]{1,200}")
SUITE_DIR = "external"  # benchmarks/external/
DEFAULT_SOURCE = "external"  # results/<machine>/<sha8>-external.json
# asv --bench for every suite that runs: all but these stubs, which hold imported results
MEASURED = r"^(?!external\.)"
# ... on a run of one device, also without the suites that would only skip there: bench_gpu
# on the CPU; on CUDA the per-process suites (bench_gpu measures their workloads) and the
# instruction counts (CPU work only). A skip still costs asv a process per benchmark.
ON_CPU = r"^(?!external\.|bench_gpu\.)"
# (a family's per-process suite is bench_<family>)
ON_CUDA = rf"^(?!external\.|bench_({'|'.join((*_registry.FAMILIES, 'instructions'))})\.)"


def measured_on(device: str) -> str:
    """The --bench of every suite that measures on ``device`` (cpu, cuda, cuda:N)."""
    return ON_CPU if device == "cpu" else ON_CUDA


# asv needs at least one value per parameter; listed until real values are imported
PLACEHOLDER = "none"


@dataclass(frozen=True)
class Metric:
    method: str  # time_* (seconds) or track_*
    unit: str
    description: str

    @property
    def type(self) -> str:
        return "time" if self.method.startswith("time_") else "track"


@dataclass(frozen=True)
class Stub:
    module: str  # module under benchmarks/external/
    cls: str
    version: str
    param_names: tuple[str, ...]
    defaults: tuple[tuple[str, ...], ...]  # parameter values listed even before any import
    metrics: tuple[Metric, ...]

    def name(self, method: str) -> str:
        return f"{SUITE_DIR}.{self.module}.{self.cls}.{method}"

    @property
    def names(self) -> list[str]:
        return [self.name(m.method) for m in self.metrics]

    def metric(self, method: str) -> Metric:
        return next(m for m in self.metrics if m.method == method)


FASTRNNS_RUNNERS = tuple(_fastrnns.RUNNERS)
AUTOGRAD_MODELS = _autograd.MODELS
AUTOGRAD_TASKS = _autograd.TASKS

STUBS = {
    "fastrnns": Stub(
        "bench_fastrnns", "Fastrnns", "1", ("runner",), (FASTRNNS_RUNNERS,),
        (Metric("time_forward", "seconds", "fastrnns forward pass (imported OSS/PEP JSON)"),
         Metric("time_backward", "seconds", "fastrnns backward pass (imported OSS/PEP JSON)")),
    ),
    "pytest": Stub(
        "bench_pytest", "PytestBenchmark", "1", ("test",), ((PLACEHOLDER,),),
        (Metric("time_test", "seconds", "a pytest-benchmark test (imported JSON)"),),
    ),
    "dynamo": Stub(
        "bench_dynamo", "Dynamo", "1", ("device", "model"), (("cpu", "cuda"), (PLACEHOLDER,)),
        (Metric("track_latency_ratio", "compiled/eager",
                "compiled / eager latency: 1 / the harness's speedup (lower is better)"),
         Metric("time_latency", "seconds", "compiled latency (the harness's abs_latency)"),
         Metric("time_compilation", "seconds", "compile time (compilation_latency)"),
         Metric("track_memory_ratio", "compiled/eager",
                "compiled / eager peak memory: 1 / compression_ratio (lower is better)"),
         Metric("track_accuracy_failure", "failed",
                "1 when the accuracy status is not pass, else 0"),
         Metric("track_graph_breaks", "breaks", "graph breaks (the harness's graph_breaks)")),
    ),
    "pytorch": Stub(
        "bench_pytorch", "PyTorchV3", "1", ("series", "metric"),
        ((PLACEHOLDER,), (PLACEHOLDER,)),
        (Metric("track_value", "value",
                "a metric of PyTorch's benchmark database (v3 records), as recorded"),
         Metric("track_inverse", "1/value",
                "1 / a higher-is-better v3 metric (speedup, throughput ...): stored so that "
                "lower is better")),
    ),
    "autograd": Stub(
        "bench_autograd", "FunctionalAutograd", "1", ("model", "task"),
        (AUTOGRAD_MODELS, AUTOGRAD_TASKS),
        (Metric("time_task", "seconds", "a torch.autograd.functional task (imported markdown)"),),
    ),
}


def stub_for(name: str) -> tuple[Stub, Metric]:
    """The stub and metric behind a full benchmark name."""
    for stub in STUBS.values():
        for metric in stub.metrics:
            if stub.name(metric.method) == name:
                return stub, metric
    raise KeyError(name)


def param_repr(value: str) -> str:
    """asv stores parameter values as Python reprs: 'cudnn' -> "'cudnn'"."""
    return repr(value)


def read_config(path: str | os.PathLike[str]) -> dict:
    """An asv.conf.json, with asv's own parser (json5: comments anywhere, trailing commas)
    where it can be imported. asv's benchmark environments lack it; there the file must be
    JSON whose comments take whole lines (asv.conf.json as asv writes it)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        import json5
    except ImportError:
        lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
        return json.loads("\n".join(lines))
    return json5.loads(text)


def results_dir_of(config: str | os.PathLike[str]) -> Path:
    config = Path(config)
    return config.parent / str(read_config(config).get("results_dir") or "results")


def scan(results_dir: Path) -> dict[str, list[set[str]]]:
    """Per stub benchmark name, per parameter, the values (repr strings) stored in any
    results file under ``results_dir``; unreadable files are skipped (asv reports them)."""
    found: dict[str, list[set[str]]] = {}
    if not results_dir.is_dir():
        return found
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for path in sorted(machine_dir.glob("*.json")):
            if path.name == "machine.json":
                continue
            try:
                data = json.loads(_files.read_regular(path, _files.RESULTS_FILE_BYTES))
                columns = data["result_columns"]
                rows = data["results"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not isinstance(rows, dict) or "params" not in columns:
                continue
            at = columns.index("params")
            for name, row in rows.items():
                if not name.startswith(SUITE_DIR + "."):
                    continue
                params = row[at] if isinstance(row, list) and len(row) > at else None
                if not isinstance(params, list):
                    continue
                dims = found.setdefault(name, [set() for _ in params])
                if len(dims) == len(params):
                    for dim, dim_values in zip(dims, params, strict=True):
                        if isinstance(dim_values, list):
                            dim.update(v for v in dim_values if isinstance(v, str))
    return found


def imported_values(results_dir: Path, stub: Stub,
                    scanned: dict[str, list[set[str]]] | None = None) -> list[set[str]]:
    """Per parameter of ``stub``, the values imported for any of its benchmarks."""
    scanned = scan(results_dir) if scanned is None else scanned
    values: list[set[str]] = [set() for _ in stub.param_names]
    for name in stub.names:
        dims = scanned.get(name, [])
        if len(dims) == len(values):
            for mine, theirs in zip(values, dims, strict=True):
                mine.update(theirs)
    return values


def has_imports(stub: Stub, results_dir: Path | None,
                scanned: dict[str, list[set[str]]] | None = None) -> bool:
    """Whether the results tree holds anything imported for ``stub``. A stub without is not
    declared at all: asv would show its benchmarks as empty tiles."""
    if results_dir is None:
        return False
    return any(imported_values(results_dir, stub, scanned))


def stub_params(stub: Stub, results_dir: Path | None = None,
                scanned: dict[str, list[set[str]]] | None = None) -> list[list[str]]:
    """The stub's asv ``params``: defaults plus imported values, each dimension sorted with
    the defaults first (in their order), then the imported values alphabetically. Pass
    ``scanned`` (from ``scan``) to share one scan of the results tree between stubs."""
    imported = (imported_values(results_dir, stub, scanned) if results_dir is not None
                else None)
    params = []
    for i, defaults in enumerate(stub.defaults):
        listed = [param_repr(v) for v in defaults]
        extra = sorted(imported[i] - set(listed)) if imported is not None else []
        if defaults == (PLACEHOLDER,) and extra:
            listed = []  # the placeholder only keeps a dimension from being empty
        params.append(listed + extra)
    return params
