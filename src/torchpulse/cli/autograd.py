"""`torchpulse autograd [compare]`: the functional-autograd tasks (torchpulse.autograd)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchpulse.autograd.choices import ALL_TASKS, MODELS
from torchpulse.cli.args import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_output,
    add_preset,
    check_outputs,
    non_negative_int,
    positive_int,
    write_output,
)


def _names(values: list[str] | None) -> list[str] | None:
    """--model-filter a b, or a,b (upstream takes one comma-separated string)."""
    if not values:
        return None
    return [n for v in values for n in v.split(",") if n]


def cmd_autograd(args: argparse.Namespace) -> int:
    if args.action == "compare":
        return cmd_compare(args)
    from torchpulse.allocation import keep_freed_memory
    from torchpulse.autograd import run, table
    from torchpulse.autograd.tasks import functorch_available

    check_outputs(args, files=("output",))
    keep_freed_memory()  # measured as the asv suites measure (torchpulse/allocation.py)

    pairs = run.select(_names(args.model_filter), _names(args.task_filter))
    device = run.device_for_gpu(args.gpu)
    functorch = args.functorch and functorch_available()
    if args.functorch and not functorch:
        print("functorch does not import here: no functorch rows", file=sys.stderr)
    errors: list[run.Failure] = []

    def done(t: run.Timing) -> None:
        task, how = t.task.removeprefix(run.FUNCTORCH), ""
        if task != t.task:
            how = " using Functorch"
        print(f"Results for model {t.model} on task {task}{how}: {t.mean}s (var: {t.var})",
              flush=True)

    def failed(f: run.Failure) -> None:
        # upstream's line (it continues with the next pair and writes no row)
        print(f"Failed model using Functorch: {f.model}, task: {f.task}, Error message: "
              f"{f.reason}", flush=True)
        if f.disagrees:
            errors.append(f)

    timings = run.run_all(pairs, device, args.preset, args.num_iters, args.seed,
                          args.num_threads, functorch, done=done, failed=failed)
    if args.output:
        write_output(table.to_markdown(timings), args.output)
    for f in errors:
        print(f"torchpulse autograd: functorch {f.task} on {f.model} disagrees with "
              f"torch.autograd.functional (no row): {f.reason[:300]}", file=sys.stderr)
    return EXIT_FAILED if errors else EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from torchpulse.autograd import table

    before, after = table.read(Path(args.before)), table.read(Path(args.after))
    if not set(before) & set(after):
        raise UsageError(f"{args.before} and {args.after} have no (model, task) in common")
    sys.stdout.write(table.compare(before, after))
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "autograd", help="time torch.autograd.functional tasks over the models (upstream's "
        "functional_autograd_benchmark)",
        description="Run each model's tasks (vjp, jvp, vhp, hvp, jacobian, hessian and the "
        "vectorised jacfwd, jacrev, hessian_fwdrev, hessian_revrev) as upstream's "
        "functional_autograd_benchmark: one warm-up call, then --num-iters timed calls, "
        "then the same through functorch (rows 'functorch <task>'); "
        "--output writes its markdown table (| model | task | mean | var |, seconds). "
        "`torchpulse autograd compare BEFORE AFTER` prints two tables side by side.",
    )
    p.add_argument("--model-filter", nargs="+", metavar="M", help="models to run (names, "
                   f"or one comma-separated list; default: all): {', '.join(MODELS)}")
    p.add_argument("--task-filter", nargs="+", metavar="T", help="tasks to run (default: "
                   f"each model's own): {', '.join(ALL_TASKS)}")
    p.add_argument("--num-iters", type=non_negative_int, default=10,
                   help="timed calls per pair (default: 10; 0: the warm-up only)")
    p.add_argument("--gpu", type=int, default=-2, help="GPU index, -1 for the CPU, -2 "
                   "(default) for a GPU when there is one")
    p.add_argument("--num-threads", type=positive_int, help="torch threads (default: the "
                   "preset's: 1 for cpu and smoke, torch's own for cuda)")
    add_preset(p, what="sizes (cuda: upstream's)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--no-functorch", dest="functorch", action="store_false",
                   help="leave out the 'functorch <task>' rows, which upstream adds (each "
                   "pair timed again through torch.func's transforms) whenever functorch "
                   "imports")
    add_output(p, "write the markdown table here")
    p.set_defaults(func=cmd_autograd, action=None)
    actions = p.add_subparsers(dest="action", metavar="compare")
    c = actions.add_parser("compare", help="before/after/speedup table of two outputs")
    c.add_argument("before", metavar="BEFORE")
    c.add_argument("after", metavar="AFTER")
