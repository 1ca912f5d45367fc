"""The golden project: one asv project whose series take every shape and status the reports
know (a step, an improvement, a spike, a toggle, a drift, noise, counts, an exact counter,
too few commits, a canary with a busy moment, names and units that are markdown and not
text -- the characters a page refuses are kept out: publish would stop), built the same
byte for byte on every machine: its reports are kept in tests/golden/expected/ and must not
change when the code only moves."""

import datetime
import json
from pathlib import Path

import numpy as np
from asv.results import Results
from asv.runner import BenchmarkResult

from torchpulse.analysis import disturbance
from torchpulse.evaluation import project as evaluation_project

COMMITS = 30
MACHINE, ENV = "golden-m", "golden-env"
CANARY = "benchmarks._canary." + disturbance.CANARY_METHOD
TIME = "bench_time.Shapes.time_shape"
SHAPES = ("'step'", "'noise'", "'improve'", "'spike'", "'toggle'", "'drift'",
          "'a|b *x* [x](https://evil.invalid) _u_'")
COUNT = "bench_count.Counted.track_instructions"
COUNTED = ("'flat'", "'plus2'")
EXACT = "bench_exact.Dynamo.track_breaks"
FEW = "bench_few.New.time_new"
ODD = "bench_odd.Odd.track_odd"
ODD_UNIT = "s | ![p](https://evil.invalid/p.png) [c](https://evil.invalid) *b*"
BASE = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
BUSY = 12  # the commit whose run the canary reads slow


def _shape(name: str, c: int, rng: np.random.Generator) -> float:
    level = 0.010
    if name == "'step'":
        level *= 1.12 if c >= 20 else 1.0
    elif name == "'improve'":
        level *= 0.85 if c >= 15 else 1.0
    elif name == "'spike'":
        level *= 1.5 if c == 25 else 1.0
    elif name == "'toggle'":
        level *= 1.08 if (c * 7) % 3 == 0 else 1.0
    elif name == "'drift'":
        level *= 1.0 + 0.1 * min(max(c - 5, 0), 20) / 20
    elif name.startswith("'a|b"):
        level *= 1.3 if c >= 27 else 1.0
    return level * float(np.exp(rng.normal(0, 0.01)))


def _add(results: Results, name: str, params: list, values: list, samples: list,
         at: datetime.datetime) -> None:
    result = BenchmarkResult(result=values, samples=samples,
                             number=[1 if s else None for s in samples],
                             errcode=0, stderr="", profile=None)
    results.add_result({"name": name, "version": "1", "params": params}, result,
                       started_at=at, duration=10.0, record_samples=True)


def build(path: Path) -> list[str]:
    """Write the project into the empty folder ``path``; its commits, oldest first."""
    shas = evaluation_project.git_repo(path, COMMITS)
    (path / "asv.conf.json").write_text(json.dumps(evaluation_project.CONF, indent=2) + "\n")
    rng = np.random.default_rng(20261127)
    results_dir = path / "results"
    (results_dir / MACHINE).mkdir(parents=True)
    (results_dir / MACHINE / "machine.json").write_text(json.dumps(
        {"machine": MACHINE, "arch": "x86_64", "cpu": "golden", "num_cpu": "2", "os": "Linux",
         "ram": "1", "version": 1}))
    for c, sha in enumerate(shas):
        at = BASE + datetime.timedelta(minutes=30 * c)
        results = Results({"machine": MACHINE, "python": "3.11"}, {}, sha,
                          1_700_000_000_000 + c * 3_600_000, "3.11", ENV, {})
        busy = 2.2 if c == BUSY else 1.0
        canary = [0.05 * busy * (1 + 0.002 * k) for k in range(-5, 5)]
        _add(results, CANARY, [], [float(np.median(canary))], [canary], at)
        values, samples = [], []
        for name in SHAPES:
            v = _shape(name, c, rng) * (1.0 if c != BUSY else 1.3)
            s = [v * float(np.exp(rng.normal(0, 0.005))) for _ in range(6)]
            values.append(float(np.median(s)))
            samples.append(s)
        _add(results, TIME, [list(SHAPES)], values, samples,
             at + datetime.timedelta(seconds=20))
        counts = [float(1_000_000 + int(rng.integers(0, 40))),
                  float(2_000_000 * (1.02 if c >= 22 else 1.0) + int(rng.integers(0, 40)))]
        _add(results, COUNT, [list(COUNTED)], counts, [None, None],
             at + datetime.timedelta(seconds=40))
        _add(results, EXACT, [], [1.0 if c >= 18 else 0.0], [None],
             at + datetime.timedelta(seconds=50))
        if c >= COMMITS - 2:
            _add(results, FEW, [], [0.2], [[0.2, 0.201, 0.199]],
                 at + datetime.timedelta(seconds=60))
        _add(results, ODD, [], [3.0 * (1.4 if c >= 24 else 1.0)], [None],
             at + datetime.timedelta(seconds=70))
        results.save(str(results_dir))
    declared = {"version": 2}
    for name, params, unit, kind in (
            (CANARY, [], "seconds", "time"), (TIME, [list(SHAPES)], "seconds", "time"),
            (COUNT, [list(COUNTED)], "instructions", "track"),
            (EXACT, [], "graph breaks", "track"), (FEW, [], "seconds", "time"),
            (ODD, [], ODD_UNIT, "track")):
        declared[name] = {"name": name, "params": params,
                          "param_names": ["p"] * len(params), "type": kind, "unit": unit,
                          "version": "1", "code": "", "timeout": 60.0}
    (results_dir / "benchmarks.json").write_text(json.dumps(declared, indent=1))
    return shas
