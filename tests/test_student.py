"""make student: the notebooks as a class hands them out, every cell tagged ``solution`` removed and nothing else."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def is_solution(cell):
    return "solution" in cell.get("metadata", {}).get("tags", [])


def make_student(root: Path, out: Path) -> None:
    """Run the Makefile's own target (the command a teacher types) with its output in ``out``; the course is set up
    already (``-o setup``: make does not redo it)."""
    result = subprocess.run(
        ["make", "--no-print-directory", "-s", "-o", "setup", "student", f"STUDENT={out}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    make_student(ROOT, out)
    return out


def test_every_course_notebook_has_a_student_copy(student):
    assert sorted(p.name for p in student.glob("*.ipynb")) == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_copy_is_the_notebook_without_its_solutions(path, student):
    course = json.loads(path.read_text(encoding="utf-8"))
    handout = json.loads((student / path.name).read_text(encoding="utf-8"))
    assert not [c for c in handout["cells"] if is_solution(c)], "a solution cell is left in the student copy"
    kept = [c for c in course["cells"] if not is_solution(c)]
    assert [(c["cell_type"], "".join(c["source"])) for c in handout["cells"]] == [
        (c["cell_type"], "".join(c["source"])) for c in kept
    ]
    stored = [c.get("outputs") for c in kept if c["cell_type"] == "code"]
    assert [c.get("outputs") for c in handout["cells"] if c["cell_type"] == "code"] == stored


def test_solutions_of_code_and_markdown_cells_are_removed(tmp_path):
    """On a small course of one notebook: both kinds of solution cell go, the exercise and its check stay."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "**1.** Compute x."},
        {"cell_type": "code", "metadata": {}, "source": "x = None\ncheck(x)", "outputs": [], "execution_count": 1},
        {
            "cell_type": "code",
            "metadata": {"tags": ["solution"], "jupyter": {"source_hidden": True}},
            "source": "x = 1\ncheck(x)",
            "outputs": [],
            "execution_count": 2,
        },
        {"cell_type": "markdown", "metadata": {"tags": ["solution"]}, "source": "Because x is 1."},
        {"cell_type": "markdown", "metadata": {"tags": ["nav"]}, "source": "links"},
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "01_tiny.ipynb").write_text(json.dumps(notebook))
    make_student(tmp_path, tmp_path / "handout")
    handout = json.loads((tmp_path / "handout" / "01_tiny.ipynb").read_text())
    assert ["".join(c["source"]) for c in handout["cells"]] == ["**1.** Compute x.", "x = None\ncheck(x)", "links"]
