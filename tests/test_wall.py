"""torchpulse.wall, the wall-time side of compare --python: one process times the workloads it
is given, and reads the peak memory of those it is asked for."""

from torchpulse import sizes, wall


def test_peak_memory_is_read_only_where_asked():
    lines = []
    wall.measure(["rnns/aten/forward", "rnns/aten/backward"], sizes.INSTRUCTIONS,
                 "instructions", 0.01, lines.append, peak=["rnns/aten/forward"])
    identity, first, second = lines
    assert identity["torch"] and identity["resident"] > 0
    assert len(first["wall"]) >= wall.MIN_SAMPLES and len(second["wall"]) >= wall.MIN_SAMPLES
    # the process's peak with the workload in it: at least what was resident after import
    assert first["peak_rss"] >= identity["resident"] * 0.9
    assert second["peak_rss"] is None
