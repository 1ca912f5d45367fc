"""The main job, in one place: measure the newest commits with asv, measure again what the
machine canary saw disturbed or what stepped in one run only (at most two passes), publish
the site, and judge with the alert. `make dashboard`, the CI gate and the Makefile that
`torchpulse init` writes all call this; nothing else strings the steps together."""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from torchpulse import reports
from torchpulse.analysis import ledger, pipeline, remeasure
from torchpulse.analysis.defaults import DEFAULT_NEWEST, REMEASURE_PASSES
from torchpulse.analysis.model import TOO_FEW, Report
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.errors import TorchpulseError
from torchpulse.files import (
    locked_file,
    read_regular,
    restore,
    snapshot,
    write_text_atomically,
)
from torchpulse.instructions import summary
from torchpulse.results import asv_results, gitrepo, store
from torchpulse.results.external import measured_on
from torchpulse.results.gitrepo import FULL_SHA
from torchpulse.results.project import Project
from torchpulse.results.record import asv_environment

COMMITS_FILE = Path(".asv") / "dashboard-commits.txt"  # beside the config, as the ledger
REMEASURE_FILE = Path(".asv") / "disturbed.txt"
LOCK_FILE = Path(".asv") / "dashboard.lock"  # held while a dashboard runs (one_at_a_time)
# the commits an asv run of the dashboard is measuring, written before it starts and removed
# when it has ended or been rolled back: found by the next dashboard, it names the commits a
# killed one (kill -9, a lost machine) left with some of their rounds only
IN_FLIGHT_FILE = Path(".asv") / "dashboard-in-flight.json"

# exit codes: the alert's (0 none, 1 regressions), or 3 when no regression was found but a
# benchmark failed to run (as the CI gate has always said)
EXIT_BENCHMARK_FAILED = 3

Asv = Callable[[Sequence[str], dict[str, str]], int]  # runs `asv ARGS` with ENV: its status


class DashboardError(TorchpulseError, ValueError):
    pass


@dataclass(frozen=True)
class Options:
    ranges: tuple[str, ...] = ()  # git ranges as asv takes them; none: the newest commits
    newest: int = DEFAULT_NEWEST
    preset: str | None = None  # TORCHPULSE_PRESET for the benchmarks (None: inherited)
    bench: str | None = None  # asv --bench (None: every suite that measures on this device)
    machine: str | None = None
    branch: str | None = None  # the history the commits and verdicts follow
    since: str | None = None  # the alert reports changes after REV only
    publish: bool = True
    assets: str | None = None  # node_modules for the site (publish's --assets)
    alert_format: str = "text"
    alert_output: str | None = None  # write the alert there too (in alert_format)
    ledger: str | None = None  # the confirmation ledger (default: .asv/confirmed.txt)
    settings: Settings = DEFAULTS  # the detector's: what to re-measure, the site, the alert


@dataclass(frozen=True)
class Outcome:
    report: Report
    measured: tuple[str, ...]  # the commits measured, oldest first
    failed: bool  # an asv run exited non-zero (a benchmark failed, usually)
    unjudged: tuple[int, tuple[str, ...]]  # series left without a verdict by disturbed
    # points, and the commits to measure again for them

    @property
    def exit_code(self) -> int:
        if self.report.regressions:
            return 1
        return EXIT_BENCHMARK_FAILED if self.failed else 0


def run_asv(args: Sequence[str], env: dict[str, str]) -> int:
    """asv in this interpreter (or the command $TORCHPULSE_ASV names), its output streamed
    to ours, through results.asv_process: interrupted, its whole process group is stopped
    before the interrupt goes on, so no benchmark process outlives the dashboard and writes
    results after the rollback. `asv machine --yes`'s questions and answers are shown only
    when it fails."""
    from torchpulse.results import asv_process

    own = shlex.split(env.get("TORCHPULSE_ASV", ""))
    line = [*own, *args] if own else asv_process.command(args)
    try:
        return asv_process.run(line, env=env, quiet=list(args[:1]) == ["machine"]).returncode
    except asv_process.AsvLaunchError as exc:
        raise DashboardError(str(exc)) from None


def commits_to_measure(project: Project, options: Options) -> list[str]:
    """The commits the ranges name (asv's own reading: first-parent, oldest first), or the
    ``newest`` commits of the branch."""
    repo = project.local_repo()
    if not options.ranges:
        return project.history(options.branch).commits[-options.newest:]
    found: list[str] = []
    for spec in options.ranges:
        if spec.startswith("-"):
            raise DashboardError(f"range {spec!r}: not a git revision range")
        try:
            commits = gitrepo.first_parent_commits(repo, spec)
        except gitrepo.GitError as exc:
            raise DashboardError(f"range {spec!r}: {exc}") from None
        found += [c for c in commits if c not in found]
    if not found:
        raise DashboardError(f"{' '.join(options.ranges)}: no commit to measure in {repo}")
    return found


def check_options(project: Project, options: Options) -> None:
    """What asv or the alert would refuse only after the measuring: a --bench that is no
    regular expression, a --since that names no commit of the branch's history, a results
    tree holding a file asv would hang on (a FIFO) or read without end (/dev/zero)."""
    try:
        asv_results.check_tree(project.results_dir)
    except asv_results.ResultsFileError as exc:
        raise DashboardError(str(exc)) from None
    if options.bench is not None:
        try:
            re.compile(options.bench)
        except re.error as exc:
            raise DashboardError(f"--bench {options.bench!r}: not a regular expression "
                                 f"({exc})") from None
    if options.since is not None:
        try:
            sha = project.resolve(options.since)
        except gitrepo.GitError as exc:
            raise DashboardError(f"--since: {exc}") from None
        if sha not in project.history(options.branch).position:
            raise DashboardError(f"--since: commit {sha[:8]} is not on the first-parent "
                                 "history of the branch")


@contextmanager
def one_at_a_time(root: Path, say: Callable[[str], None]) -> Iterator[None]:
    """An exclusive lock for the whole dashboard (flock on LOCK_FILE, beside its commit
    lists): a second one on the same project (two CI jobs on one runner) waits, saying so,
    instead of sharing those lists and rolling back what the other stored. The lock goes
    with the process that held it, crashed or not. A file of its own: the results and the
    site's folders have locks of their own, which the dashboard takes too."""
    path = root / LOCK_FILE
    with ExitStack() as held:
        try:  # never through a link (locked_file): the lock is ours, not a file elsewhere
            held.enter_context(locked_file(
                path, lambda: say(f"== waiting: another dashboard is running on {root}")))
        except OSError as exc:
            raise DashboardError(f"{path}: cannot take the dashboard's lock "
                                 f"({exc.strerror})") from None
        yield


def run(project: Project, options: Options, *, asv: Asv = run_asv,
        say: Callable[[str], None] = print) -> Outcome:
    check_options(project, options)  # bad input: nothing measured
    with one_at_a_time(project.root, say):
        return _run(project, options, asv, say)


def _run(project: Project, options: Options, asv: Asv, say: Callable[[str], None]
         ) -> Outcome:
    commits = commits_to_measure(project, options)
    config = ["--config", str(project.config)]
    named = ["--machine", options.machine] if options.machine else []
    env = asv_environment()
    if options.preset:
        env["TORCHPULSE_PRESET"] = options.preset
    ledger_path = Path(options.ledger) if options.ledger else project.root / ledger.DEFAULT
    done = ledger.read_ledger(ledger_path)  # a malformed ledger stops us before measuring
    if asv(["machine", "--yes", *config, *named], env) != 0:
        raise DashboardError("asv machine failed (its message is above)")
    preset = options.preset or os.environ.get("TORCHPULSE_PRESET") or "the suites' default"
    say(f"== measuring {len(commits)} commit(s) {_span(commits)} (preset {preset}, samples "
        "recorded; commits already measured in full are skipped)")
    bench = options.bench or measured_on(_device())
    failed = False
    cut = [c for c in cut_short(project.root, options.machine) if _on_branches(project, c)]
    _in_flight(project.root, options.machine, cut)  # a commit no branch holds is let go
    if cut:
        say(f"== measuring {len(cut)} commit(s) again in full ({_span(cut)}): a dashboard "
            "was killed while it measured them, and their results hold some rounds only")
        failed |= _measure(project, cut, bench, [], config + named, env, asv, say,
                           COMMITS_FILE, machine=options.machine)
    failed |= _measure(project, commits, bench, ["--skip-existing-successful"],
                       config + named, env, asv, say, COMMITS_FILE, machine=options.machine)
    for number in range(1, REMEASURE_PASSES + 1):
        plan = remeasure.plan(project, done=done, window=set(commits),
                              machine=options.machine, branch=options.branch,
                              settings=options.settings)
        for line in plan.notes:
            say(f"   {line}")
        if plan.ledger_changed:  # before the run: each step is confirmed once, even if it fails
            write_text_atomically(ledger_path, ledger.ledger_text(plan.ledger))
            done = plan.ledger
        if plan.empty:
            break
        say(f"== measuring {len(plan.remeasure.commits)} commit(s) again, pass {number} of "
            f"{REMEASURE_PASSES}: a disturbed machine, or a step seen in one run only")
        failed |= _measure(project, list(plan.remeasure.commits), plan.remeasure.bench_regex(),
                           [], config + named, env, asv, say, REMEASURE_FILE,
                           machine=options.machine)
    # the verdicts, judged once: the site shows every machine from the first commit, so the
    # alert's report is the site's unless it is narrowed to a machine or --since
    verdicts = {"branch": options.branch, "confirmed": done, "settings": options.settings}
    found = pipeline.run(project, machine=options.machine, since=options.since, **verdicts)
    if options.publish:
        from torchpulse.site import assets, publish

        node_modules = assets.find_node_modules(options.assets, project.root)
        whole = options.machine is None and options.since is None
        html = publish.publish(project, node_modules, progress=say, alert_settings={
            **verdicts, **({"report": found} if whole else {})})
        say(f"   site written to {html}/; view it with `torchpulse serve`")
    say("== regression alerts")
    say(reports.render(found, "text").rstrip("\n"))
    if options.alert_output:
        write_text_atomically(Path(options.alert_output),
                              reports.render(found, options.alert_format))
    outcome = Outcome(found, tuple(commits), failed, _unjudged(found, set(commits)))
    count, again = outcome.unjudged
    if count:
        say(f"== {count} series have no verdict: their points at {len(again)} commit(s) "
            f"({_span(list(again))}) were measured on a disturbed machine; run the dashboard "
            "again, on a quieter machine, and it measures only those")
    if failed:
        say("== a benchmark failed to run (asv's message is above); the site shows it failed")
    return outcome


def _on_branches(project: Project, sha: str) -> bool:
    try:
        project.commit_on_branches(sha)
    except gitrepo.GitError:
        return False
    return True


def _device() -> str:
    """The device the suites will measure on: $TORCHPULSE_DEVICE, else CUDA when the torch
    here has it (the suites decide the same way in asv's environment)."""
    from torchpulse.presets import default_device

    return default_device()


def _span(commits: list[str]) -> str:
    shown = ", ".join(c[:8] for c in commits[:6])
    return shown + (f" and {len(commits) - 6} more" if len(commits) > 6 else "")


def _unjudged(found: Report, window: set[str]) -> tuple[int, tuple[str, ...]]:
    """Series whose disturbed points cost them their verdict (too few commits counted, or
    the newest one not counted), and the commits (in the window) to measure again."""
    history = found.history
    count, commits = 0, set()
    for c in found.checked:
        lost = [x for x in c.disturbed if x in window]
        if lost and (c.status == TOO_FEW or c.newest_disturbed):
            count += 1
            commits.update(lost)
    order = history.position if history else {}
    return count, tuple(sorted(commits, key=lambda x: order.get(x, -1)))


def cut_short(root: Path, machine: str | None) -> list[str]:
    """The commits a killed dashboard of ``machine`` left measured in part (IN_FLIGHT_FILE):
    [] when there is none, it is another machine's, or it cannot be read (it only ever adds
    work: a damaged one is dropped)."""
    path = root / IN_FLIGHT_FILE
    try:
        data = json.loads(read_regular(path, 1 << 20))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("machine") != machine:
        return []
    commits = data.get("commits")
    if not isinstance(commits, list):
        return []
    return [c for c in commits if isinstance(c, str) and FULL_SHA.fullmatch(c)]


def _measure(project: Project, commits: list[str], bench: str, extra: list[str],
             named: list[str], env: dict[str, str], asv: Asv, say: Callable[[str], None],
             hashfile: Path, machine: str | None = None) -> bool:
    """One `asv run` of ``commits``; True when it exited non-zero. Interrupted or killed, the
    results it wrote are rolled back: results/ holds what it held before, so what is stored
    is whole commits measured with every round. Killed with the dashboard (no roll-back
    possible), the in-flight file it leaves names the commits for the next one."""
    if not commits:
        return False
    before = cut_short(project.root, machine)  # half measured already: still so if we stop
    _in_flight(project.root, machine, list(dict.fromkeys(before + commits)))
    try:
        failed = _measured(project, commits, bench, extra, named, env, asv, say, hashfile)
    except BaseException:  # rolled back: this run's commits are as they were
        _in_flight(project.root, machine, before)
        raise
    _in_flight(project.root, machine, [c for c in before if c not in commits])
    return failed


def _in_flight(root: Path, machine: str | None, commits: list[str]) -> None:
    path = root / IN_FLIGHT_FILE
    if commits:
        write_text_atomically(path, json.dumps({"machine": machine, "commits": commits}))
    else:
        path.unlink(missing_ok=True)


def _measured(project: Project, commits: list[str], bench: str, extra: list[str],
              named: list[str], env: dict[str, str], asv: Asv, say: Callable[[str], None],
              hashfile: Path) -> bool:
    path = project.root / hashfile
    write_text_atomically(path, "".join(f"{c}\n" for c in commits))
    args = ["run", *named, "--record-samples", "--interleave-rounds", "--show-stderr", *extra,
            "--bench", bench, f"HASHFILE:{path}"]
    fd, counts_log = tempfile.mkstemp(prefix="torchpulse-counts-", suffix=".jsonl")
    os.close(fd)
    try:
        # the results lock keeps import, merge and record out while asv writes, so a roll-back
        # undoes this run's writes only
        with store.locked(project.results_dir, waiting=lambda: say(
                "== waiting for another command writing the results to finish")), \
                _rolled_back_unless_whole(project.results_dir, commits, say):
            rc = asv(args, {**env, summary.ENV: counts_log})
            if rc < 0:  # killed by a signal: its last results file may be half written
                raise DashboardError(f"asv run was killed (signal {-rc}); the results it "
                                     "wrote were rolled back")
        for line in counts_said(summary.read(Path(counts_log))):
            say(f"   {line}")
    finally:
        os.unlink(counts_log)
    return rc != 0


def counts_said(summaries: Sequence[summary.Summary]) -> list[str]:
    """What each instruction count of an asv run did: asv keeps it to itself."""
    lines = []
    for done in summaries:
        where = f"instructions at {done.commit[:8] or 'this commit'}:"
        if done.unavailable:
            lines.append(f"{where} not counted (counting is unavailable on this run: "
                         "docs/instructions.md says what it needs)")
            continue
        parts = []
        if done.counted:
            minutes, seconds = divmod(round(done.seconds), 60)
            parts.append(f"{done.counted} counted in {minutes} min {seconds:02d} s")
        if done.reused:
            parts.append(f"{done.reused} reused (nothing they are made of changed since an "
                         "earlier count)")
        if done.failed:
            parts.append(f"{done.failed} failed (the site shows them)")
        lines.append(f"{where} {', '.join(parts) or 'nothing to count'}")
    return lines


@contextmanager
def _rolled_back_unless_whole(results_dir: Path, commits: list[str],
                              say: Callable[[str], None]) -> Iterator[None]:
    """Keep the bytes of every results file of ``commits`` (and benchmarks.json) and the
    names of all results files; if the block does not finish, put those files back and remove
    the results files that appeared meanwhile (the run's own: nothing else is deleted)."""
    prefixes = {c[:8] for c in commits}
    before = set(_results_files(results_dir))
    kept = snapshot(p for p in before
                    if p.name.split("-", 1)[0] in prefixes or p.name == "benchmarks.json")
    try:
        yield
    except BaseException:
        created = [p for p in _results_files(results_dir) if p not in before]
        for path in created:
            path.unlink(missing_ok=True)
        restored = restore(kept)
        say(f"== stopped: this run's results rolled back ({restored} file(s) restored, "
            f"{len(created)} removed); results/ holds what it held before")
        raise


def _results_files(results_dir: Path) -> list[Path]:
    if not results_dir.is_dir():
        return []
    return [*results_dir.glob("*/*-*.json"), *results_dir.glob("benchmarks.json")]
