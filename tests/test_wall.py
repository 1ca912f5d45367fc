"""torchpulse.wall, the wall-time side of compare --python: one process times the workloads it
is given, and reads the peak memory of those it is asked for."""

import json
import subprocess
import sys

from torchpulse import sizes, wall


def test_peak_memory_is_read_only_where_asked(tmp_path):
    # a process of its own, as compare starts it: its peak is its own, not a test worker's
    request = json.dumps({"names": ["rnns/aten/forward", "rnns/aten/backward"],
                          "tables": sizes.INSTRUCTIONS, "preset": "instructions",
                          "seconds": 0.01, "peak": ["rnns/aten/forward"]})
    done = subprocess.run([sys.executable, "-m", "torchpulse.wall"], input=request,
                          capture_output=True, text=True, check=True, cwd=tmp_path,
                          timeout=600)
    identity, first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert identity["torch"] and identity["resident"] > 0
    assert len(first["wall"]) >= wall.MIN_SAMPLES and len(second["wall"]) >= wall.MIN_SAMPLES
    # the process's peak with the workload in it: at least what was resident after import
    assert first["peak_rss"] >= identity["resident"] * 0.9
    assert second["peak_rss"] is None
