"""Which kernels make a workload's kernel time move between processes: one process profiles
``--calls`` calls of each workload after its warm-up and prints, a line a kernel name, how
many times a call launches it and its device time a call (experiments/diary/gpu.md, "cuDNN's LSTM
backward"). Run it in several processes and compare the lines.

    python experiments/gpu/kernel_names.py LABEL [--workloads 'rnns/cudnn/*'] [--calls 10]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("label")
    parser.add_argument("--workloads", default="rnns/cudnn/backward")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--preset", default="cuda")
    args = parser.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from torchpulse import sizes
    from torchpulse.autograd import choices as autograd
    from torchpulse.fastrnns import choices as fastrnns
    from torchpulse.gpu.measure import sizes_at
    from torchpulse.workloads import registry
    from torchpulse.workloads.regions import build
    tables = sizes_at(sizes.by_preset(), args.preset)
    cuda = args.device != "cpu"  # on the CPU (a dry run): the operators
    activity = ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU
    kind = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    for name in registry.matching(registry.workloads(fastrnns, autograd), args.workloads):
        region = build(name, tables, args.device, args.preset, built={})
        for _ in range(region.settle + 2):
            region.run()
        sync()
        with profile(activities=[activity]) as prof:
            for _ in range(args.calls):
                region.run()
            sync()
        count: dict[str, int] = defaultdict(int)
        device_ns: dict[str, float] = defaultdict(float)
        for e in prof.events():
            if e.device_type == kind:
                count[e.name] += 1
                device_ns[e.name] += (e.device_time_total if cuda else e.cpu_time) * 1e3
        total = sum(device_ns.values()) / args.calls
        print(f"{args.label} {name}: {total / 1e3:.2f} us a call on the device")
        for kernel in sorted(device_ns, key=device_ns.get, reverse=True)[:8]:
            print(f"{args.label} {name}   {count[kernel] / args.calls:6.1f} x "
                  f"{device_ns[kernel] / args.calls / 1e3:9.2f} us  {kernel[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
