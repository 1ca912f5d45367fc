"""asv's results files through asv's own classes: the one module that uses asv's ``Results``
API, so that a change in a future asv breaks here, and in its test, rather than silently in
every reader and writer.

Everything goes through what ``Results`` offers publicly (its constructor, ``load``,
``add_result``, ``save``, the ``get_result_*`` accessors, ``benchmark_version``,
``started_at``, ``duration``) and
``asv.results.get_filename``; nothing reads its private attributes. Files are always written
by asv's own serialisation, into a scratch folder first, then renamed into place.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from asv import util as asv_util
from asv.results import Results, get_filename
from asv.runner import BenchmarkResult

from torchpulse.errors import TorchpulseError
from torchpulse.files import RESULTS_FILE_BYTES, check_regular

# the asv whose Results API this module was written against (tests/results checks it)
ASV_VERSION = "0.6.6"

Row = tuple[tuple[str, ...], object, list[float] | None]  # (params, value, samples)


class ResultsFileError(TorchpulseError, ValueError):
    """A file asv cannot read as a results file."""


_SHAPE_ERRORS = (asv_util.UserError, OSError, ValueError, KeyError, IndexError, TypeError,
                 AttributeError, RecursionError)


def load(path: Path, machine: str | None = None) -> Results:
    """A results file, read by asv and checked to hold what every reader here asks of it."""
    return load_with_rows(path, machine)[0]


def load_with_rows(path: Path, machine: str | None = None
                   ) -> tuple[Results, dict[str, list[Row]]]:
    """``load``, and every benchmark's ``rows``, which the check reads anyway."""
    try:
        # a FIFO would hang asv's open for good, a link to /dev/zero fill the memory
        check_regular(path, RESULTS_FILE_BYTES)
        results = Results.load(str(path), machine_name=machine)
        return results, _checked_rows(results)
    except _SHAPE_ERRORS as exc:  # asv reads a file of the wrong shape with no check
        raise ResultsFileError(f"{path}: not an asv results file ({exc})") from None


def _checked_rows(results: Results) -> dict[str, list[Row]]:
    """asv loads a file whose fields have the wrong types, and its accessors then fail (or
    sort a text date among numbers) in whichever reader asks first: asked here, once."""
    if not isinstance(results.commit_hash, str) or not isinstance(results.env_name, str):
        raise TypeError("its commit_hash and env_name are not text")
    if not isinstance(results.date, int) or isinstance(results.date, bool):
        raise TypeError("its date is not a whole number")
    out = {}
    for name in results.get_all_result_keys():
        grid = results.get_result_params(name) or []
        if not (isinstance(grid, list) and all(
                isinstance(axis, list) and all(isinstance(v, str) for v in axis)
                for axis in grid)):
            raise TypeError(f"the parameters of {name} are not lists of text")
        version = results.benchmark_version.get(name)
        if version is not None and not isinstance(version, str):
            raise TypeError(f"the version of {name} is not text")
        found = list(rows(results, name))
        for _, value, samples in found:
            if not (value is None or _number(value)):
                raise TypeError(f"a value of {name} is not a number")
            if samples is not None and not isinstance(samples, list):
                # a list whose items are not all numbers is read past: readers keep the
                # finite numbers of it
                raise TypeError(f"the samples of {name} are not a list")
        out[name] = found
    return out


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def check_tree(results_dir: Path) -> None:
    """ResultsFileError unless every JSON file asv reads in ``results_dir`` (its machines'
    files, benchmarks.json) is a regular file of bounded size inside the tree, and no
    machine's folder is a link out of it: asked before asv or torchpulse reads the tree or
    writes into it (asv would wait on a FIFO for good and read a link to
    /dev/zero until the memory runs out; a link out of the tree reads another program's
    file as a result). Cheap: one stat a file, nothing read."""
    if not results_dir.is_dir():
        return
    inside = results_dir.resolve()
    for folder in results_dir.iterdir():  # a machine's folder linked elsewhere: read or
        # written through, it is another program's folder
        if folder.is_symlink() and inside not in folder.resolve().parents:
            raise ResultsFileError(f"{folder}: a link out of the results tree; not read or "
                                   "written through: remove it")
    for path in [results_dir / "benchmarks.json", *sorted(results_dir.glob("*/*.json"))]:
        try:
            check_regular(path, RESULTS_FILE_BYTES)
            if path.is_symlink() and inside not in path.resolve().parents:
                raise OSError(f"{path}: a link out of the results tree")
        except FileNotFoundError:
            continue  # a dangling link or a file gone since: asv skips it too
        except OSError as exc:
            raise ResultsFileError(f"{exc}; not read (asv would hang on it, read it without "
                                   "end or read another program's file): remove it") from None


def new(params: dict[str, str], commit: str, date_ms: int, python: str,
        env_name: str) -> Results:
    """An empty results file of one commit; ``params`` are the machine's and the
    environment's fields (``machine`` among them), which identify a graph line."""
    return Results(params, {}, commit, date_ms, python, env_name, {})


def filename(machine: str, commit: str, env_name: str) -> str:
    """Where asv keeps that commit's results, relative to the results directory."""
    return get_filename(machine, commit, env_name)


def benchmarks(results: Results) -> list[str]:
    return list(results.get_all_result_keys())


def version(results: Results, name: str) -> str | None:
    return results.benchmark_version.get(name)


def params(results: Results, name: str) -> list[list[str]]:
    """The parameter values of a stored benchmark (asv repr strings), [] when it has none."""
    return [list(p) for p in results.get_result_params(name) or []]


def values(results: Results, name: str, grid: list[list[str]] | None = None) -> list[object]:
    """One value per parameter combination of ``grid`` (default: the stored parameters), in
    itertools.product order; None for a combination without a value. ``grid`` may hold
    values the file does not: asv maps the stored ones onto it."""
    if grid is None:
        grid = results.get_result_params(name) or []
    stored = results.get_result_value(name, grid)
    return stored if isinstance(stored, list) else [stored]


def rows(results: Results, name: str) -> Iterator[Row]:
    """(parameter combination, value, samples) for every combination of a benchmark."""
    grid = results.get_result_params(name) or []
    value = results.get_result_value(name, grid)
    samples = results.get_result_samples(name, grid)
    if not isinstance(value, list):
        value, samples = [value], [samples]
    combos = list(itertools.product(*grid)) if grid else [()]
    samples = samples if isinstance(samples, list) else [None] * len(combos)
    for combo, v, s in zip(combos, value, samples, strict=False):
        yield tuple(combo), v, s


def timing(results: Results, name: str) -> tuple[float | None, float | None]:
    """When a benchmark's job started (ms since the epoch, asv's JS timestamp) and how long
    it ran (seconds, every parameter combination included); None where not stored."""
    started = results.started_at.get(name)
    duration = results.duration.get(name)
    return (float(started) if isinstance(started, int | float) else None,
            float(duration) if isinstance(duration, int | float) else None)


def add(results: Results, name: str, version: str, params: list[list[str]],
        values: Sequence[float | None], samples: Sequence[Sequence[float] | None] | None = None,
        selected: set[int] | None = None, duration: float | None = None) -> None:
    """Store a benchmark's values (one per combination of ``params``, in itertools.product
    order; None leaves a combination without a value) and, where given, their samples
    (asv then keeps the samples and their statistics). ``selected``: the combinations this
    call sets; the others keep what was stored (all of them when None). ``duration``: how
    long the job ran (s), as asv run stores it; imports leave it out."""
    samples = list(samples) if samples is not None else [None] * len(values)
    number = [1 if s else None for s in samples]
    result = BenchmarkResult(result=list(values), samples=[list(s) if s else None
                                                           for s in samples],
                             number=number, errcode=0, stderr="", profile=None)
    bench = {"name": name, "version": version, "params": params}
    results.add_result(bench, result, record_samples=True, selected_idx=selected,
                       duration=duration)


def save(results: Results, results_dir: Path, relative: str) -> Path:
    """asv's own serialisation of ``results`` (whose place is ``relative``, from
    ``filename``), written into a scratch folder and renamed into place."""
    final = results_dir / relative
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=".write-"))
    try:
        results.save(str(staging))
        size = (staging / relative).stat().st_size
        if size > RESULTS_FILE_BYTES:  # every reader refuses it: the tree would be unreadable
            raise ResultsFileError(f"{final}: would be {size >> 20} MiB, over the "
                                   f"{RESULTS_FILE_BYTES >> 20} MiB every reader takes; not "
                                   "written")
        os.replace(staging / relative, final)
    finally:
        for leftover in sorted(staging.rglob("*"), reverse=True):
            leftover.rmdir() if leftover.is_dir() else leftover.unlink()
        staging.rmdir()
    return final
