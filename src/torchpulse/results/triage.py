"""The benchmarked repository's own word on its alerts: ``torchpulse.toml`` beside
asv.conf.json, reviewed in pull requests like the code it judges.

Two tables of entries:

- ``[[triage]]``: a change in some series at a commit, and what the team decided it is:
  ``accepted`` (intended: the new level is the baseline from that commit on),
  ``invalid`` or ``infrastructure`` (not the code's: the change is taken out of the series),
  ``investigating`` (shown, still gating) or ``fixed`` (with ``fixed_by``: shown as fixed
  once the level is back). Each names a glob over series names (``bench.Class.time_x(p)``),
  a glob over machines and one full commit hash.
- ``[[benchmark]]``: per glob over series names, a ``threshold`` (the smallest change worth
  an alert, replacing the command line's for those series), ``ignore`` (never judged) and
  ``direction`` (``higher_is_better`` for a throughput, a speedup, a pass rate stored as
  measured: a drop is the regression). Where several rules set the same field for a
  series, the last one in the file wins (as in .gitattributes).

Reading is the standard library's tomllib and every field is checked where it enters (one
line names the file, the entry and what is wrong); writing goes through tomlkit, which keeps
the comments and layout people gave the file, all or nothing, under a lock on its folder.
Nothing here reads or writes results."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tomllib

from torchpulse.errors import TorchpulseError
from torchpulse.files import locked_folder, read_regular, write_text_atomically
from torchpulse.text import one_line

FILE = "torchpulse.toml"
ACCEPTED, INVALID, INFRASTRUCTURE = "accepted", "invalid", "infrastructure"
INVESTIGATING, FIXED = "investigating", "fixed"
STATES = (ACCEPTED, INVALID, INFRASTRUCTURE, INVESTIGATING, FIXED)
# the change is taken out of the series: the detector judges it as if it had not happened
ABSORBED = frozenset({ACCEPTED, INVALID, INFRASTRUCTURE})
# marked by users as not a real regression of the code: the detector's false positives
FALSE_ALARMS = frozenset({INVALID, INFRASTRUCTURE})
LOWER, HIGHER = "lower_is_better", "higher_is_better"
DIRECTIONS = (LOWER, HIGHER)
FILE_BYTES = 1 * 2**20  # a file of reviewed entries: far below this
NOTE_CHARS = 2000
GLOB_CHARS = 500
_SHA = re.compile(r"[0-9a-f]{40}")
HEADER = ("# torchpulse: how this repository's benchmark changes were triaged, and\n"
          "# per-benchmark thresholds (docs/dashboard.md, \"Triage\").\n"
          "# `torchpulse triage` edits it; so can you.\n")


class TriageError(TorchpulseError, ValueError):
    """A triage file or entry that cannot be used; nothing was written."""


@dataclass(frozen=True)
class Entry:
    """One decision on a change: the series it covers, the commit, the state and why."""

    series: str  # a glob over series names: 'bench.Class.time_x(p1, p2)'
    commit: str  # the full hash of the first commit of the new level (or inside the range)
    state: str
    note: str = ""
    machine: str = "*"  # a glob over asv machine names
    fixed_by: str = ""  # with state "fixed": the commit that fixed it
    # the entry speaks of every change from ``commit`` through this one (a rise the alert
    # names at several culprits); "": of the one change at ``commit``
    through: str = ""

    def covers(self, name: str, machine: str) -> bool:
        """Whether this entry speaks of the series ``name`` measured on ``machine``."""
        return fnmatch.fnmatchcase(name, self.series) and fnmatch.fnmatchcase(machine,
                                                                               self.machine)

    def as_dict(self) -> dict[str, str]:
        found = {"series": self.series, "machine": self.machine, "commit": self.commit,
                 "state": self.state, "note": self.note}
        return found | ({"fixed_by": self.fixed_by} if self.fixed_by else {}) | (
            {"through": self.through} if self.through else {})


@dataclass(frozen=True)
class Rule:
    """How the series a glob matches are judged."""

    match: str
    # each None where the rule says nothing of it
    threshold: float | None = None
    ignore: bool | None = None
    direction: str | None = None  # LOWER or HIGHER is better

    def as_dict(self) -> dict:
        return {"match": self.match, **({"threshold": self.threshold}
                                        if self.threshold is not None else {}),
                **({"ignore": self.ignore} if self.ignore is not None else {}),
                **({"direction": self.direction} if self.direction else {})}


@dataclass(frozen=True)
class Triage:
    """What the file says: its triage entries and benchmark rules, in file order."""

    entries: tuple[Entry, ...] = ()
    rules: tuple[Rule, ...] = ()

    def entries_for(self, name: str, machine: str) -> list[Entry]:
        return [e for e in self.entries if e.covers(name, machine)]

    def _said(self, name: str, field: str) -> object:
        """``field`` of the last rule matching ``name`` that sets it; None: none does."""
        return next((getattr(r, field) for r in reversed(self.rules)
                     if getattr(r, field) is not None and fnmatch.fnmatchcase(name, r.match)),
                    None)

    def ignored(self, name: str) -> bool:
        return bool(self._said(name, "ignore"))

    def threshold(self, name: str) -> float | None:
        return self._said(name, "threshold")  # type: ignore[return-value]

    def higher_is_better(self, name: str) -> bool | None:
        said = self._said(name, "direction")
        return None if said is None else said == HIGHER

    def __bool__(self) -> bool:
        return bool(self.entries or self.rules)


NONE = Triage()


# ------------------------------------------------------------------------- checking

def check_text(value: object, what: str, limit: int, *, empty: bool = True) -> str:
    """A one-line printable string of at most ``limit`` characters."""
    if not isinstance(value, str):
        raise TriageError(f"{what} must be a string")
    if not empty and not value:
        raise TriageError(f"{what} must not be empty")
    if len(value) > limit:
        raise TriageError(f"{what} is {len(value)} characters, more than {limit}")
    if not value.isprintable():
        raise TriageError(f"{what} holds a control character or line break: "
                          f"{one_line(value[:60])!r}")
    return value


def check_commit(value: object, what: str) -> str:
    if not isinstance(value, str) or not _SHA.fullmatch(value):
        raise TriageError(f"{what} must be a full 40-character commit hash in lower case "
                          f"(torchpulse triage resolves a short one), not "
                          f"{one_line(str(value)[:60])!r}")
    return value


def check_state(value: object, what: str = "state") -> str:
    if value not in STATES:
        raise TriageError(f"{what} must be one of {', '.join(STATES)}, not "
                          f"{one_line(str(value)[:60])!r}")
    return str(value)


def check_threshold(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not 0 < value < 10:
        raise TriageError(f"{what} must be a fraction above 0 (0.05 for 5 %), not "
                          f"{one_line(str(value)[:60])!r}")
    return float(value)


def entry(series: object, commit: object, state: object, note: object = "",
          machine: object = "*", fixed_by: object = "", where: str = "entry",
          through: object = "") -> Entry:
    """An Entry from untrusted fields, each checked."""
    state = check_state(state, f"{where}: state")
    fixed = check_commit(fixed_by, f"{where}: fixed_by") if fixed_by else ""
    last = check_commit(through, f"{where}: through") if through else ""
    if state == FIXED and not fixed:
        raise TriageError(f"{where}: state fixed needs fixed_by, the commit that fixed it")
    if fixed and state != FIXED:
        raise TriageError(f"{where}: fixed_by belongs to state fixed, not {state}")
    return Entry(check_text(series, f"{where}: series", GLOB_CHARS, empty=False),
                 check_commit(commit, f"{where}: commit"), state,
                 check_text(note, f"{where}: note", NOTE_CHARS),
                 check_text(machine, f"{where}: machine", GLOB_CHARS, empty=False), fixed,
                 last)


def _tables(data: dict, key: str, what: str, path: str, fields: set[str],
            needed: dict[str, str]) -> Iterator[tuple[str, dict]]:
    """(where, table) of each table of the array ``key``, its fields checked: none unknown,
    every one of ``needed`` there (the value: what the message adds)."""
    found = data.get(key, [])
    if not isinstance(found, list):
        raise TriageError(f"{path}: {key} must be an array of tables ([[{key}]])")
    for i, item in enumerate(found, 1):
        where = f"{path}: {what} {i}"
        if not isinstance(item, dict):
            raise TriageError(f"{where} is not a table")
        unknown = set(item) - fields
        if unknown:
            raise TriageError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        for name, hint in needed.items():
            if name not in item:
                raise TriageError(f"{where}: missing {name}{hint}")
        yield where, item


def _entries(data: dict, path: str) -> tuple[Entry, ...]:
    fields = {"series", "commit", "state", "note", "machine", "fixed_by", "through"}
    return tuple(entry(item["series"], item["commit"], item["state"], item.get("note", ""),
                       item.get("machine", "*"), item.get("fixed_by", ""), where,
                       item.get("through", ""))
                 for where, item in _tables(data, "triage", "triage entry", path, fields,
                                            {"series": "", "commit": "", "state": ""}))


def _rules(data: dict, path: str) -> tuple[Rule, ...]:
    out = []
    for where, item in _tables(data, "benchmark", "benchmark rule", path,
                               {"match", "threshold", "ignore", "direction"},
                               {"match": " (a glob over series names)"}):
        ignore = item.get("ignore")
        if ignore is not None and not isinstance(ignore, bool):
            raise TriageError(f"{where}: ignore must be true or false")
        threshold = item.get("threshold")
        direction = item.get("direction")
        if direction is not None and direction not in DIRECTIONS:
            raise TriageError(f"{where}: direction must be {' or '.join(DIRECTIONS)}, not "
                              f"{one_line(str(direction)[:60])!r}")
        out.append(Rule(check_text(item["match"], f"{where}: match", GLOB_CHARS, empty=False),
                        None if threshold is None
                        else check_threshold(threshold, f"{where}: threshold"), ignore,
                        direction))
    return tuple(out)


def parse(text: str, path: str = FILE) -> Triage:
    """The file's text, checked: TriageError (one line) on anything it cannot use."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TriageError(f"{path}: not TOML ({one_line(str(exc))})") from None
    unknown = set(data) - {"triage", "benchmark"}
    if unknown:
        raise TriageError(f"{path}: unknown table {one_line(sorted(unknown)[0])!r} (triage "
                          "and benchmark are known)")
    return Triage(_entries(data, path), _rules(data, path))


def path_of(root: Path) -> Path:
    """Where the triage file of the project whose config lies in ``root`` is."""
    return root / FILE


def read_text(path: Path) -> str | None:
    """The file's text, None when there is none."""
    try:
        raw = read_regular(path, FILE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TriageError(f"{path}: cannot read ({one_line(exc.strerror or str(exc))})"
                          ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TriageError(f"{path}: not UTF-8 text") from None


def read(root: Path) -> Triage:
    """The triage file beside the config in ``root``; NONE when there is none."""
    path = path_of(root)
    text = read_text(path)
    return NONE if text is None else parse(text, str(path))


# ------------------------------------------------------------------------- writing

@contextmanager
def editing(root: Path, waiting: Callable[[], None] | None = None) -> Iterator[Editor]:
    """The triage file opened for one edit: read under a lock on its folder, changed through
    the Editor, checked whole and written all or nothing when the block ends without an
    error (nothing is written when it raises)."""
    path = path_of(root)
    with locked_folder(root, waiting):
        editor = Editor(path, read_text(path))
        yield editor
        if editor.changed:
            text = editor.text()
            parse(text, str(path))  # what is written reads back, or nothing is written
            write_text_atomically(path, text)


class Editor:
    """Changes to a triage file that keep its comments and layout (tomlkit)."""

    def __init__(self, path: Path, text: str | None) -> None:
        import tomlkit

        self.path = path
        self.changed = False
        self.before = parse(text, str(path)) if text is not None else NONE
        self.doc = tomlkit.parse(text) if text is not None else tomlkit.parse(HEADER)

    def _triage(self) -> list:
        import tomlkit

        if "triage" not in self.doc:
            self.doc.append("triage", tomlkit.aot())
        return self.doc["triage"]

    def put(self, new: Entry) -> str:
        """Add ``new``, or replace the entry for the same series, machine and commit: 'added'
        or 'replaced'."""
        import tomlkit

        table = tomlkit.table()
        table.trivia.indent = "\n"  # a blank line before it: entries read apart in a review
        for k, v in new.as_dict().items():
            if v or k == "note":
                table[k] = v
        self.changed = True
        entries = self._triage()
        for i, old in enumerate(self.before.entries):
            if (old.series, old.machine, old.commit) == (new.series, new.machine, new.commit):
                # the same change: its new word replaces the old one
                entries[i] = table
                return "replaced"
        entries.append(table)
        return "added"

    def remove(self, number: int) -> Entry:
        """Remove the entry ``number`` (1 = the first, as `triage list` numbers them)."""
        if not 1 <= number <= len(self.before.entries):
            raise TriageError(f"no triage entry {number}: {self.path} has "
                              f"{len(self.before.entries)}")
        del self._triage()[number - 1]
        self.changed = True
        return self.before.entries[number - 1]

    def text(self) -> str:
        import tomlkit

        return tomlkit.dumps(self.doc)
