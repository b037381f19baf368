#!/usr/bin/env python3
"""Write the prev | contents | next links at the top and bottom of every course notebook.

    python tools/nbnav.py          rewrite the links in notebooks/*.ipynb
    python tools/nbnav.py --check  exit 1 if any notebook's links are out of date

The links live in markdown cells tagged ``nav``: the first and the last cell of each notebook.
Only those cells are touched (markdown cells have no outputs, so the stored outputs stay valid).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from course import course_notebooks, read_header

CONTENTS = "../README.md#notebooks"


def title(path: Path) -> str:
    """A notebook's heading, as its header cell writes it (``01 · Attention pooling: ...``)."""
    return read_header(path).heading


def nav_text(paths: list[Path], i: int) -> str:
    parts = []
    if i > 0:
        parts.append(f"[← {title(paths[i - 1])}]({paths[i - 1].name})")
    parts.append(f"[Contents]({CONTENTS})")
    if i < len(paths) - 1:
        parts.append(f"[{title(paths[i + 1])} →]({paths[i + 1].name})")
    return " | ".join(parts)


def with_nav(nb, text: str):
    """The notebook with a ``nav`` cell first and last (replacing any old ones)."""
    cells = [c for c in nb.cells if "nav" not in c.get("metadata", {}).get("tags", [])]
    top = nbformat.v4.new_markdown_cell(text, metadata={"tags": ["nav"]})
    bottom = nbformat.v4.new_markdown_cell(text, metadata={"tags": ["nav"]})
    old = [c for c in nb.cells if "nav" in c.get("metadata", {}).get("tags", [])]
    if len(old) == 2:  # keep the cell ids stable
        top["id"], bottom["id"] = old[0]["id"], old[1]["id"]
    nb.cells = [top, *cells, bottom]
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale links instead of writing them")
    args = parser.parse_args(argv)
    paths = course_notebooks()
    stale = []
    for i, path in enumerate(paths):
        nb = nbformat.read(path, as_version=4)
        text = nav_text(paths, i)
        navs = [c.source for c in nb.cells if "nav" in c.get("metadata", {}).get("tags", [])]
        current = len(nb.cells) >= 2 and navs == [text, text] and nb.cells[0].source == nb.cells[-1].source == text
        if current:
            continue
        stale.append(path.name)
        if not args.check:
            nbformat.write(with_nav(nb, text), path)
    if args.check and stale:
        print("stale navigation links in: " + ", ".join(stale) + " (run: python tools/nbnav.py)")
        return 1
    print(f"nbnav: {len(paths)} notebook(s), {len(stale)} {'stale' if args.check else 'updated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
