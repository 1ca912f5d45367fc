"""The summary page's per-series chart: an SVG whose marks sit where the series' points,
change points, disturbed points and baseline are."""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from torchpulse.analysis.detector import Point, analyse
from torchpulse.analysis.model import Checked
from torchpulse.analysis.series import Series, SeriesKey
from torchpulse.site import sparkline

SVG = "{http://www.w3.org/2000/svg}"


def checked_of(values, disturbed=(), unit="seconds") -> Checked:
    points = [Point(f"{i:040x}", v, disturbed=i in disturbed) for i, v in enumerate(values)]
    series = Series(SeriesKey("b.T.time_x", (), "m", "e"), unit, points)
    verdict = analyse([p for p in points if not p.disturbed])
    return Checked(series, verdict, "ok")


def parse(svg: str) -> ET.Element:
    # the page is HTML; the chart is also well-formed SVG once the namespace is declared
    return ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def marks(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if e.get("class") == cls]


def levels(root: ET.Element) -> list[tuple[float, float]]:
    (line,) = marks(root, "polyline", "levels")
    return [tuple(map(float, xy.split(","))) for xy in line.get("points").split()]


def step_series(n=30, at=18, size=0.2, seed=0):
    rng = np.random.default_rng(seed)
    return [float(v) for v in np.exp(rng.normal(0, 0.01, n)) * np.where(
        np.arange(n) >= at, 1 + size, 1.0)]


def test_every_point_is_drawn_and_a_higher_value_sits_higher():
    values = step_series()
    root = parse(sparkline.render(checked_of(values), 0.05))
    xy = levels(root)
    assert len(xy) == len(values)
    xs = [x for x, _ in xy]
    assert xs == sorted(xs) and xs[0] >= 0 and xs[-1] <= sparkline.WIDTH
    # SVG's y grows downwards
    order = np.argsort(values)
    assert [xy[i][1] for i in order] == sorted((y for _, y in xy), reverse=True)
    assert all(0 <= y <= sparkline.HEIGHT for _, y in xy)


def test_the_change_point_rule_is_at_the_first_commit_of_the_new_level():
    c = checked_of(step_series(at=18))
    assert [cp.index for cp in c.verdict.change_points] == [18]
    root = parse(sparkline.render(c, 0.05))
    (rule,) = marks(root, "line", "change")
    assert float(rule.get("x1")) == pytest.approx(levels(root)[18][0])
    assert "+2" in rule.find(SVG + "title").text  # about +20 %


def test_disturbed_points_are_hollow_off_the_line_and_change_points_map_past_them():
    values = step_series(at=18)
    values[5] *= 1.5  # measured while another job ran
    c = checked_of(values, disturbed={5})
    root = parse(sparkline.render(c, 0.05))
    xy = levels(root)
    assert len(xy) == len(values) - 1  # the line joins the counted points only
    (hollow,) = marks(root, "circle", "disturbed")
    assert float(hollow.get("cx")) not in [x for x, _ in xy]
    assert "disturbed" in hollow.find(SVG + "title").text
    # detection ran on 29 counted points, where the step is at 17; drawn at commit 18
    assert [cp.index for cp in c.verdict.change_points] == [17]
    (rule,) = marks(root, "line", "change")
    assert float(rule.get("x1")) == pytest.approx(xy[17][0])  # commit 18's x
    assert "1 disturbed" in root.get("aria-label")


def test_the_band_is_the_threshold_around_the_current_level():
    values = step_series(at=18)
    root = parse(sparkline.render(checked_of(values), 0.05))
    (band,) = marks(root, "rect", "band")
    (base,) = marks(root, "line", "baseline")
    top, height = float(band.get("y")), float(band.get("height"))
    assert top < float(base.get("y1")) < top + height
    # the baseline is the new level's median: the newest points sit around it, the old below
    newest_y = [y for _, y in levels(root)[18:]]
    assert min(newest_y) < float(base.get("y1")) < max(newest_y)
    assert all(y > top + height for _, y in levels(root)[:18])
    assert sparkline.baseline(checked_of(values)) == pytest.approx(
        float(np.median(values[18:])))


def test_a_constant_series_is_a_flat_line_without_dividing_by_zero():
    root = parse(sparkline.render(checked_of([4096.0] * 12, unit="bytes"), 0.05))
    ys = {y for _, y in levels(root)}
    assert len(ys) == 1 and 0 < ys.pop() < sparkline.HEIGHT
    assert not marks(root, "line", "change")


def test_zeros_are_drawn_on_a_linear_scale():
    values = [0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 0.0]  # a failure count: no logarithm
    xy = levels(parse(sparkline.render(checked_of(values, unit="unit"), 0.05)))
    ys = [y for _, y in xy]
    assert ys[0] == ys[2] == ys[4] and ys[1] == ys[5]
    assert ys[1] - ys[3] == pytest.approx(ys[0] - ys[1], abs=0.2)  # evenly spaced


def test_only_the_newest_commits_are_drawn():
    values = step_series(n=200, at=20)
    c = checked_of(values)
    root = parse(sparkline.render(c, 0.05, newest=60))
    assert len(levels(root)) == 60
    assert not marks(root, "line", "change")  # the step at 20 is older than the window
    assert "60 commits" in root.get("aria-label")


def test_nothing_to_draw_gives_no_chart():
    assert sparkline.render(checked_of([math.nan, math.inf]), 0.05) == ""
