"""`torchpulse dynamo`: eager vs torch.compile over the zoo (torchpulse.compile)."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_device,
    add_output,
    add_preset,
    check_outputs,
    positive_float,
    positive_int,
)
from torchpulse.compile.choices import BACKENDS


def cmd_dynamo(args: argparse.Namespace) -> int:
    from torchpulse.allocation import keep_freed_memory
    from torchpulse.compile import harness
    from torchpulse.presets import resolve_device, resolve_preset

    zoo_config = Path(args.zoo_config) if args.zoo_config else None
    if args.list:
        for line in harness.list_models(zoo_config, args.models_from or ()):
            print(line)
        return EXIT_OK
    if not (args.performance or args.accuracy) or args.training is None:
        raise UsageError("say --performance or --accuracy, and --inference or --training "
                         "(or --list)")
    check_outputs(args, files=("output",))
    device = resolve_device(args.device)
    mode = "performance" if args.performance else "accuracy"
    options = harness.Options(
        mode=mode, training=args.training, backend=args.backend, device=device,
        size=resolve_preset(args.preset, device).name,
        output=harness.output_for(Path(args.output) if args.output else None, mode,
                                  args.training, args.backend, device),
        filters=args.filter or (), excludes=args.exclude or (), repeat=args.repeat,
        batch_size=args.batch_size, timeout=args.timeout, zoo_config=zoo_config,
        skip_slow=args.skip_slow, no_skip=args.no_skip, models_from=args.models_from or (),
        threads=args.threads)
    # measured as the asv suites measure, in this process and the workers it spawns
    # (torchpulse/allocation.py)
    keep_freed_memory()
    results = harness.run(options, out=lambda line: print(line, flush=True))
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def add_parsers(sub: argparse._SubParsersAction) -> None:
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
                   "--models-from) with the zoo config's notes, and exit")
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
    add_device(p)
    add_preset(p, "--size", what="model sizes")
    p.add_argument("--filter", "-k", action="append", metavar="RE", help="run models "
                   "whose name matches (repeatable; default: all)")
    p.add_argument("--exclude", "-x", action="append", metavar="RE",
                   help="leave out models whose name matches (repeatable)")
    p.add_argument("--repeat", type=positive_int, default=30, help="interleaved "
                   "eager/compiled rounds (default: 30, as upstream)")
    p.add_argument("--batch-size", type=positive_int, help="one batch size for every model "
                   "(default: the zoo config's, else the model's for the size)")
    p.add_argument("--timeout", type=positive_float, default=600.0, help="seconds a model "
                   "may take before it is killed and reported as timeout (default: 600)")
    p.add_argument("--zoo-config", metavar="YAML", help="per-model settings (default: the "
                   "built-in zoo.yaml): skip lists, batch sizes, tolerances, slow models")
    p.add_argument("--skip-slow", action="store_true", help="leave out the zoo config's slow "
                   "models")
    p.add_argument("--no-skip", action="store_true", help="ignore the zoo config's skip lists")
    p.add_argument("--models-from", action="append", metavar="FILE.py|MODULE",
                   help="add the ModelSpec list MODELS of a file or module (repeatable)")
    p.add_argument("--threads", type=positive_int, help="torch threads in the worker "
                   "(default: torch's)")
    add_output(p, "the CSV (default: torchpulse_<backend>_<inference|training>_<device>_"
               "<mode>.csv); rewritten after each model", "-o")
    p.set_defaults(func=cmd_dynamo, training=None)
