"""torchpulse: performance-regression tracking for PyTorch workloads on top of asv."""

__version__ = "0.1.0"
