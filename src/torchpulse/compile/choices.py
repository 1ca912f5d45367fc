"""The backends and sizes the compile suite accepts. Torch-free: the CLI's parser reads them,
and `torchpulse --help` must not pay for importing torch."""

BACKENDS = ("eager", "aot_eager", "inductor")
SIZES = ("smoke", "cpu", "cuda")
