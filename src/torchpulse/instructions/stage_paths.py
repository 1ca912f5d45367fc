"""Inside the counted process: the environment seen as if it lay in the stage.

The counted process imports the environment being counted through fixed-length links
(``<stage>/p/01`` -> the environment's site-packages, normalised.py), so every path it builds
has the same length wherever that environment lies. ``inspect.getmodule`` resolves the file
of every module it meets (about a thousand during torch's import and the workloads' builds)
and keeps each resolved path in a dict for the life of the process: through the links, those
paths carried the environment's own location, and the heap they lay on was laid out by its
length. Two fresh clones' asv environments, identical but for their paths, counted up to
0.085 % apart for that (docs/instructions.md, "Determinism"). Here a path behind a link
resolves to its place in the stage, as if the environment lay there; anything else, and a
path whose resolution leads out of its link, resolves as before.

``/proc/self/maps`` too: torch's import reads it whole into a string (``_load_global_deps``
looks for libcudart there), and the kernel names each mapped file by its resolved path, so
the string's length, and where the allocator put what came after it, followed the
environment's location: two clones' asv environments counted up to 0.27 % apart for that.
Opened by ``open()`` here, it reads as the kernel writes it with each environment folder
behind a link named by the link (``<stage>/p/01/torch/lib/...``). The table of links and
folders comes from a file of a fixed size the parent writes (``maps_table``), and the
reading and rewriting happen in buffers of a fixed size allocated once, so that nothing
allocated depends on the folders' lengths.

Standard library only, imported before torch (worker.BOOTSTRAP).
"""

from __future__ import annotations

import builtins
import io
import os
import posixpath

MAPS = "/proc/self/maps"
TABLE = "maps-table"  # in the links folder: link name TAB folder, a line each, zero-padded
TABLE_BYTES = 1 << 16
SLOT = 1 << 12
MAPS_BYTES = 1 << 22  # a larger /proc/self/maps is read as it is


def stop_at_links(links: str) -> None:
    """Make ``os.path.realpath`` keep paths behind the links in ``links`` (the stage's
    links folder) at their place there."""
    resolve = posixpath.realpath
    prefix = links.rstrip("/") + "/"

    def realpath(filename, *, strict: bool = False):
        path = os.fspath(filename)
        if isinstance(path, str):
            # not abspath: it would fold a ".." lexically, where realpath follows the link
            full = path if path.startswith("/") else posixpath.join(os.getcwd(), path)
            if full.startswith(prefix):
                kept = _below(full, prefix, strict)
                if kept is not None:
                    return kept
        return resolve(filename, strict=strict)

    realpath.__doc__ = resolve.__doc__
    posixpath.realpath = realpath  # os.path is posixpath


def _below(full: str, prefix: str, strict: bool) -> str | None:
    """``full`` resolved from its link on, the link itself taken as a folder; None where a
    step is itself a link (rare below site-packages): the caller then resolves it whole."""
    link, _, rest = full[len(prefix):].partition("/")
    current = prefix + link
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            return None  # up out of the environment, perhaps: resolved whole
        current = f"{current}/{part}"
        if posixpath.islink(current):
            return None
    if strict:
        os.stat(current)  # FileNotFoundError, as realpath(strict=True) raises it
    return current


def maps_table(links: dict[str, str]) -> bytes:
    """The table the counted process reads (``TABLE``), of ``TABLE_BYTES`` whatever it
    holds: {link's name in the links folder: the folder it points to, resolved}, a slot of
    ``SLOT`` bytes each from the second on (every offset the reader computes is then above
    256: no int it makes is one of Python's cached small ones in one environment and a new
    object in another)."""
    table = bytearray(TABLE_BYTES)
    for slot, (name, folder) in enumerate(links.items(), start=1):
        line = f"{name}/\t{folder.rstrip('/')}/\n".encode()
        if len(line) > SLOT or (slot + 1) * SLOT > TABLE_BYTES:
            raise ValueError(f"too many links, or a folder too long: {folder}")
        table[slot * SLOT:slot * SLOT + len(line)] = line
    return bytes(table)


def show_maps_in_stage(links: str) -> None:
    """Make ``open("/proc/self/maps")`` read the mappings with each folder of ``links``'s
    table named by its link (a text file opened for reading; anything else as before)."""
    table = bytearray(TABLE_BYTES)
    with builtins.open(f"{links}/{TABLE}", "rb", buffering=0) as f:
        f.readinto(table)
    view = memoryview(table)
    # (folder start, folder end, link start, link end) in the table, as fixed-size ints
    entries = []
    for start in range(SLOT, TABLE_BYTES, SLOT):
        if table[start] == 0:
            break
        tab, end = table.find(b"\t", start), table.find(b"\n", start)
        entries.append((tab + 1, end, start, tab))
    prefix = (links.rstrip("/") + "/").encode()
    raw, out = bytearray(MAPS_BYTES), bytearray(MAPS_BYTES)
    raw_view, out_view = memoryview(raw), memoryview(out)
    original = builtins.open

    def read_maps() -> str | None:
        fd = os.open(MAPS, os.O_RDONLY)
        try:
            size = 0
            while size < MAPS_BYTES:
                got = os.readv(fd, [raw_view[size:]])
                if got == 0:
                    break
                size += got
            else:
                return None  # too large for the buffer: read as it is
        finally:
            os.close(fd)
        written, at = 0, 0
        while at < size:
            found, which = size, None
            for entry in entries:  # the earliest folder from here
                where = raw.find(view[entry[0]:entry[1]], at, size)
                if where != -1 and where < found:
                    found, which = where, entry
            out_view[written:written + found - at] = raw_view[at:found]
            written += found - at
            if which is None:
                break
            link = len(prefix) + which[3] - which[2]
            out_view[written:written + len(prefix)] = prefix
            out_view[written + len(prefix):written + link] = view[which[2]:which[3]]
            written += link
            at = found + which[1] - which[0]
        return out_view[:written].tobytes().decode()

    def open_(file, mode="r", *args, **kwargs):
        if file == MAPS and mode in ("r", "rt"):
            text = read_maps()
            if text is not None:
                return io.StringIO(text)
        return original(file, mode, *args, **kwargs)

    builtins.open = io.open = open_
