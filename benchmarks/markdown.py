"""The report's formats, shared by ``bench.py`` and the benchmarks it runs (which it imports, and not the reverse)."""

from __future__ import annotations


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table whose columns line up in a terminal too."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])
