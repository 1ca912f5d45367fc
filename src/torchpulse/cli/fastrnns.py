"""`torchpulse check | runners | bench | profile`: the fastrnns runners (torchpulse.fastrnns)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    add_device,
    add_preset,
    check_outputs,
    non_negative_int,
    note,
    positive_float,
    positive_int,
)
from torchpulse.fastrnns.choices import (
    DEFAULT_CNNS,
    DEFAULT_RNNS,
    EXECUTORS,
    FUSERS,
    GROUPS,
    RUNNERS,
)


def cmd_check(args: argparse.Namespace) -> int:
    from torchpulse.fastrnns import check
    from torchpulse.presets import resolve_device, resolve_preset

    device = resolve_device(args.device)
    preset = resolve_preset(args.preset, device)
    runners = check.select(args.rnns)
    print(check.describe(preset, device, args.tolerance), flush=True)
    print(check.format_header(), flush=True)
    failures = 0
    for result in check.run_checks(runners, preset, device, args.tolerance):
        print(check.format_row(result), flush=True)
        failures += not result.ok
    if failures:
        note("check", f"{failures} of {len(runners)} runners failed")
        return EXIT_FAILED
    return EXIT_OK


def cmd_runners(args: argparse.Namespace) -> int:
    for name, runner in RUNNERS.items():
        print(f"{name:<20} {runner.group:<8} {runner.description}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    from torchpulse.allocation import keep_freed_memory
    from torchpulse.fastrnns import bench
    from torchpulse.presets import resolve_device, resolve_preset

    device = resolve_device(args.device)
    preset = bench.with_sizes(resolve_preset(args.preset, device),
                              **{flag: getattr(args, flag)
                                 for flag in (*bench.SIZE_FLAGS, *bench.LENGTH_FLAGS)})
    runners = bench.select_runners(args.rnns, args.cnns, args.group, args.variable_lstms)
    keep_freed_memory()  # measured as the asv suites measure (torchpulse/allocation.py)
    settle = bench.settle_note(runners, preset)
    if settle:
        note("bench", f"note: {settle}")
    table = (lambda line: print(line, file=sys.stderr, flush=True)) \
        if args.print_json is None else None
    outcomes = bench.run(runners, preset, device, fuser=args.fuser, executor=args.executor,
                         sep=args.sep, table=table,
                         failed=lambda f: note("bench", f"error: runner {f.runner} failed: "
                                                        f"{f.error}"))
    if args.print_json is not None:
        print(bench.print_json(outcomes, runners, args.print_json), flush=True)
    failed = [o.runner for o in outcomes if isinstance(o, bench.BenchFailure)]
    if failed:
        note("bench", f"{len(failed)} of {len(outcomes)} runners failed: {', '.join(failed)}")
        return EXIT_FAILED
    return EXIT_OK


def cmd_profile(args: argparse.Namespace) -> int:
    from torchpulse.fastrnns import bench, profiling
    from torchpulse.presets import resolve_device, resolve_preset

    check_outputs(args, folders=("output",))
    device = resolve_device(args.device)
    preset = bench.with_sizes(resolve_preset(args.preset, device), seed=args.seed)
    if not args.rnns and not args.cnns:
        raise bench.SelectionError("name the runners to profile with --rnns and/or --cnns")
    groups = [g for g, names in (("rnns", args.rnns), ("cnns", args.cnns)) if names]
    runners = bench.select_runners(args.rnns, args.cnns, groups)
    warmup = preset.warmup if args.warmup is None else args.warmup
    failed = profiling.profile_all(
        runners, preset, device, args.nloops, warmup, Path(args.output),
        say=lambda line: print(line, flush=True),
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        failed=lambda line: note("profile", f"error: {line}"))
    if failed:
        note("profile", f"{len(failed)} of {len(runners)} runners failed: {', '.join(failed)}")
        return EXIT_FAILED
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check the custom LSTM runners against their references",
        description="Compare each custom LSTM runner with its reference (same seed and "
        "weights) on outputs and all parameter gradients; exit 1 on a mismatch.",
    )
    add_preset(p)
    add_device(p)
    p.add_argument("--rnns", nargs="+", metavar="NAME",
                   help="runners to check (default: all checkable)")
    p.add_argument("--tolerance", type=positive_float, default=1e-3,
                   help="largest max|difference| / max(1, max|reference|) allowed "
                   "(default: 1e-3, upstream's absolute threshold)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("runners", help="list the workload runners",
                       description="List every runner with its group and description.")
    p.set_defaults(func=cmd_runners)

    p = sub.add_parser(
        "bench", help="time runners as upstream fastrnns bench (table, OSS or PEP JSON)",
        description="Time forward and backward of the fastrnns runners, as upstream's "
        "benchmarks/fastrnns/bench.py with the same flags. Sizes default to the preset's; "
        "every time printed is in milliseconds, on CPU too (upstream printed seconds there). "
        "Exit 1 when a runner failed (the others are still reported).",
    )
    add_preset(p)
    for flag in ("seqLength", "numLayers", "inputSize", "hiddenSize", "miniBatch"):
        p.add_argument(f"--{flag}", type=positive_int, help="(default: from the preset)")
    p.add_argument("--imageBatch", type=positive_int, help="ResNet input batch (upstream: "
                   "32; default: from the preset)")
    p.add_argument("--imageSize", type=positive_int, help="ResNet input height and width "
                   "(upstream: 224; default: from the preset)")
    p.add_argument("--minLength", type=positive_int, help="variable-length runners: "
                   "shortest sequence (upstream: 30; default: from the preset)")
    p.add_argument("--maxLength", type=positive_int, help="variable-length runners: "
                   "lengths are drawn below it (upstream: 100; default: from the preset)")
    p.add_argument("--seed", type=non_negative_int, help="input and weight seed "
                   "(default: the preset's)")
    p.add_argument("--warmup", type=non_negative_int,
                   help="untimed iterations first (default: from the preset)")
    p.add_argument("--nloops", type=positive_int,
                   help="timed iterations (default: from the preset)")
    add_device(p)
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

    p = sub.add_parser(
        "profile", help="profile runners with torch.profiler (Chrome trace + table)",
        description="Run each runner's training step under torch.profiler after the usual "
        "warm-up and write <runner>.trace.json (open in chrome://tracing or Perfetto) and "
        "<runner>.txt (key averages) into the output directory. Exit 1 when a runner "
        "failed.",
    )
    p.add_argument("--rnns", nargs="+", metavar="NAME", help="LSTM runners to profile")
    p.add_argument("--cnns", nargs="+", metavar="NAME", help="ResNet runners to profile")
    add_preset(p)
    add_device(p)
    p.add_argument("--nloops", type=positive_int, default=5,
                   help="profiled training steps (default: 5)")
    p.add_argument("--warmup", type=non_negative_int,
                   help="unprofiled steps first (default: from the preset)")
    p.add_argument("--seed", type=non_negative_int, help="(default: the preset's)")
    p.add_argument("--output", default="profile", metavar="DIR",
                   help="directory for the files (default: ./profile)")
    p.set_defaults(func=cmd_profile)
