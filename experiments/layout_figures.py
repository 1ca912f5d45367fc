"""The figures of the code's shape issue 86 asks for, from the source alone:

    python experiments/layout_figures.py

modules of src/torchpulse over 300 lines, functions over 60 lines, and the import graph
between the package's parts (top-level packages and modules, lazy imports included): the
circles in it (parts that reach each other) and the edges among the measuring parts.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "torchpulse"
sys.path.insert(0, str(ROOT / "tests"))
from test_layout import MEASURE, SHARED, part_edges, reach  # noqa: E402  (the test's reading)

sources = sorted(PACKAGE.rglob("*.py"))
long_modules = [(len(p.read_text().splitlines()), str(p.relative_to(PACKAGE))) for p in sources]
long_modules = sorted((n, p) for n, p in long_modules if n > 300)
long_functions = []
for path in sources:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > 60:
                long_functions.append((length, f"{path.relative_to(PACKAGE)}:{node.name}"))
edges = part_edges()
circles = sorted({tuple(sorted(p for p in reach(edges, a) if a in reach(edges, p)))
                  for a in edges if a in reach(edges, a)})
print(f"modules over 300 lines: {len(long_modules)}")
for n, p in long_modules:
    print(f"  {n:4d} {p}")
print(f"functions over 60 lines: {len(long_functions)}")
for n, f in sorted(long_functions, reverse=True):
    print(f"  {n:4d} {f}")
print(f"circles between parts: {len(circles)} {circles}")
measuring = sorted((a, b) for a, bs in edges.items() for b in bs
                   if a in MEASURE and b in MEASURE and b not in SHARED)
print(f"edges among the measuring parts: {len(measuring)}")
for a, b in measuring:
    print(f"  {a} -> {b}")
