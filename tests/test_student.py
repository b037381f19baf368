"""make student: the notebooks as a class hands them out, every cell tagged ``solution`` removed and nothing else.
What that edition keeps must give no answer away (tests/test_student_answers.py)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def is_solution(cell):
    return "solution" in cell.get("metadata", {}).get("tags", [])


def make_student(root: Path, out: Path) -> None:
    """Run the Makefile's own target (the command a teacher types) with its output in ``out``; the course is set up
    already (``-o setup``: make does not redo it). Typed in a shell, not inside a make run: where a parallel make runs
    these tests (as ``make -j2 test html`` would), its MAKEFLAGS name a jobserver this process does not pass on, and
    make warns."""
    shell = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["make", "--no-print-directory", "-s", "-o", "setup", "student", f"STUDENT={out}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=shell,
    )
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr


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
    for number, cell in enumerate(cells):  # nbformat 4.5 cells carry an id (nbformat warns of a cell without one)
        cell["id"] = f"cell-{number}"
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "01_tiny.ipynb").write_text(json.dumps(notebook))
    make_student(tmp_path, tmp_path / "handout")
    handout = json.loads((tmp_path / "handout" / "01_tiny.ipynb").read_text())
    assert ["".join(c["source"]) for c in handout["cells"]] == ["**1.** Compute x.", "x = None\ncheck(x)", "links"]


# An exercise starts a line with its bold number, "**3.**"; a cell that follows a solution cell and is no solution
# itself must open with something of its own: the next exercise, a heading, the reading list, or the nav links.
EXERCISE = re.compile(r"^\*\*\d+\.\*\*", re.M)
OWN_START = re.compile(r"\s*(\*\*\d+\.\*\*|#|\*\*Further reading\*\*)")


def leaked_solution_text(cells: list[dict]) -> list[str]:
    """Cells outside the solutions that carry a solution's words: a markdown cell right after a solution cell that
    opens with anything but the next exercise, a heading or the reading list (the explanation of the solution before
    it, which the student edition would keep)."""
    leaks = []
    for i in range(1, len(cells)):
        cell, before = cells[i], cells[i - 1]
        if cell["cell_type"] != "markdown" or is_solution(cell) or not is_solution(before):
            continue
        if "nav" in cell.get("metadata", {}).get("tags", []):
            continue
        source = "".join(cell["source"])
        if not OWN_START.match(source):
            leaks.append(f"cell {i}: {source.strip()[:70]!r}")
    return leaks


def solution_sentences_elsewhere(cells: list[dict], shortest: int = 40) -> list[str]:
    """Sentences of a solution's markdown (``shortest`` characters or more) that also stand in a cell the student
    edition keeps: an explanation copied, or left behind when its solution moved."""

    def sentences(text: str) -> list[str]:
        return [s.strip() for s in re.split(r"(?<=[.!?:])\s+", " ".join(text.split())) if len(s.strip()) >= shortest]

    kept = " ".join(" ".join("".join(c["source"]).split()) for c in cells if not is_solution(c))
    return [
        f"cell {i}: {sentence[:70]!r}"
        for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown" and is_solution(cell)
        for sentence in sentences("".join(cell["source"]))
        if sentence in kept
    ]


def exercises_without_a_code_cell(cells: list[dict]) -> list[str]:
    """Exercises after which the student edition has no code cell before the next markdown: nowhere to work."""
    missing = []
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or is_solution(cell) or not EXERCISE.search(source):
            continue
        following = [c for c in cells[i + 1 :] if not is_solution(c)]
        if not following or following[0]["cell_type"] != "code":
            missing.append(f"cell {i}: {EXERCISE.findall(source)[-1]} {source.strip()[:50]!r}")
    return missing


def assert_none_found(path: Path, find, fault: str) -> None:
    """``find(cells)`` lists the places in the notebook at ``path`` that have the fault; there must be none."""
    found = find(json.loads(path.read_text(encoding="utf-8"))["cells"])
    assert not found, f"{path.name}: {fault}:\n" + "\n".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solution_text_is_only_in_solution_cells(path):
    fault = "text after a solution cell stays in the student edition; tag it solution"
    assert_none_found(path, lambda cells: leaked_solution_text(cells) + solution_sentences_elsewhere(cells), fault)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_leaves_a_code_cell_for_the_students_work(path):
    assert_none_found(path, exercises_without_a_code_cell, "exercises with no code cell in the student edition")


def markdown_cell(source, *tags):
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": source}


def code_cell(source, *tags):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source, "outputs": []}


def test_the_two_checks_find_what_the_student_edition_would_show_or_lack():
    """A solution's explanation sharing a cell with the next exercise is found; so is an open question with no cell
    to work in; the right layout passes both."""
    shared = [
        markdown_cell("**1.** Compute x."),
        code_cell("x = None"),
        code_cell("x = 1", "solution"),
        markdown_cell("Because x is 1.\n\n**2.** Why?"),
        code_cell(""),
        markdown_cell("**Further reading**: a book."),
    ]
    assert leaked_solution_text(shared) == ["cell 3: 'Because x is 1.\\n\\n**2.** Why?'"]
    copied = [
        markdown_cell("**1.** Why is the sky blue?"),
        code_cell(""),
        markdown_cell("Short light scatters more than long light does in air.", "solution"),
        markdown_cell("**2.** Next. Short light scatters more than long light does in air."),
        code_cell(""),
    ]
    assert leaked_solution_text(copied) == []  # the cell opens with its exercise: only the sentence check finds it
    assert solution_sentences_elsewhere(copied) == ["cell 2: 'Short light scatters more than long light does in air.'"]
    assert exercises_without_a_code_cell(shared) == []
    open_question = [
        markdown_cell("**1.** Why?"),
        markdown_cell("Because.", "solution"),
        markdown_cell("**Further reading**"),
    ]
    assert exercises_without_a_code_cell(open_question) == ["cell 0: **1.** '**1.** Why?'"]
    right = [
        markdown_cell("## Exercises\n\n**1.** Why?"),
        code_cell(""),
        markdown_cell("Because.", "solution"),
        markdown_cell("**2.** And?"),
        code_cell("y = None"),
        code_cell("y = 2", "solution"),
        markdown_cell("So.", "solution"),
        markdown_cell("[back](x)", "nav"),
    ]
    assert leaked_solution_text(right) == [] and exercises_without_a_code_cell(right) == []
