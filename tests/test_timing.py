import pytest

from torchpulse import timing
from torchpulse.timing import Measurement, RegionClock


class FakeTime:
    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


@pytest.fixture
def fake_time(monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(timing.time, "perf_counter", fake.perf_counter)
    return fake


def test_region_clock_counts_only_time_inside_regions(fake_time):
    clock = RegionClock("cpu")
    assert clock() == 0.0
    fake_time.now += 5.0  # outside any region
    with clock.region():
        fake_time.now += 0.25
    fake_time.now += 7.0
    with clock.region():
        fake_time.now += 0.5
    assert clock() == pytest.approx(0.75)


def test_region_clock_as_a_timeit_timer(fake_time):
    """asv reads the clock before and after a sample; only the region counts."""
    import timeit

    clock = RegionClock("cpu")

    def step():
        fake_time.now += 1.0  # e.g. the untimed forward pass
        with clock.region():
            fake_time.now += 0.125  # the timed backward pass

    assert timeit.Timer(stmt=step, timer=clock).timeit(number=4) == pytest.approx(0.5)


def test_region_clock_on_a_real_cpu_region_is_positive():
    clock = RegionClock("cpu")
    with clock.region():
        sum(range(10_000))
    assert clock() > 0


def test_measurement_statistics():
    m = Measurement.of([0.1, 0.2, 0.3, 0.4])
    assert m.mean == pytest.approx(0.25)
    assert m.median == pytest.approx(0.25)
    assert m.std == pytest.approx(0.129099, rel=1e-5)  # sample std, as torch.Tensor.std
    assert Measurement.of([0.5]).std == 0.0
    with pytest.raises(ValueError):
        Measurement.of([])
