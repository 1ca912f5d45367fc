"""The malloc preloaded into the counted process (``allocator.c``): its calls cost the same
instructions wherever the heap's blocks lie, so a commit that moves the heap (an edit to an
imported module, a longer string anywhere) does not move a count through glibc's allocator
(docs/instructions.md, "Determinism": up to 0.64 % before)."""

from __future__ import annotations

from pathlib import Path

from torchpulse.instructions import native

SOURCE = Path(__file__).with_name("allocator.c")
# -fno-builtin: the compiler would turn calloc's malloc-then-memset into a call to calloc
FLAGS = ("-O2", "-fno-builtin")


def library() -> Path | None:
    """The compiled allocator (built once into torchpulse's cache), or None where no C
    compiler is found."""
    return native.library(SOURCE.read_text(), "fixed-cost-malloc", FLAGS)
