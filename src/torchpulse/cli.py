"""The ``torchpulse`` command line.

Exit codes (a contract CI scripts rely on): 0 success, 1 a failed check or a regression,
2 bad input or usage, always with a one-line message on stderr and never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported lazily at run time: `torchpulse --help` stays fast
    from tqdm import tqdm

    from torchpulse.presets import Preset

from torchpulse import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _device(name: str | None) -> str:
    import torch

    from torchpulse.presets import default_device

    device = name or default_device()
    try:
        kind = torch.device(device).type
    except RuntimeError:  # torch rejects unknown device strings with RuntimeError
        kind = None
    if kind not in ("cpu", "cuda"):
        raise UsageError(f"unsupported device {device!r}; use cpu or cuda")
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but CUDA is not available here")
    return device


def cmd_check(args: argparse.Namespace) -> int:
    from torchpulse import check
    from torchpulse.presets import resolve_preset
    from torchpulse.runners import get_runners

    device = _device(args.device)
    preset = resolve_preset(args.preset, device)
    checkable = check.checkable_runners()
    names = args.rnns or checkable
    runners = get_runners(names)
    unchecked = [r.name for r in runners if r.reference is None]
    if unchecked:
        verb = "is a reference" if len(unchecked) == 1 else "are references"
        raise UsageError(
            f"{', '.join(unchecked)} {verb}, not checked against one; "
            f"checkable runners: {', '.join(checkable)}"
        )
    if not args.tolerance > 0:
        raise UsageError("--tolerance must be positive")
    print(f"# preset {preset.name} on {device}, tolerance {args.tolerance:g} on "
          "max|difference| / max(1, max|reference|)", flush=True)
    print(check.format_header(), flush=True)
    failures = 0
    for result in check.run_checks(runners, preset, device, args.tolerance):
        print(check.format_row(result), flush=True)
        failures += not result.ok
    if failures:
        print(f"torchpulse check: {failures} of {len(runners)} runners failed", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def cmd_runners(args: argparse.Namespace) -> int:
    from torchpulse.runners import RUNNERS

    for runner in RUNNERS.values():
        print(f"{runner.name:<20} {runner.group:<8} {runner.description}")
    return EXIT_OK


# upstream flag -> Preset field
_SIZE_FLAGS = {"seqLength": "seq_length", "numLayers": "num_layers", "inputSize": "input_size",
               "hiddenSize": "hidden_size", "miniBatch": "mini_batch", "seed": "seed"}


def _bench_preset(args: argparse.Namespace, device: str) -> Preset:
    from torchpulse.presets import resolve_preset

    preset = resolve_preset(args.preset, device)
    changes = {field: getattr(args, flag) for flag, field in _SIZE_FLAGS.items()
               if getattr(args, flag, None) is not None}
    if args.warmup is not None:
        changes["warmup"] = args.warmup
    if args.nloops is not None:
        changes["nloops"] = args.nloops
    return preset.replace(**changes) if changes else preset


def _progress_bar(total: int, desc: str) -> tqdm:
    from tqdm import tqdm

    # disable=None: drawn only when stderr is a terminal, so logs and pipes stay clean
    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr, leave=False,
                disable=None, dynamic_ncols=True)


def cmd_bench(args: argparse.Namespace) -> int:
    from torchpulse import bench
    from torchpulse.fuser import FuserError, jit_settings

    device = _device(args.device)
    preset = _bench_preset(args, device)
    try:
        runners = bench.select_runners(args.rnns, args.cnns, args.group, args.variable_lstms)
    except bench.SelectionError as exc:
        raise UsageError(str(exc)) from None
    unsettled = [r.name for r in runners if preset.warmup < r.settle_iterations]
    if unsettled:
        print(f"torchpulse bench: note: warmup {preset.warmup} is too short for "
              f"{', '.join(unsettled)} to settle (measured: 4 iterations for TorchScript, "
              "2 for eager): their first timed iterations include one-off costs",
              file=sys.stderr, flush=True)
    table = args.print_json is None
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if table else (lambda _: None)
    outcomes: list[bench.Outcome] = []
    try:
        with jit_settings(args.fuser, args.executor, device):
            say(f"# preset {preset.name} on {device}: seqLength {preset.seq_length}, numLayers "
                f"{preset.num_layers}, inputSize {preset.input_size}, hiddenSize "
                f"{preset.hidden_size}, miniBatch {preset.mini_batch}, images "
                f"{preset.image_batch}x3x{preset.image_size}x{preset.image_size}; fuser "
                f"{args.fuser}, executor {args.executor}; warmup {preset.warmup}, nloops "
                f"{preset.nloops}; times in ms per iteration")
            for group in bench.groups_of(runners):
                say(f"Benchmarking {bench.GROUP_TITLES[group]}s...")
                say(bench.table_header(args.sep))
                for runner in (r for r in runners if r.group == group):
                    with _progress_bar(preset.warmup + preset.nloops, runner.name) as bar:
                        outcome = bench.bench_runner(runner, preset, device, preset.nloops,
                                                     preset.warmup, bar.update)
                    outcomes.append(outcome)
                    say(bench.table_row(outcome, args.sep))
                    if isinstance(outcome, bench.BenchFailure):
                        print(f"torchpulse bench: error: runner {outcome.runner} failed: "
                              f"{outcome.error}", file=sys.stderr, flush=True)
                say("")
    except FuserError as exc:
        raise UsageError(str(exc)) from None
    if args.print_json == "oss":
        print(bench.format_oss(outcomes, bench.groups_of(runners)), flush=True)
    elif args.print_json == "pep":
        print("\n".join(bench.pep_lines(outcomes)), flush=True)
    failed = [o.runner for o in outcomes if isinstance(o, bench.BenchFailure)]
    if failed:
        print(f"torchpulse bench: {len(failed)} of {len(outcomes)} runners failed: "
              f"{', '.join(failed)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_profile(args: argparse.Namespace) -> int:
    from torchpulse import bench, profiling
    from torchpulse.presets import resolve_preset

    device = _device(args.device)
    preset = resolve_preset(args.preset, device)
    if args.seed is not None:
        preset = preset.replace(seed=args.seed)
    if not args.rnns and not args.cnns:
        raise UsageError("name the runners to profile with --rnns and/or --cnns")
    groups = [g for g, names in (("rnns", args.rnns), ("cnns", args.cnns)) if names]
    try:
        runners = bench.select_runners(args.rnns, args.cnns, groups)
    except bench.SelectionError as exc:
        raise UsageError(str(exc)) from None
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} exists and is not a directory")
    warmup = preset.warmup if args.warmup is None else args.warmup
    failed = []
    for runner in runners:
        print(f"profiling {runner.name}: {warmup} warm-up + {args.nloops} profiled steps "
              f"(preset {preset.name}, {device})", file=sys.stderr, flush=True)
        try:
            files = profiling.profile_runner(runner, preset, device, args.nloops, warmup, output)
        except Exception as exc:  # name the runner, go on with the others
            failed.append(runner.name)
            print(f"torchpulse profile: error: runner {runner.name} failed: "
                  f"{bench.describe_error(exc)}", file=sys.stderr, flush=True)
            continue
        print(f"{runner.name}: {files.trace} ({files.events} events), {files.table}", flush=True)
    if failed:
        print(f"torchpulse profile: {len(failed)} of {len(runners)} runners failed: "
              f"{', '.join(failed)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _add_bench_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.bench import DEFAULT_CNNS, DEFAULT_RNNS, GROUPS
    from torchpulse.fuser import EXECUTORS, FUSERS

    p = sub.add_parser(
        "bench", help="time runners as upstream fastrnns bench (table, OSS or PEP JSON)",
        description="Time forward and backward of the fastrnns runners, as upstream's "
        "benchmarks/fastrnns/bench.py with the same flags. Sizes default to the preset's; "
        "every time printed is in milliseconds, on CPU too (upstream printed seconds there).",
    )
    p.add_argument("--preset", help="size preset: cuda, cpu or smoke "
                   "(default: $TORCHPULSE_PRESET, else by device)")
    for flag in ("seqLength", "numLayers", "inputSize", "hiddenSize", "miniBatch"):
        p.add_argument(f"--{flag}", type=_positive_int, help="(default: from the preset)")
    p.add_argument("--seed", type=_non_negative_int, help="input and weight seed "
                   "(default: the preset's)")
    p.add_argument("--warmup", type=_non_negative_int,
                   help="untimed iterations first (default: from the preset)")
    p.add_argument("--nloops", type=_positive_int,
                   help="timed iterations (default: from the preset)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--variable-lstms", "--variable_lstms", action="store_true",
                   help="also run vl_cudnn, vl_jit and vl_py (they ignore --seqLength)")
    p.add_argument("--sep", default=" ", help="table column separator (default: space)")
    p.add_argument("--print-json", nargs="?", const="oss", choices=("oss", "pep"),
                   help="print results on stdout instead of the table: oss (one JSON line of "
                   "means) or pep (one line per iteration); bare --print-json means oss")
    p.add_argument("--rnns", nargs="*", metavar="NAME",
                   help=f"LSTM runners (default: {' '.join(DEFAULT_RNNS)})")
    p.add_argument("--cnns", nargs="*", metavar="NAME",
                   help=f"ResNet runners (default: {' '.join(DEFAULT_CNNS)})")
    p.add_argument("--group", nargs="*", choices=GROUPS, default=list(GROUPS),
                   help="which lists run (default: rnns cnns, as upstream: giving --rnns "
                   "alone still runs the default ResNets)")
    p.add_argument("--fuser", choices=FUSERS, default="default",
                   help="TorchScript fuser (default: torch's own settings, as the asv suites)")
    p.add_argument("--executor", choices=EXECUTORS, default="default",
                   help="TorchScript executor; overrides what --fuser chose")
    p.set_defaults(func=cmd_bench)


def _add_profile_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile", help="profile runners with torch.profiler (Chrome trace + table)",
        description="Run each runner's training step under torch.profiler after the usual "
        "warm-up and write <runner>.trace.json (open in chrome://tracing or Perfetto) and "
        "<runner>.txt (key averages) into the output directory.",
    )
    p.add_argument("--rnns", nargs="+", metavar="NAME", help="LSTM runners to profile")
    p.add_argument("--cnns", nargs="+", metavar="NAME", help="ResNet runners to profile")
    p.add_argument("--preset", help="size preset: cuda, cpu or smoke "
                   "(default: $TORCHPULSE_PRESET, else by device)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--nloops", type=_positive_int, default=5,
                   help="profiled training steps (default: 5)")
    p.add_argument("--warmup", type=_non_negative_int,
                   help="unprofiled steps first (default: from the preset)")
    p.add_argument("--seed", type=_non_negative_int, help="(default: the preset's)")
    p.add_argument("--output", default="profile", help="directory for the files "
                   "(default: ./profile)")
    p.set_defaults(func=cmd_profile)


def _conf(path: str) -> tuple[Path, dict]:
    from torchpulse.external import read_conf

    conf_path = Path(path)
    try:
        return conf_path, read_conf(conf_path)
    except FileNotFoundError:
        raise UsageError(f"{conf_path}: no such asv config (give --config)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{conf_path}: cannot read asv config ({exc})") from None


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from torchpulse import gitrepo, importers, store

    conf_path, conf = _conf(args.config)
    results_dir = Path(args.results_dir) if args.results_dir else (
        conf_path.parent / conf.get("results_dir", "results"))
    if args.unit is not None and args.format not in importers.SCALABLE:
        raise UsageError(f"--unit applies to oss and pep only; {args.format} files carry "
                         "their own units")
    scale = importers.UNITS[args.unit] if args.unit else None
    try:
        store.check_name(args.machine, "--machine")
        store.check_name(args.env_name, "--env-name")
        machine_info = None
        if args.machine_info:
            try:
                raw = json.loads(Path(args.machine_info).read_text())
            except (OSError, ValueError) as exc:
                raise UsageError(f"{args.machine_info}: cannot read machine info ({exc})") \
                    from None
            machine_info = store.validate_machine_info(args.machine, raw, args.machine_info)
        repo = (conf_path.parent / conf.get("repo", ".")).resolve()
        sha = gitrepo.resolve(repo, args.commit)
        gitrepo.branch_containing(repo, sha, conf.get("branches") or ["HEAD"])
        parse = importers.formats()[args.format]
        records, notes = [], []
        for name in args.files:
            path = Path(name)
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise UsageError(f"{path}: no such file") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path}: cannot read ({exc})") from None
            records += parse(path, text, scale, notes)
        target = store.Target(results_dir, args.machine, sha,
                              gitrepo.commit_date_ms(repo, sha), args.env_name)
        summary = store.import_records(target, records, args.replace, machine_info)
    except (importers.InputError, store.StoreError, gitrepo.GitError) as exc:
        raise UsageError(str(exc)) from None
    for note in notes:
        print(f"torchpulse import: note: {note}", file=sys.stderr)
    print(f"imported {summary.added + summary.replaced} values ({summary.added} new, "
          f"{summary.replaced} replaced) of {len(summary.benchmarks)} benchmarks from "
          f"{len(args.files)} file(s) into {summary.path}")
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    from torchpulse import merge, store

    try:
        summary = merge.merge_trees([Path(s) for s in args.sources], Path(args.into))
    except store.StoreError as exc:
        raise UsageError(str(exc)) from None
    if summary.conflicts:
        shown = "; ".join(summary.conflicts[:3])
        more = f" (and {len(summary.conflicts) - 3} more)" if len(summary.conflicts) > 3 else ""
        raise UsageError(f"{len(summary.conflicts)} conflict(s), nothing written: {shown}{more}")
    print(f"merged {len(args.sources)} tree(s) into {args.into}: {summary.files_written} "
          f"results file(s) written, machines {', '.join(sorted(summary.machines)) or 'none'}, "
          f"{summary.benchmarks_added} benchmark(s) new to benchmarks.json")
    return EXIT_OK


def _add_merge_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge", help="merge asv results trees from several machines or shards",
        description="Combine asv results trees: machine directories side by side, results "
        "files of the same machine, commit and environment merged benchmark by benchmark, "
        "benchmarks.json the union. Conflicts (a benchmark with two results or two versions, "
        "one machine name with two descriptions) exit 2 and write nothing.",
    )
    p.add_argument("sources", nargs="+", metavar="SRC", help="results trees to merge")
    p.add_argument("--into", required=True, metavar="DIR", help="destination results tree "
                   "(created if missing; existing results are kept)")
    p.set_defaults(func=cmd_merge)


def _add_import_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.external import DEFAULT_SOURCE
    from torchpulse.importers import FORMAT_NAMES

    p = sub.add_parser(
        "import", help="import results other harnesses printed into the asv results tree",
        description="Parse FILEs of one FORMAT and merge them, as results of commit REV on "
        "machine NAME, into the results tree, where asv publish shows them under "
        "external.*. All-or-nothing: a malformed file or a value already stored (without "
        "--replace) changes nothing and exits 2.",
    )
    p.add_argument("format", choices=FORMAT_NAMES, metavar="FORMAT",
                   help=f"one of: {', '.join(FORMAT_NAMES)}")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--commit", required=True, metavar="REV",
                   help="the commit the results belong to (on a branch in asv.conf.json)")
    p.add_argument("--machine", required=True, metavar="NAME", help="asv machine name")
    p.add_argument("--config", default="asv.conf.json", help="asv config (default: "
                   "asv.conf.json): the repository, its branches and the results directory")
    p.add_argument("--results-dir", help="results tree (default: the config's results_dir)")
    p.add_argument("--env-name", default=DEFAULT_SOURCE, metavar="NAME",
                   help=f"results file suffix and graph line (default: {DEFAULT_SOURCE}); "
                   "use one per kind of run, e.g. inductor-training")
    p.add_argument("--machine-info", metavar="FILE", help="JSON with asv machine fields "
                   "(arch, cpu, num_cpu, os, ram) for a new machine")
    p.add_argument("--unit", choices=("ms", "s"), help="unit of oss/pep values (default: ms; "
                   "s for files from upstream's CPU path, which prints seconds labelled ms)")
    p.add_argument("--replace", action="store_true",
                   help="overwrite values already stored for this commit")
    p.set_defaults(func=cmd_import)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def _write_output(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    from torchpulse.store import write_text_atomically

    try:
        write_text_atomically(Path(output), text)
    except OSError as exc:
        raise UsageError(f"{output}: cannot write ({exc.strerror or exc})") from None


def cmd_alert(args: argparse.Namespace) -> int:
    from torchpulse import alert, alert_report
    from torchpulse.series import SeriesError

    conf_path, conf = _conf(args.config)
    try:
        report = alert.run(conf_path, conf, machine=args.machine, branch=args.branch,
                           since=args.since, alpha=args.alpha, threshold=args.threshold,
                           history_mode=args.history,
                           results_dir=Path(args.results_dir) if args.results_dir else None)
    except SeriesError as exc:
        raise UsageError(str(exc)) from None
    _write_output(alert_report.render(report, args.format), args.output)
    if args.output:
        print(f"torchpulse alert: {len(report.alerts)} "
              f"{'change points' if args.history else 'active regressions'} in "
              f"{report.series_count} series; report written to {args.output}",
              file=sys.stderr)
    regressions = [a for a in report.alerts if a.direction == "regression"]
    return EXIT_FAILED if regressions and not args.history else EXIT_OK


def _add_alert_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.alert import DEFAULT_ALPHA, DEFAULT_THRESHOLD
    from torchpulse.alert_report import FORMATS

    p = sub.add_parser(
        "alert", help="report the regressions still present at the newest commit",
        description="Build one series per benchmark, parameters, machine and environment "
        "from the asv results, in first-parent commit order of the branch, find its change "
        "points and report the regressions still present at the newest commit (with "
        "--history: every change point). Exit 0: none, 1: at least one regression, 2: bad "
        "input. Record samples (asv run --record-samples) for the best detection.",
    )
    p.add_argument("--config", default="asv.conf.json", help="asv config (default: "
                   "asv.conf.json): the repository, its branches, the results directory")
    p.add_argument("--results-dir", help="results tree (default: the config's results_dir)")
    p.add_argument("--machine", help="only this asv machine (default: every machine)")
    p.add_argument("--branch", help="branch whose first-parent history orders the commits "
                   "(default: the config's first branch)")
    p.add_argument("--since", metavar="REV", help="report only changes at commits after REV "
                   "(the older history still sets each series' noise and baseline)")
    p.add_argument("--history", action="store_true",
                   help="list every change point, old and new, up and down (exit 0)")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), "
                   "markdown, json or github (workflow annotations)")
    p.add_argument("--output", metavar="FILE", help="write the report here (default: stdout)")
    p.add_argument("--threshold", type=_fraction, default=DEFAULT_THRESHOLD,
                   help="smallest change worth an alert, as a fraction (default: "
                   f"{DEFAULT_THRESHOLD}): changes clearly below it are not reported")
    p.add_argument("--alpha", type=_fraction, default=DEFAULT_ALPHA,
                   help="significance of a change point within a series, and the false-"
                   f"discovery rate across series (default: {DEFAULT_ALPHA})")
    p.set_defaults(func=cmd_alert)


def cmd_evaluate_detection(args: argparse.Namespace) -> int:
    import tempfile
    import time

    from torchpulse import evaluation, synthetic

    def progress(message: str) -> None:
        print(f"[evaluate-detection] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="torchpulse-eval-") as tmp:
        project = Path(args.keep) if args.keep else Path(tmp)
        if project.exists() and any(project.iterdir()):
            raise UsageError(f"{project}: not empty (give --keep a new directory)")
        project.mkdir(parents=True, exist_ok=True)
        otava = None if args.no_otava else evaluation.otava_python(Path(args.otava_venv),
                                                                  progress)
        started = time.perf_counter()
        truths = synthetic.build(project, commits=args.commits, per_cell=args.per_cell,
                                 noise_series=args.noise_series, seed=args.seed)
        progress(f"{len(truths)} series x {args.commits} commits written to {project} "
                 f"({time.perf_counter() - started:.0f} s)")
        options = ["--alpha", str(args.alpha), "--threshold", str(args.threshold)]
        try:
            found, timings = evaluation.run_detectors(project, truths, options,
                                                      not args.no_asv, otava, progress)
        except evaluation.EvaluationError as exc:
            raise UsageError(str(exc)) from None
        scores = {name: evaluation.score(truths, f) for name, f in found.items()}
        text, met = evaluation.report(
            f"# Detection quality: {len(truths)} synthetic series, {args.commits} commits, "
            f"seed {args.seed}", scores, timings)
        sys.stdout.write(text)
        if args.output:
            _write_output(text, args.output)
    return EXIT_OK if met else EXIT_FAILED


def _add_evaluate_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.alert import DEFAULT_ALPHA, DEFAULT_THRESHOLD

    p = sub.add_parser(
        "evaluate-detection", help="measure how well alerts find planted regressions",
        description="Build a synthetic asv project (a git repository and results with "
        "planted steps, improvements, spikes and pure noise; several samples per commit, "
        "between-run jitter, outliers) in a temporary directory; run torchpulse alert, asv's "
        "publish-time detector and Apache Otava (defaults; in its own virtual environment) "
        "on it; print recall by step size and distance, location accuracy and false alarms "
        "side by side. Exit 1 when torchpulse misses one of its targets.",
    )
    p.add_argument("--commits", type=_positive_int, default=60, help="commits per series "
                   "(default: 60)")
    p.add_argument("--per-cell", type=_positive_int, default=40, help="series per step size,"
                   " distance and noise level (default: 40)")
    p.add_argument("--noise-series", type=_positive_int, default=400,
                   help="pure-noise series per noise level (default: 400)")
    p.add_argument("--seed", type=_non_negative_int, default=0)
    p.add_argument("--alpha", type=_fraction, default=DEFAULT_ALPHA,
                   help=f"torchpulse alert --alpha (default: {DEFAULT_ALPHA})")
    p.add_argument("--threshold", type=_fraction, default=DEFAULT_THRESHOLD,
                   help=f"torchpulse alert --threshold (default: {DEFAULT_THRESHOLD})")
    p.add_argument("--otava-venv", default=".venv-otava", metavar="DIR", help="virtual "
                   "environment for Apache Otava, created when missing (default: .venv-otava)")
    p.add_argument("--no-otava", action="store_true", help="skip Otava")
    p.add_argument("--no-asv", action="store_true", help="skip asv's detector (asv publish)")
    p.add_argument("--keep", metavar="DIR", help="build the project in DIR and keep it")
    p.add_argument("--output", metavar="FILE", help="also write the tables to FILE")
    p.set_defaults(func=cmd_evaluate_detection)


def cmd_publish(args: argparse.Namespace) -> int:
    from torchpulse import publish, site_assets

    conf_path, conf = _conf(args.config)
    node_modules = site_assets.find_node_modules(args.assets, conf_path.parent)
    try:
        html_dir = publish.publish(
            conf_path, conf, node_modules, range_spec=args.range, pull=not args.no_pull,
            html_dir=Path(args.html_dir) if args.html_dir else None,
            progress=lambda message: print(message, flush=True))
    except (site_assets.AssetError, publish.PublishError) as exc:
        raise UsageError(str(exc)) from None
    print(f"site written to {html_dir}/ (self-contained); view it with "
          f"`torchpulse serve`, or copy the folder to any static host")
    return EXIT_OK


def _add_publish_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "publish", help="asv publish, made to work offline, plus torchpulse's summary page",
        description="Run asv publish, then copy the scripts and styles its pages load from "
        "CDNs into the site (from node_modules, installed by `npm ci`), point index.html at "
        "them, and add torchpulse.html (per machine: latest values, changes, noise and the "
        "alert report), linked from asv's navigation bar. The site is built beside html_dir "
        "and replaces it only when complete. Exit 2 when an asset is missing or asv fails.",
    )
    p.add_argument("range", nargs="?", help="commit range, as for asv publish")
    p.add_argument("--config", default="asv.conf.json", help="asv config (default: "
                   "asv.conf.json)")
    p.add_argument("--html-dir", "-o", help="output directory (default: the config's html_dir)")
    p.add_argument("--no-pull", action="store_true", help="do not pull the repository")
    p.add_argument("--assets", metavar="DIR", help="node_modules folder with the site's "
                   "assets (default: $TORCHPULSE_ASSETS, else the project's node_modules, "
                   "else torchpulse's checkout's)")
    p.set_defaults(func=cmd_publish)


def cmd_serve(args: argparse.Namespace) -> int:
    from torchpulse import serve
    from torchpulse.publish import html_dir_of

    if args.html_dir:
        html_dir = Path(args.html_dir)
    else:
        conf_path, conf = _conf(args.config)
        html_dir = html_dir_of(conf_path, conf)
    try:
        serve.serve(html_dir, args.host, args.port,
                    announce=lambda message: print(message, flush=True))
    except serve.ServeError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def _port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, got {text!r}")
    return value


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.serve import DEFAULT_HOST, DEFAULT_PORT

    p = sub.add_parser(
        "serve", help="serve the published site over HTTP on loopback",
        description="Serve the published site (asv's pages need HTTP; file:// does not "
        "work) until Ctrl-C. Binds 127.0.0.1 unless --host says otherwise; prints the URL.",
    )
    p.add_argument("--config", default="asv.conf.json", help="asv config whose html_dir to "
                   "serve (default: asv.conf.json)")
    p.add_argument("--html-dir", help="serve this directory instead")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default: "
                   f"{DEFAULT_HOST}; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.set_defaults(func=cmd_serve)


def _names(values: list[str] | None) -> list[str] | None:
    """--model-filter a b, or a,b (upstream takes one comma-separated string)."""
    if not values:
        return None
    return [n for v in values for n in v.split(",") if n]


def cmd_autograd(args: argparse.Namespace) -> int:
    if args.action == "compare":
        return _autograd_compare(args)
    import torch

    from torchpulse.autograd import run, table
    from torchpulse.presets import resolve_preset

    try:
        pairs = run.select(_names(args.model_filter), _names(args.task_filter))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.gpu == -2:
        args.gpu = 0 if torch.cuda.is_available() else -1
    if args.gpu >= 0 and not (torch.cuda.is_available() and args.gpu < torch.cuda.device_count()):
        raise UsageError(f"--gpu {args.gpu}: no such CUDA device here (use --gpu -1 for CPU)")
    device = torch.device("cpu" if args.gpu < 0 else f"cuda:{args.gpu}")
    preset = resolve_preset(args.preset, device.type)
    threads = args.num_threads or preset.num_threads
    if threads:
        torch.set_num_threads(threads)
    timings = []
    for model, task in pairs:
        t = run.run_model(model, task, device, preset.name, args.num_iters, args.seed)
        timings.append(t)
        print(f"Results for model {t.model} on task {t.task}: {t.mean}s (var: {t.var})",
              flush=True)
    if args.output:
        _write_output(table.to_markdown(timings), args.output)
    return EXIT_OK


def _autograd_compare(args: argparse.Namespace) -> int:
    from torchpulse.autograd import table

    try:
        before, after = table.read(Path(args.before)), table.read(Path(args.after))
    except table.TableError as exc:
        raise UsageError(str(exc)) from None
    if not set(before) & set(after):
        raise UsageError(f"{args.before} and {args.after} have no (model, task) in common")
    sys.stdout.write(table.compare(before, after))
    return EXIT_OK


def _add_autograd_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "autograd", help="time torch.autograd.functional tasks over the models (upstream's "
        "functional_autograd_benchmark)",
        description="Run each model's tasks (vjp, jvp, vhp, hvp, jacobian, hessian and the "
        "vectorised jacfwd, jacrev, hessian_fwdrev, hessian_revrev) as upstream's "
        "functional_autograd_benchmark: one warm-up call, then --num-iters timed calls; "
        "--output writes its markdown table (| model | task | mean | var |, seconds). "
        "`torchpulse autograd compare BEFORE AFTER` prints two tables side by side.",
    )
    p.add_argument("--model-filter", nargs="+", metavar="M", help="models to run (names, "
                   "or one comma-separated list; default: all)")
    p.add_argument("--task-filter", nargs="+", metavar="T", help="tasks to run (default: "
                   "each model's own)")
    p.add_argument("--num-iters", type=_non_negative_int, default=10,
                   help="timed calls per pair (default: 10; 0: the warm-up only)")
    p.add_argument("--gpu", type=int, default=-2, help="GPU index, -1 for the CPU, -2 "
                   "(default) for a GPU when there is one")
    p.add_argument("--num-threads", type=_positive_int, help="torch threads (default: the "
                   "preset's: 1 for cpu and smoke, torch's own for cuda)")
    p.add_argument("--preset", help="sizes: cuda (upstream's), cpu or smoke (default: "
                   "$TORCHPULSE_PRESET, else by device)")
    p.add_argument("--seed", type=_non_negative_int, default=0)
    p.add_argument("--output", metavar="FILE", help="write the markdown table here")
    p.set_defaults(func=cmd_autograd, action=None)
    actions = p.add_subparsers(dest="action", metavar="compare")
    c = actions.add_parser("compare", help="before/after/speedup table of two outputs")
    c.add_argument("before", metavar="BEFORE")
    c.add_argument("after", metavar="AFTER")


def cmd_dynamo(args: argparse.Namespace) -> int:
    from torchpulse.compile import harness
    from torchpulse.compile.config import ConfigError
    from torchpulse.compile.providers import ProviderError
    from torchpulse.compile.run import SelectionError
    from torchpulse.presets import resolve_preset

    if args.list:
        return _dynamo_list(args)
    if not (args.performance or args.accuracy) or args.training is None:
        raise UsageError("say --performance or --accuracy, and --inference or --training "
                         "(or --list)")
    device = _device(args.device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    size = args.size or resolve_preset(None, kind).name
    mode = "performance" if args.performance else "accuracy"
    output = Path(args.output) if args.output else harness.default_output(
        mode, args.training, args.backend, kind)
    if output.is_dir() or not output.parent.is_dir():
        raise UsageError(f"--output {output}: not a file in an existing directory")
    options = harness.Options(
        mode=mode, training=args.training, backend=args.backend, device=device, size=size,
        output=output, filters=args.filter or (), excludes=args.exclude or (),
        repeat=args.repeat, batch_size=args.batch_size, timeout=args.timeout,
        config=Path(args.config) if args.config else None, skip_slow=args.skip_slow,
        no_skip=args.no_skip, models_from=args.models_from or (), threads=args.threads)
    try:
        results = harness.run(options, out=lambda line: print(line, flush=True))
    except (ConfigError, ProviderError, SelectionError) as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def _dynamo_list(args: argparse.Namespace) -> int:
    from torchpulse.compile.config import ConfigError, load
    from torchpulse.compile.providers import ProviderError, available_models

    try:
        cfg = load(Path(args.config) if args.config else None)
        models = available_models(args.models_from or ())
        cfg.check_names(models)
    except (ConfigError, ProviderError) as exc:
        raise UsageError(str(exc)) from None
    for name, spec in models.items():
        notes = [reason for device in ("cpu", "cuda")
                 if (reason := cfg.skip_reason(name, device, skip_slow=True))]
        if name in cfg.non_deterministic:
            notes.append("non_deterministic")
        extra = f"  [{'; '.join(dict.fromkeys(notes))}]" if notes else ""
        print(f"{name:24s} {spec.source:12s} {spec.description}{extra}")
    return EXIT_OK


def _add_dynamo_parser(sub: argparse._SubParsersAction) -> None:
    from torchpulse.compile.choices import BACKENDS, SIZES

    p = sub.add_parser(
        "dynamo", help="eager vs torch.compile over the model zoo (upstream's dynamo "
        "benchmark harness: speedup, compile time, memory, accuracy)",
        description="Run each zoo model eager and compiled, one model at a time in a worker "
        "process, and write the CSV the upstream dynamo harness writes. --performance: "
        "interleaved eager/compiled timings (speedup = median eager / median compiled), "
        "compile time from a cold cache, peak memory. --accuracy: float64 reference, two "
        "eager runs that must agree, compiled vs eager within the config's tolerance. "
        "Ends with a summary; exit 1 when a model did not pass.",
    )
    p.add_argument("--list", action="store_true", help="list the models (zoo, providers, "
                   "--models-from) with the config's notes, and exit")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--performance", action="store_true", help="measure speed, compile "
                      "time and memory")
    what.add_argument("--accuracy", action="store_true", help="check compiled vs eager")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--inference", dest="training", action="store_false",
                       help="forward passes under no_grad, eval mode")
    phase.add_argument("--training", dest="training", action="store_true",
                       help="zero_grad, forward, loss, backward, train mode")
    p.add_argument("--backend", choices=BACKENDS, default="inductor",
                   help="torch.compile backend (default: inductor)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--size", choices=SIZES, help="model sizes (default: $TORCHPULSE_PRESET, "
                   "else cpu or cuda by device)")
    p.add_argument("--filter", "-k", action="append", metavar="RE", help="run models "
                   "whose name matches (repeatable; default: all)")
    p.add_argument("--exclude", "-x", action="append", metavar="RE",
                   help="leave out models whose name matches (repeatable)")
    p.add_argument("--repeat", type=_positive_int, default=30, help="interleaved "
                   "eager/compiled rounds (default: 30, as upstream)")
    p.add_argument("--batch-size", type=_positive_int, help="one batch size for every model "
                   "(default: the config's, else the model's for the size)")
    p.add_argument("--timeout", type=_positive_float, default=600.0, help="seconds a model "
                   "may take before it is killed and reported as timeout (default: 600)")
    p.add_argument("--config", metavar="YAML", help="per-model settings (default: the "
                   "built-in zoo.yaml): skip lists, batch sizes, tolerances, slow models")
    p.add_argument("--skip-slow", action="store_true", help="leave out the config's slow "
                   "models")
    p.add_argument("--no-skip", action="store_true", help="ignore the config's skip lists")
    p.add_argument("--models-from", action="append", metavar="FILE.py|MODULE",
                   help="add the ModelSpec list MODELS of a file or module (repeatable)")
    p.add_argument("--threads", type=_positive_int, help="torch threads in the worker "
                   "(default: torch's)")
    p.add_argument("--output", "-o", metavar="FILE.csv", help="the CSV (default: "
                   "torchpulse_<backend>_<inference|training>_<device>_<mode>.csv); "
                   "rewritten after each model")
    p.set_defaults(func=cmd_dynamo, training=None)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchpulse", description="Performance-regression tracking for PyTorch workloads."
    )
    parser.add_argument("--version", action="version", version=f"torchpulse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser(
        "check", help="check the custom LSTM runners against their references",
        description="Compare each custom LSTM runner with its reference (same seed and "
        "weights) on outputs and all parameter gradients; exit 1 on a mismatch.",
    )
    check.add_argument("--preset", help="size preset: cuda, cpu or smoke "
                       "(default: $TORCHPULSE_PRESET, else by device)")
    check.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    check.add_argument("--rnns", nargs="+", metavar="NAME",
                       help="runners to check (default: all checkable)")
    check.add_argument("--tolerance", type=float, default=1e-3,
                       help="largest max|difference| / max(1, max|reference|) allowed "
                       "(default: 1e-3, upstream's absolute threshold)")
    check.set_defaults(func=cmd_check)

    runners = sub.add_parser("runners", help="list the workload runners",
                             description="List every runner with its group and description.")
    runners.set_defaults(func=cmd_runners)
    _add_bench_parser(sub)
    _add_profile_parser(sub)
    _add_import_parser(sub)
    _add_merge_parser(sub)
    _add_alert_parser(sub)
    _add_evaluate_parser(sub)
    _add_publish_parser(sub)
    _add_serve_parser(sub)
    _add_autograd_parser(sub)
    _add_dynamo_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from torchpulse.presets import UnknownPresetError
    from torchpulse.runners import UnknownRunnerError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, UnknownRunnerError, UnknownPresetError) as exc:
        print(f"torchpulse {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("torchpulse: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
