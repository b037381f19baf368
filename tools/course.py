"""The course's notebooks as the tools see them: which they are, in order, and what their header cell says.

``tools/nbnav.py``, ``tools/build_site.py`` and the tests read the notebooks through this module, so the list and
the titles are parsed in one place.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")


def parameter_names(nb) -> set[str]:
    """The names assigned in the notebook's cell tagged ``parameters``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            names = set()
            for node in ast.parse(cell.source).body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
            return names
    return set()


# --------------------------------------------------------------------------------------------- notebooks


@dataclass
class Notebook:
    """One course notebook and what the site needs to know of it."""

    source: Path
    nb: object = field(repr=False)
    number: str = ""
    title: str = ""
    description: str = ""  # markdown: the motivation paragraph(s) of the header cell
    objectives: list[str] = field(default_factory=list)  # markdown, one item each
    prerequisites: str = ""  # markdown
    params: set[str] = field(default_factory=set)

    @property
    def stem(self) -> str:
        return self.source.stem

    @property
    def page(self) -> str:
        return self.stem + ".html"

    @property
    def heading(self) -> str:
        """The notebook's title as its header cell writes it: ``01 · Attention pooling: ...``."""
        return f"{self.number} · {self.title}"


def course_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The course notebooks in teaching order: ``notebooks/NN_topic.ipynb``."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if NAME.match(p.name))


def read_header(path: Path) -> Notebook:
    """Title, motivation, objectives and prerequisites from the notebook's header cell (``# NN · Title``)."""
    nb = nbformat.read(path, as_version=4)
    entry = Notebook(path, nb, params=parameter_names(nb))
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "nav" in cell.get("metadata", {}).get("tags", []):
            continue
        lines = cell.source.splitlines()
        heads = [i for i, line in enumerate(lines) if line.startswith("# ")]
        if not heads:
            continue
        heading = lines[heads[0]][2:].strip()
        match = re.match(r"(\d+)\s*[·.:-]\s*(.+)", heading)
        entry.number, entry.title = (match.group(1), match.group(2)) if match else (path.name[:2], heading)
        description, objectives, section = [], [], "description"
        for line in lines[heads[0] + 1 :]:
            stripped = line.strip()
            if re.match(r"\*\*You will learn to\*\*", stripped):
                section = "objectives"
            elif stripped.startswith("**Prerequisites**"):
                entry.prerequisites = re.sub(r"^\*\*Prerequisites\*\*\s*:?\s*", "", stripped)
                section = "prerequisites"
            elif section == "prerequisites":
                if not stripped:
                    section = "after"
                else:
                    entry.prerequisites += " " + stripped  # the paragraph goes on
            elif section == "description":
                description.append(line)
            elif section == "objectives":
                item = re.match(r"\s*\d+[.)]\s+(.*)", line)
                if item:
                    objectives.append(item.group(1).strip())
                elif stripped and objectives:
                    objectives[-1] += " " + stripped  # an item continued on the next line
        entry.description = "\n".join(description).strip()
        entry.objectives = objectives
        break
    else:
        raise SystemExit(f"{path.name}: no markdown cell with a '# NN · Title' heading")
    return entry
