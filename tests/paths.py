"""Places the tests read from: the checkout and the golden import files."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout
IMPORT_DATA = ROOT / "tests" / "results" / "data" / "import"  # files other harnesses wrote
