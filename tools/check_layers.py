#!/usr/bin/env python3
"""Checks that no file of src/ includes a header of a higher layer.

The layers follow the data flow of ../shared/DESIGN.md, lowest first:

    util -> run -> collectors, cupti, importers -> analyses -> history -> renderers -> publish, http_plugin -> cli

A file may include headers of its own layer and of the layers below it; only
src/cli/, at the top, wires everything. Folders of one layer may include each
other (cupti writes the records collectors/gpu/ reads).

Usage: tools/check_layers.py [SRC_DIR]   (exit status 1 when a rule is broken)
"""
import pathlib
import re
import sys

LAYERS = [["util"], ["run"], ["collectors", "cupti", "importers"], ["analyses"], ["history"],
          ["renderers"], ["publish", "http_plugin"], ["cli"]]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h"):
            continue
        own = path.relative_to(src).parts[0]
        if own not in RANK:
            yield f"{path}: folder {own}/ has no layer in tools/check_layers.py"
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = match.group(1).split("/")[0]
            if RANK.get(target, -1) > RANK[own]:
                yield f"{path}:{number}: {own}/ includes {match.group(1)}, a header of a higher layer"


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "src")
    found = list(violations(src))
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
