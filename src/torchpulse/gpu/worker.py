"""The GPU side of ``torchpulse compare --python A --python B --gpu``: the selected workloads
measured on CUDA in one process of the environment being compared, as ``bench_gpu`` measures
them for a commit (torchpulse.gpu.measure).

    python -m torchpulse.gpu.worker < REQUEST.json > one JSON line a workload

The request names the workloads (workloads/registry.py), the sizes table (``{"fastrnns", "autograd",
"revisions"}`` of sizes.py) and the preset. The first line out says which torch this process
imported (torchpulse.wall.build_identity); then, per workload as it is done, ``{"name",
"kernel_time": [device seconds, a sample a profiled call], "kernels", "syncs",
"gpu_memory", "wall": [...], "profile": {"kernel_time", "kernel_launches", "syncs"}}`` or
``{"name", "error"}``. Without CUDA it measures nothing unless ``$TORCHPULSE_GPU_SUITE=cpu``
asks for a dry run of the path on the CPU (no kernels, no GPU memory: never a figure).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    import torch

    from torchpulse.gpu import GPU_SUITE_ENV
    from torchpulse.gpu.measure import measure, sizes_at
    from torchpulse.wall import build_identity
    from torchpulse.workloads.registry import row

    request = json.load(sys.stdin)

    def emit(line: dict) -> None:
        print(json.dumps(line), flush=True)

    emit(build_identity())
    dry_run = os.environ.get(GPU_SUITE_ENV) == "cpu"
    if not torch.cuda.is_available() and not dry_run:
        for name in request["names"]:
            emit({"name": name, "error": "CUDA is not available in this environment"})
        return 0
    rows = sizes_at(request["tables"], request["preset"])
    runnable = []
    for name in request["names"]:
        if row(name, rows) is None:
            emit({"name": name, "error": f"no sizes at the {request['preset']} preset"})
        else:
            runnable.append(name)

    def each(name: str, done: dict) -> None:
        if "failed" in done:
            emit({"name": name, "error": done["failed"].splitlines()[-1]})
        else:
            emit({"name": name, **done["figures"]})

    measure(runnable, rows, "cpu" if dry_run and not torch.cuda.is_available() else "cuda",
            request["preset"], each=each)
    return 0


if __name__ == "__main__":
    sys.exit(main())
