"""Modules of this working tree's torchpulse, loaded by path (underscore: no benchmarks here).

asv takes the suites from the working tree but imports torchpulse from the commit it measures,
which may be older. What the suites must agree on with this tree (the name lists their
parameters come from, the definitions of the stubs for imported results) is therefore read
from src/torchpulse/ here. Such modules use the standard library only.

A project made by `torchpulse init --with-suites` has no src/ of its own: there the torchpulse
installed beside each commit (the project's wheel, the same at every commit) stands in.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _package() -> Path:
    here = ROOT / "src" / "torchpulse"
    if here.is_dir():
        return here
    spec = importlib.util.find_spec("torchpulse")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("neither src/torchpulse here nor an installed torchpulse")
    return Path(next(iter(spec.submodule_search_locations)))


PACKAGE = _package()


def load(relative):
    """src/torchpulse/<relative> as a module of its own (cached per process)."""
    name = "_torchpulse_tree_" + relative.removesuffix(".py").replace("/", "_")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PACKAGE / relative)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while executing it
        spec.loader.exec_module(module)
    return sys.modules[name]
