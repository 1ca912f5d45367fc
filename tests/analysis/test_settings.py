"""The detector's settings as one value: each rule's threshold, and the cache key."""

from torchpulse.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_COUNT_THRESHOLD,
    DEFAULT_DEVICE_THRESHOLD,
    DEFAULT_NOISE_FLOOR,
    DEFAULT_THRESHOLD,
)
from torchpulse.analysis.settings import DEFAULTS, Settings
from torchpulse.cli import build_parser
from torchpulse.kinds import COUNT, DEVICE, EXACT, KINDS, TIME, UNITS, Kind, Unit, kind_of


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


def test_every_command_that_judges_takes_a_kinds_threshold_option_from_its_row(monkeypatch):
    """The threshold options are made from KINDS: every command that judges (the alert's
    and compare's and bisect's) has one a kind with a setting, with the row's default, and
    a kind added to the table gets its option on every one of them with nothing else (its
    threshold's field is Settings', which the row names)."""
    commands = (["alert"], ["dashboard"], ["publish"], ["compare", "a", "b"],
                ["bisect", "--bench", "x", "a", "b"])
    for command in commands:
        args = build_parser().parse_args(command)
        assert {k.setting: getattr(args, k.setting) for k in KINDS.values() if k.setting} \
            == {k.setting: k.default_threshold for k in KINDS.values() if k.setting}, command
    cycles = Kind("cycles", "cycle counts", "cycle_threshold", 0.002, True, True,
                  option_help="the same for cycle counts")
    monkeypatch.setitem(KINDS, "cycles", cycles)
    monkeypatch.setattr(Settings, "cycle_threshold", 0.002, raising=False)
    for command in commands:
        args = build_parser().parse_args([*command, "--cycle-threshold", "1%"])
        assert args.cycle_threshold == 0.01, command
    assert "--cycle-threshold FRACTION" in _help("alert")
    assert "the same for cycle counts (default: 0.2%)" in " ".join(_help("alert").split())


def _help(command: str) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([command, "--help"])
    return out.getvalue()


def test_every_kind_names_a_setting_its_threshold_lives_in_and_every_unit_a_kind():
    for kind in KINDS.values():
        assert kind.setting is None or hasattr(DEFAULTS, kind.setting), kind
        assert DEFAULTS.threshold_for(kind.name) == kind.default_threshold
        assert kind.repeats == (kind.name in (COUNT, EXACT))  # what compare decides at once
    assert {u.kind for u in UNITS.values()} <= set(KINDS)
    assert kind_of("a unit nobody declared").name == TIME


def test_a_new_unit_is_one_row(monkeypatch):
    """A unit added to the table is judged, compared, written and kept from the canary's
    rule as its kind says, with nothing else changed."""
    from torchpulse.analysis.series import Series, SeriesKey
    from torchpulse.culprit import counted
    from torchpulse.reports.phrases import human

    key = SeriesKey("b.Work.track_cycles", (), "m", "e")
    assert Series(key, "cycles").rule == TIME and not Series(key, "cycles").load_independent
    monkeypatch.setitem(UNITS, "cycles", Unit("cycles", COUNT, "count"))
    series = Series(key, "cycles")
    assert series.rule == COUNT and series.load_independent
    assert DEFAULTS.threshold_for(series.rule) == DEFAULT_COUNT_THRESHOLD
    assert counted.repeats(counted.rule("cycles"))
    assert human(1_234_567.0, "cycles") == "1,234,567 cycles"
