#!/usr/bin/env python3
"""Fails when the code climbs the layers docs/ARCHITECTURE.md documents.

The map is the check: the rows of ARCHITECTURE.md's "Layers" table, bottom
to top, name each layer's folders (and single files placed in a layer other
than their folder's, e.g. `src/bench/inputs.c`). A file may use its own
layer and the layers below it, never one above. Two kinds of use are read:

- source: every `#include "..."` of a file under src/ (resolved against
  src/ and the file's own folder);
- link (with --objects DIR): every mb* symbol an object file of the
  library uses, traced to the object file that defines it. This catches
  calls through the public header (include/modelbench.h), whose functions
  are defined in some layer although every file may include it.

Since the layers are totally ordered, no upward edge also means no cycle
between layers. A folder's private header (`internal.h`, `*_internal.h`;
core's `internal.h` is the whole library's) is included from its own folder
only: what other folders may use of it goes in a header of its own. Exit status: 0 clean, 1 upward edges (each printed with the
file, what it uses and the two layers), 2 usage errors (an unreadable map,
a source file no layer holds).

    tools/check_layers.py [--root DIR] [--objects BUILD/CMakeFiles/mb_objects.dir]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PATH = re.compile(r"`(src/[^`]*)`")
SOURCE_EXT = (".c", ".h", ".cpp", ".inc")


class Layers:
    """The layer map: each src/ path prefix (folder or file) to a rank."""

    def __init__(self, rows: Sequence[Tuple[str, List[str]]]) -> None:
        self.names = [name for name, _ in rows]
        self.prefix: Dict[str, int] = {}
        for rank, (_, paths) in enumerate(rows):
            for path in paths:
                self.prefix[path] = rank

    def rank(self, path: str) -> Optional[int]:
        """The layer of a path relative to the root: the longest prefix."""
        best: Optional[Tuple[int, int]] = None
        for prefix, rank in self.prefix.items():
            hit = path == prefix if not prefix.endswith("/") else path.startswith(prefix)
            if hit and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
        return None if best is None else best[1]


def read_map(doc: str) -> Layers:
    """Parses the "Layers" table of ARCHITECTURE.md."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    start = text.find("\n## Layers")
    if start < 0:
        raise ValueError(f"{doc}: no '## Layers' section")
    rows: List[Tuple[str, List[str]]] = []
    for line in text[start + 1 :].splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or cells[0] in ("layer", "---"):
            continue
        paths = PATH.findall(cells[1])
        if paths:
            rows.append((cells[0], paths))
    if len(rows) < 2:
        raise ValueError(f"{doc}: the Layers table names fewer than two src/ layers")
    return Layers(rows)


def source_files(root: str) -> List[str]:
    """Every C/C++ source and header under src/, relative to the root."""
    out = []
    for folder, _, files in os.walk(os.path.join(root, "src")):
        for name in files:
            if name.endswith(SOURCE_EXT):
                out.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(out)


def resolve(root: str, source: str, target: str) -> Optional[str]:
    """The file an include names, relative to the root (None: outside src/)."""
    for base in (os.path.dirname(source), "src"):
        path = os.path.normpath(os.path.join(base, target))
        if os.path.exists(os.path.join(root, path)):
            return path
    return None


def include_edges(root: str, files: Sequence[str]) -> List[Tuple[str, str, str]]:
    """(user, used, what) for every include of a file under src/."""
    edges = []
    for source in files:
        with open(os.path.join(root, source), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for target in INCLUDE.findall(text):
            path = resolve(root, source, target)
            if path and path.startswith("src/"):
                edges.append((source, path, f'#include "{target}"'))
    return edges


def nm(obj: str) -> Tuple[List[str], List[str]]:
    """(defined, undefined) global mb* symbols of an object file."""
    out = subprocess.run(["nm", "-g", "--defined-only", obj], capture_output=True,
                         text=True, check=True).stdout
    defined = [l.split()[-1] for l in out.splitlines() if l.strip()]
    out = subprocess.run(["nm", "-g", "--undefined-only", obj], capture_output=True,
                         text=True, check=True).stdout
    undefined = [l.split()[-1] for l in out.splitlines() if l.strip()]
    keep = lambda names: [n for n in names if n.startswith("mb")]  # noqa: E731
    return keep(defined), keep(undefined)


def symbol_edges(root: str, objects: str) -> List[Tuple[str, str, str]]:
    """(user, definer, symbol) for every mb* symbol used across object files.

    Object files are named after their source (src/core/status.c.o); the
    source path relative to the root is what follows the objects folder.
    Objects of sources that no longer exist (a file moved since the last
    build) are left out."""
    defined: Dict[str, str] = {}
    uses: List[Tuple[str, List[str]]] = []
    for folder, _, files in os.walk(objects):
        for name in files:
            if not name.endswith(".o"):
                continue
            obj = os.path.join(folder, name)
            source = os.path.relpath(obj, objects)[: -len(".o")]
            if not os.path.exists(os.path.join(root, source)):
                continue
            d, u = nm(obj)
            for sym in d:
                defined.setdefault(sym, source)
            uses.append((source, u))
    edges = []
    for source, undefined in uses:
        for sym in undefined:
            if sym in defined:
                edges.append((source, defined[sym], sym))
    return edges


def private(header: str) -> bool:
    """Is the header private to its folder?"""
    name = os.path.basename(header)
    return (name == "internal.h" or name.endswith("_internal.h")) and \
        os.path.dirname(header) != "src/core"


def check(layers: Layers, edges: Sequence[Tuple[str, str, str]]) -> Tuple[List[str], List[str]]:
    """(upward edges and private headers used elsewhere, files no layer
    holds) as printable lines."""
    bad, unplaced = [], set()
    for user, used, what in edges:
        if used.endswith(".h") and private(used) and \
                not user.startswith(os.path.dirname(used) + "/"):
            bad.append(f"{user} uses {used}, private to {os.path.dirname(used)}/: {what}")
        ru, rd = layers.rank(user), layers.rank(used)
        for path, r in ((user, ru), (used, rd)):
            if r is None:
                unplaced.add(path)
        if ru is None or rd is None or rd <= ru:
            continue
        bad.append(f"{user} ({layers.names[ru]}) uses {used} ({layers.names[rd]}): {what}")
    return sorted(set(bad)), sorted(unplaced)


def main(argv: Sequence[str]) -> int:
    """Command line: prints each upward edge; exit 1 if there is any."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    p.add_argument("--doc", help="the map (default ROOT/docs/ARCHITECTURE.md)")
    p.add_argument("--objects", help="the library's object files (CMakeFiles/mb_objects.dir)")
    a = p.parse_args(argv)
    root = os.path.abspath(a.root)
    try:
        layers = read_map(a.doc or os.path.join(root, "docs", "ARCHITECTURE.md"))
    except (OSError, ValueError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    files = source_files(root)
    edges = include_edges(root, files)
    if a.objects:
        if not os.path.isdir(a.objects):
            print(f"check_layers: --objects {a.objects}: not a folder", file=sys.stderr)
            return 2
        edges += symbol_edges(root, a.objects)
    bad, unplaced = check(layers, edges)
    unplaced += [f for f in files if layers.rank(f) is None and f not in unplaced]
    if unplaced:
        for path in sorted(set(unplaced)):
            print(f"check_layers: {path}: in no layer of the map (docs/ARCHITECTURE.md)",
                  file=sys.stderr)
        return 2
    for line in bad:
        print(line)
    print(f"check_layers: {len(files)} files, {len(edges)} uses, {len(bad)} against the layers"
          f" ({' < '.join(layers.names)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
