"""The layout's promises, checked on the source: data flows one way through the folders, asv's
results API is used in one adapter, and nothing cites documents outside the repository."""

import ast
import re
from pathlib import Path

import pytest
from paths import ROOT

PACKAGE = ROOT / "src" / "torchpulse"
# stages in the order data flows through them; a stage may import only earlier ones
MEASURE = {"fastrnns", "autograd", "compile", "models", "sizes", "presets", "timing", "allocation",
           "suite", "harness", "instructions", "workloads", "gpu", "wall"}
# imported by everything, import nothing of ours
SHARED = {"errors", "files", "text", "signals", "kinds", "__init__"}
STAGES = [MEASURE, {"results"}, {"analysis"}, {"reports"}, {"culprit", "fleet", "evaluation"},
          {"site"}, {"dashboard"}, {"cli"}, {"testing"}]


def stage_of(part: str) -> int:
    return next(i for i, stage in enumerate(STAGES) if part in stage)


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; relative ones resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module)
    return found


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_stage():
    for path in sources():
        part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        assert part in SHARED or any(part in s for s in STAGES), f"{path}: which stage?"


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_data_flows_one_way(path):
    """measure -> results -> analysis -> reports -> culprit/fleet/evaluation -> site ->
    dashboard -> cli (-> testing):
    nothing imports a later stage."""
    part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    for name in imports(path):
        if not name.startswith("torchpulse."):
            continue
        target = name.split(".")[1]
        if target in SHARED:
            continue
        assert part not in SHARED, f"{path} is shared but imports {name}"
        assert stage_of(target) <= stage_of(part), f"{path} reaches forward into {name}"


def test_the_product_does_not_import_the_test_fixtures():
    """torchpulse.testing holds fixtures for tests and experiments: nothing else imports it."""
    users = {str(p.relative_to(PACKAGE)) for p in sources()
             if p.relative_to(PACKAGE).parts[0] != "testing"
             and any(n.startswith("torchpulse.testing") for n in imports(p))}
    assert users == set()


def test_asv_is_used_through_three_modules_only():
    """results/asv_results.py adapts asv's Results API, results/project.py loads configs
    with asv's loader and site/regressions.py writes asv's regressions files (graph paths,
    feed); nothing else imports asv (the site runs `python -m asv publish`)."""
    users = {str(p.relative_to(PACKAGE)) for p in sources()
             if any(n == "asv" or n.startswith("asv.") for n in imports(p))}
    assert users == {"results/asv_results.py", "results/project.py", "site/regressions.py"}


def test_nothing_cites_documents_outside_the_repository():
    outside = re.compile(r"DESIGN(\.md)?\s*\d|DESIGN\.md|\.\./shared|shared/DESIGN")
    checked = [*sources(), *(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
               *(ROOT / "scripts").iterdir(), ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    cited = [str(p.relative_to(ROOT)) for p in checked
             if p.is_file() and p != Path(__file__) and outside.search(p.read_text())]
    assert cited == []


def test_what_the_suites_load_from_the_working_tree_is_standard_library_only():
    """benchmarks/_tree.py loads these files by path from the working tree, next to an older
    commit's torchpulse: they may import nothing but the standard library."""
    import sys

    loaded = set()
    for path in (ROOT / "benchmarks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                loaded.add(node.args[0].value)
    assert {"sizes.py", "autograd/choices.py", "fastrnns/choices.py",
            "workloads/registry.py"} <= loaded
    allowed = sys.stdlib_module_names | {"__future__"}
    for relative in loaded:
        tree = ast.parse((PACKAGE / relative).read_text())
        optional = set()  # imported under `try: ... except ImportError`
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                    getattr(h.type, "id", None) in ("ImportError", "ModuleNotFoundError")
                    for h in node.handlers):
                optional |= {a.name for n in node.body if isinstance(n, ast.Import)
                             for a in n.names}
        for name in imports(PACKAGE / relative) - optional:
            assert name.split(".")[0] in allowed, f"{relative} imports {name}"


# the modules that measure: what a workload is must not depend on how it is measured
METERS = {"timing", "instructions", "gpu", "wall", "suite", "harness", "compile"}


def test_the_workloads_import_no_meter():
    """workloads/ says what is measured (names, sizes' rows, builders, the clock protocol);
    the meters import it, never the reverse."""
    paths = sorted((PACKAGE / "workloads").rglob("*.py"))
    assert {p.name for p in paths} >= {"registry.py", "regions.py", "clock.py"}
    for path in paths:
        reached = {n.split(".")[1] for n in imports(path) if n.startswith("torchpulse.")}
        assert reached & METERS == set(), f"{path.name} imports {reached & METERS}"


def test_every_meter_implements_the_one_clock_protocol():
    from torchpulse.gpu.measure import _MemoryClock
    from torchpulse.gpu.trace import ProfiledClock
    from torchpulse.instructions.client import CountedRegion
    from torchpulse.timing import RegionClock
    from torchpulse.workloads.clock import Clock

    for meter in (RegionClock, CountedRegion, ProfiledClock, _MemoryClock):
        assert issubclass(meter, Clock), meter


def _private_reaches(path: Path) -> list[str]:
    """Private names (one leading underscore) of other torchpulse modules that ``path``
    imports or reads through an imported name."""
    tree = ast.parse(path.read_text(), str(path))
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchpulse"):
            for a in node.names:
                imported.add(a.asname or a.name)
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            imported |= {a.asname or a.name.split(".")[0] for a in node.names
                         if a.name.startswith("torchpulse")}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in imported and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return found


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_reaches_into_another_ones_private_names(path):
    """A private name is a module's own business: what another module needs is made public
    (evaluation's shapes.py imported the detector's _Tester for its best split; the detector
    exports best_split now)."""
    assert _private_reaches(path) == []


def test_the_private_name_check_sees_both_ways_in(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("from torchpulse.analysis.detector.changes import _active\n"
                      "from torchpulse.analysis.detector import changes\nx = changes._segmented\n"
                      "y = changes.__name__\n")
    assert _private_reaches(sample) == ["from torchpulse.analysis.detector.changes import _active",
                                        "changes._segmented (line 3)"]


SMALL = ("analysis", "reports", "evaluation")  # the stages held to a newcomer's reading size


@pytest.mark.parametrize("path", [p for p in sources()
                                  if p.relative_to(PACKAGE).parts[0] in SMALL],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_analysis_reports_and_evaluation_read_in_small_pieces(path):
    """No module there over 400 lines, no function over 60: a newcomer reads one at a time
    (detect.py was 785 lines, its analyse 117)."""
    text = path.read_text()
    assert len(text.splitlines()) <= 400
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > 60]
    assert long == []


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_detector_is_read_through_its_package(path):
    """analysis/detector/ has one door: what the rest of torchpulse uses of it, its
    __init__ exports; its modules are its own business."""
    if path.relative_to(PACKAGE).parts[:2] == ("analysis", "detector"):
        return
    inside = sorted(n for n in imports(path)
                    if n.startswith("torchpulse.analysis.detector."))
    assert inside == []


def test_asv_is_started_from_one_module():
    """results/asv_process.py starts every asv command (process group, stop on interrupt,
    one message when it cannot start): no other module builds an asv command line or starts
    one itself."""
    by_hand = re.compile(r"""["']-m["'],\s*["']asv["']|\bLAUNCH\b|get_machine_file_path""")
    starters = {str(p.relative_to(PACKAGE)) for p in sources() if by_hand.search(p.read_text())}
    assert starters == {"results/asv_process.py"}


def test_locks_are_taken_through_one_helper():
    """files.py's locked_folder and locked_file are how torchpulse waits for a lock; the
    counting stage's try-lock (instructions/normalised.py: is a stage still in use?) is the
    one other flock, and it never waits."""
    users = {str(p.relative_to(PACKAGE)) for p in sources() if "fcntl" in imports(p)}
    assert users == {"files.py", "instructions/normalised.py"}


def part_edges() -> dict[str, set[str]]:
    """The import graph between the package's parts (top-level packages and modules, lazy
    imports included): part -> the other parts it imports."""
    edges: dict[str, set[str]] = {}
    for path in sources():
        here = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        edges.setdefault(here, set()).update(
            n.split(".")[1] for n in imports(path)
            if n.startswith("torchpulse.") and n.split(".")[1] != here)
    return edges


def reach(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every part ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_two_parts_of_the_package_reach_each_other():
    """No circle in the graph between the package's parts: gpu/ and suite.py reached each
    other through a constant (experiments/layout_figures.py prints the graph)."""
    edges = part_edges()
    assert [part for part in edges if part in reach(edges, part)] == []
