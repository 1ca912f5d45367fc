"""The transformer family: a small encoder's forward alone, backward alone, and the peak
memory of a training step (the process's), on CPU runs; on CUDA runs bench_gpu measures
them. Its version digests the family's own sizes (sizes.TRANSFORMERS) only: adding this
family left every other suite's series and version alone."""

# a fleet shard of this module alone still reads its machine
from ._canary import MachineCanary  # noqa: F401
from ._common import _model_suite

Transformer = _model_suite("transformers")
