"""asv's pages put some fields of index.json into the page as HTML: a benchmark's ``code`` and
its machine's details in tooltips, ``pretty_name`` and ``name`` in the benchmark lists. So,
after ``asv publish``, in the published index.json:

* ``code``, ``pretty_name`` and every machine field are HTML-escaped: they then show as the
  text they are (asv's tooltips mangled any ``<`` in benchmark code) and never run as markup;
* a benchmark name, parameter name or value that could act as markup is refused (one line,
  exit 2; ``torchpulse.results.names``): names also form file paths and URLs, so they cannot
  be escaped, and the doors already refuse them; one can only come from an edited tree.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from torchpulse.files import RESULTS_FILE_BYTES, read_regular, write_json_atomically
from torchpulse.results.names import UnsafeNameError, check_benchmark, has_infinite

INDEX = "index.json"


def _escaped(value: object) -> object:
    return html.escape(value, quote=True) if isinstance(value, str) else value


def sanitize_index(html_dir: Path) -> int:
    """Escape and check what asv's pages show as HTML in ``html_dir``'s index.json; returns
    how many benchmarks were checked."""
    path = html_dir / INDEX
    index = json.loads(path.read_text(encoding="utf-8"))
    benchmarks = index.get("benchmarks", {})
    for name, entry in benchmarks.items():
        check_benchmark(name, entry, f"the published {INDEX}")
        for field in ("code", "pretty_name"):
            if field in entry:
                entry[field] = _escaped(entry[field])
    for machine in index.get("machines", {}).values():
        for key in list(machine):
            machine[key] = _escaped(machine[key])
    write_json_atomically(path, index)
    return len(benchmarks)


# a number whose exponent has three digits or more could overflow to an infinity (1e999)
_HUGE = re.compile(r"[0-9.][eE]\+?[0-9]{3}")


def check_results(results_dir: Path) -> None:
    """Before ``asv publish``: no results file may hold an infinity (asv's step detection
    grows without bound on one and publish never ends); UnsafeNameError names the file."""
    for path in sorted(results_dir.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            text = read_regular(path, RESULTS_FILE_BYTES).decode("utf-8")
            if "Infinity" not in text and not _HUGE.search(text):
                continue  # no token that parses to an infinity: no need to parse it
            data = json.loads(text)
        except (OSError, ValueError, RecursionError):
            continue  # asv reports unreadable files itself
        if isinstance(data, dict) and has_infinite(data.get("results")):
            raise UnsafeNameError(f"{path}: holds an infinite value, which asv's publish "
                                  "cannot handle; remove that result (asv rm) or the file")
