"""Modules of this working tree's torchpulse, loaded by path (underscore: no benchmarks here).

asv takes the suites from the working tree but imports torchpulse from the commit it measures,
which may be older. What the suites must agree on with this tree (the name lists their
parameters come from, the definitions of the stubs for imported results) is therefore read
from src/torchpulse/ here. Such modules use the standard library only.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "torchpulse"


def load(relative):
    """src/torchpulse/<relative> as a module of its own (cached per process)."""
    name = "_torchpulse_tree_" + relative.removesuffix(".py").replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PACKAGE / relative)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while executing it
        spec.loader.exec_module(module)
    return sys.modules[name]
