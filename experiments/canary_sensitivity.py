"""How the machine canary reads an idle machine and one with a busy core, and whether the
torch build moves it: benchmarks/_canary.py timed as asv reads it (medians of 10 samples),
idle and beside a pure-Python hog, in the interpreters given.

    python experiments/canary_sensitivity.py [PYTHON ...]

Each PYTHON (default: this one) times the canary in a process of its own; the hog is a
process spinning on one core. Prints, per interpreter, the idle and busy medians and their
ratio. A canary that does not depend on the library under test reads the same under two
torch builds; one that sees a busy core reads it at least 1.5x (the disturbance rule's
limit is at most 1.8x: analysis/disturbance.py).
"""

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READ = f"""
import json, statistics, sys, time
sys.path.insert(0, {str(ROOT)!r})
from benchmarks import _canary
canary = _canary.MachineCanary()
canary.setup()
readings = []
for _ in range(5):
    times = []
    for _ in range(10):
        start = time.perf_counter()
        canary.time_reference()
        times.append(time.perf_counter() - start)
    readings.append(statistics.median(times))
canary.teardown()
print(json.dumps(readings))
"""


def reading(python: str) -> list[float]:
    done = subprocess.run([python, "-c", READ], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(pythons: list[str]) -> None:
    for python in pythons:
        idle = reading(python)
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)
            busy = reading(python)
        finally:
            hog.kill()
            hog.wait()
        again = reading(python)
        i, b = statistics.median(idle + again), statistics.median(busy)
        said = ", ".join(f"{x * 1e3:.2f}" for x in idle + again)
        print(f"{python}: idle {i * 1e3:.2f} ms (readings {said}), "
              f"one core busy {b * 1e3:.2f} ms: {b / i:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:] or [sys.executable])
