"""`torchpulse import | merge`: putting results into a results tree (torchpulse.results)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from torchpulse.cli.args import (
    EXIT_OK,
    UsageError,
    add_config,
    add_machine,
    add_output,
    add_results_dir,
    check_outputs,
    distribution_name,
    machine_name,
    note,
    project,
    regular_expression,
    write_output,
)
from torchpulse.results.external import DEFAULT_SOURCE, measured_on
from torchpulse.results.importers import FORMAT_NAMES

if TYPE_CHECKING:
    from torchpulse.results.project import Project


def cmd_import(args: argparse.Namespace) -> int:
    from torchpulse.results import ingest

    done = ingest.import_files(
        project(args), args.format, [Path(f) for f in args.files], commit=args.commit,
        machine=args.machine, env_name=args.env_name,
        machine_info=Path(args.machine_info) if args.machine_info else None,
        unit=args.unit, replace=args.replace, device=args.device,
        higher=args.higher_is_better or ())
    for line in done.notes:
        note("import", f"note: {line}")
    s = done.summary
    same = f", {s.unchanged} already stored as they are" if s.unchanged else ""
    print(f"imported {s.added + s.replaced} values ({s.added} new, {s.replaced} replaced"
          f"{same}) of {len(s.benchmarks)} benchmarks from {done.files} file(s) into {s.path}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from torchpulse.results import export

    check_outputs(args, files=("output",))
    found = export.records(project(args), args.range, args.machine)
    write_output(export.render(found, args.json_each_row), args.output)
    if args.output:
        note("export", f"{len(found)} v3 record(s) written to {args.output}")
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    from torchpulse.results import merge

    summary = merge.merge_trees([Path(s) for s in args.sources], Path(args.into))
    if summary.conflicts:
        shown = "; ".join(summary.conflicts[:3])
        more = f" (and {len(summary.conflicts) - 3} more)" if len(summary.conflicts) > 3 else ""
        raise UsageError(f"{len(summary.conflicts)} conflict(s), nothing written: {shown}{more}")
    print(f"merged {len(args.sources)} tree(s) into {args.into}: {summary.files_written} "
          f"results file(s) written, machines {', '.join(sorted(summary.machines)) or 'none'}, "
          f"{summary.benchmarks_added} benchmark(s) new to benchmarks.json")
    return EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    from torchpulse.presets import default_device
    from torchpulse.results import record

    proj = project(args)
    if args.commit:
        rev, said = args.commit, "--commit"
    else:
        build = record.installed_build(args.package)
        rev, said = build.commit, f"{build.package} {build.version} ({build.source})"
    sha, branch = record.resolve(proj, rev)
    note("record", f"recording {said} as commit {sha[:12]} of {branch} in "
         f"{proj.local_repo()}, results into {proj.results_dir}")
    bench = args.bench or measured_on(default_device())
    from torchpulse.results import builds
    from torchpulse.results.store import locked

    env_name = record.environment_name(proj)
    kept = 0
    with record.recording(proj) as interpreter, locked(proj.results_dir):
        rc = record.run(record.asv_commands(proj, sha, bench, args.machine, quick=args.quick,
                                            interpreter=interpreter), cwd=proj.root, sha=sha,
                        project=proj)
        if rc == 0 and not args.quick:  # a --quick record's one sample is no level
            kept = _keep_record(proj, sha, env_name, args.machine)
    if rc != 0:
        note("record", f"asv exited with {rc}")
        return rc
    if kept > 1:
        note("record", f"{kept} records of commit {sha[:12]} kept: `torchpulse compare "
             "--stored` decides its timed series from them")
    build = record.torch_build()
    if build is not None:
        builds.write(proj.root, sha, env_name, build)
    print(f"recorded commit {sha[:12]}"
          f"{f' (torch {build.version}, {build.kind})' if build else ''} as environment "
          f"{env_name}: publish with `torchpulse publish --config "
          f"{args.config}`, then `torchpulse alert --config {args.config}`")
    return EXIT_OK


def _keep_record(proj: Project, sha: str, env: str, machine: str | None) -> int:
    """Keep the levels of the record just made beside the earlier records of ``sha``
    (asv keeps the newest only); how many records of it are kept now. Derived data: a
    tree it cannot read is said, and the record stands."""
    from torchpulse.culprit.stored import record_levels
    from torchpulse.errors import TorchpulseError
    from torchpulse.results import records

    try:
        found = record_levels(proj, sha, env, machine)
    except TorchpulseError as exc:
        note("record", f"this record's levels were not kept for compare --stored: {exc}")
        return 0
    return records.append(proj.root, found[0], sha, env, found[1]) if found else 0


def cmd_init(args: argparse.Namespace) -> int:
    from torchpulse.results import scaffold

    plan = scaffold.plan(Path(args.directory), args.repo, branch=args.branch, name=args.name,
                         torch=args.torch, with_suites=args.with_suites)
    note("init", f"building torchpulse's wheel and writing {plan.directory}")
    try:
        written = scaffold.create(plan)
    except OSError as exc:  # a read-only or immutable folder: nothing was left behind
        raise UsageError(f"cannot write {plan.directory}: {exc.strerror or exc}") from None
    print(f"created {plan.directory} for {plan.repo} (branch {plan.branch}, torch "
          f"{plan.pins['torch']}): {', '.join(written)}")
    print(f"next: edit benchmarks/bench_model.py to build your model, then "
          f"`cd {args.directory} && make dashboard`")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--commit", metavar="REV",
                   help="the commit the results belong to (on a branch of the asv config); "
                   "required but for pytorch-v3, whose records carry head_sha")
    add_machine(p, "asv machine name; required but for pytorch-v3, whose records name "
                "their runner's type")
    add_config(p, "the repository, its branches and the results directory")
    add_results_dir(p)
    p.add_argument("--env-name", default=DEFAULT_SOURCE, metavar="NAME",
                   help=f"results file suffix and graph line (default: {DEFAULT_SOURCE}); "
                   "use one per kind of run, e.g. inductor-training")
    p.add_argument("--machine-info", metavar="FILE", help="JSON with asv machine fields "
                   "(arch, cpu, num_cpu, os, ram) for a new machine")
    p.add_argument("--unit", choices=("ms", "s"), help="unit of oss/pep values (default: ms; "
                   "s for files from upstream's CPU path, which prints seconds labelled ms)")
    p.add_argument("--replace", action="store_true",
                   help="overwrite values already stored for this commit")
    p.add_argument("--higher-is-better", action="append", metavar="METRIC",
                   help="pytorch-v3: a metric where higher is better, beyond the built-in "
                   "list (repeatable); stored inverted")
    p.add_argument("--device", metavar="NAME", help="dynamo-csv: the device of a file "
                   "without a dev column (PyTorch CI's ci_expected_accuracy CSVs)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export", help="write the results tree as PyTorch benchmark database records (v3)",
        description="Write every stored point (its samples as benchmark_values) as a record "
        "of PyTorch's benchmark database, v3, the shape its upload-benchmark-results action "
        "takes: runner from asv's machine.json, head_sha the measured commit, dependencies "
        "with the torch version asv recorded. Points imported with `import pytorch-v3` go "
        "back as they came (higher-is-better metrics un-inverted); `torchpulse import "
        "pytorch-v3` reads the output back.",
    )
    p.add_argument("kind", choices=("pytorch-v3",), metavar="FORMAT", help="pytorch-v3")
    p.add_argument("range", nargs="?", metavar="RANGE", help="a commit, or A..B (the "
                   "first-parent commits after A up to B); default: every stored commit")
    p.add_argument("--machine", action="append", type=machine_name, metavar="NAME",
                   help="only this machine's results (repeatable; default: every machine)")
    add_output(p, "write the records here (default: stdout)")
    p.add_argument("--json-each-row", action="store_true",
                   help="one record per line (ClickHouse's JSONEachRow) instead of a JSON list")
    add_config(p, "its results tree and repository")
    add_results_dir(p)
    p.set_defaults(func=cmd_export)

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

    p = sub.add_parser(
        "init", help="create a benchmark project for another repository (asv.conf.json, "
        "benchmarks/, Makefile, CI workflow)",
        description="Write a new asv benchmark project into DIR (absent or empty) for the "
        "git repository REPO: asv.conf.json aimed at it with torch and torchpulse's "
        "dependencies pinned at this environment's versions, each commit built and "
        "installed without dependencies and next to a wheel of this torchpulse, "
        "benchmarks/ with the machine canary and an example suite on torchpulse.harness, "
        "a Makefile (make dashboard) and a CI workflow. All or nothing.",
    )
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--repo", required=True, metavar="PATH|URL",
                   help="the repository to track: a local clone, or a URL asv clones")
    p.add_argument("--branch", metavar="NAME", help="its branch (default: the clone's "
                   "checked-out branch; required for a URL)")
    p.add_argument("--name", metavar="NAME", help="its distribution name, asv's project "
                   "name (default: the repository's folder name)")
    p.add_argument("--torch", metavar="VERSION", help="the torch version asv installs "
                   "(default: this environment's, without its local tag)")
    p.add_argument("--with-suites", action="store_true", help="also copy torchpulse's own "
                   "suites (fastrnns, autograd, compile zoo: about 2 min a commit at the cpu "
                   "preset); they measure torch, which the project pins")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser(
        "record", help="measure the torch (or package) installed here and file the results at "
        "the commit it was built from",
        description="Run the suites in this environment, as installed (asv's existing "
        "environment: nothing is built), and file the results at the commit the installed "
        "build comes from: torch.version.git_version for torch, the commit pip recorded for "
        "a package installed from git, or --commit. The commit must be in the config's "
        "repository (a local clone) on the first-parent history of one of its branches; "
        "otherwise one line and exit 2. This is how a PyTorch nightly is tracked. Recorded "
        "again, a commit's results are replaced, and the levels of every full record are "
        "kept beside them: `compare --stored` decides timed series from two records a side.",
    )
    p.add_argument("--package", default="torch", metavar="NAME", type=distribution_name,
                   help="the installed package whose commit files the results (default: torch)")
    p.add_argument("--commit", metavar="REV", help="the commit instead of the one the "
                   "package says it was built from")
    p.add_argument("--bench", metavar="RE", type=regular_expression,
                   help="asv --bench regular expression (default: every suite that measures "
                   "on this device, as dashboard's)")
    p.add_argument("--quick", action="store_true",
                   help="one sample per benchmark (asv --quick): a dry run of the setup")
    add_machine(p, "asv machine name (default: asv's, the host name)")
    add_config(p, "its repo is the clone of what the installed build was built from")
    p.set_defaults(func=cmd_record)
