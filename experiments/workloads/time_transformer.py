"""Time the transformer family's regions at a preset, as its wall-time suite does (one
thread at the cpu preset, warmed up, region clock), outside asv:

    python experiments/workloads/time_transformer.py [PRESET] [CALLS]

Prints each region's median and range in ms: the figure sizes.TRANSFORMERS's comment states.
"""

import statistics
import sys

import torch

from torchpulse import sizes
from torchpulse.presets import PRESETS
from torchpulse.timing import RegionClock
from torchpulse.workloads.transformer import Encoder

preset = sys.argv[1] if len(sys.argv) > 1 else "cpu"
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20
if PRESETS[preset].num_threads:
    torch.set_num_threads(PRESETS[preset].num_threads)
for model, rows in sizes.TRANSFORMERS.items():
    encoder = Encoder(model, rows[preset], "cpu", 1234)
    for region in ("forward", "backward"):
        times = []
        for call in range(encoder.settle + calls):
            clock = RegionClock("cpu")
            if region == "forward":
                encoder.forward(clock)
            else:
                encoder.step(backward_clock=clock)
            if call >= encoder.settle:
                times.append(clock() * 1e3)
        print(f"{model} {region} at {preset}: median {statistics.median(times):.1f} ms "
              f"[{min(times):.1f}, {max(times):.1f}] over {calls} calls, "
              f"{torch.get_num_threads()} thread(s)")
