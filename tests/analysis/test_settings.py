"""The detector's settings as one value: each rule's threshold, and the cache key."""

from torchpulse.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_DEVICE_THRESHOLD,
    DEFAULT_NOISE_FLOOR,
    DEFAULT_THRESHOLD,
)
from torchpulse.analysis.series import COUNT, DEVICE, EXACT, TIME
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.cli import build_parser


def test_each_rule_has_its_threshold():
    s = Settings(threshold=0.1, count_threshold=0.02, device_threshold=0.03)
    assert s.threshold_for(TIME) == 0.1 and s.threshold_for(COUNT) == 0.02
    assert s.threshold_for(DEVICE) == 0.03
    assert s.threshold_for(EXACT) is None  # any increase of an exact counter


def test_the_defaults_are_the_documented_ones_and_every_setting_changes_the_key():
    assert DEFAULTS.key == (DEFAULT_ALPHA, DEFAULT_THRESHOLD, DEFAULT_COUNT_THRESHOLD,
                            DEFAULT_NOISE_FLOOR, DEFAULT_DEVICE_THRESHOLD)
    changed = [Settings(alpha=0.05), Settings(threshold=0.1), Settings(count_threshold=0.02),
               Settings(noise_floor=0.01), Settings(device_threshold=0.03)]
    assert len({DEFAULTS.key, *(s.key for s in changed)}) == 6


def test_the_command_line_gives_every_command_that_judges_the_same_settings():
    from torchpulse.cli.args import alert_settings

    for command in (["alert"], ["dashboard"], ["publish"], ["disturbed"]):
        args = build_parser().parse_args([*command, "--threshold", "0.1", "--alpha", "0.05",
                                          "--count-threshold", "0.01", "--noise-floor",
                                          "0.002", "--device-threshold", "0.03"])
        assert alert_settings(args) == Settings(0.05, 0.1, 0.01, 0.002, 0.03), command
