"""The notebooks follow the course's conventions (README, "Adding a notebook"): names, kernel, parameters cell,
navigation links, exercises with self-checks, and slider cells excluded from output comparison."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def cells(path, kind=None):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if kind is None or c["cell_type"] == kind]


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_name_title_and_kernel(path):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), path.name
    titles = [line for c in cells(path, "markdown") for line in source(c).splitlines() if line.startswith("# ")]
    assert titles and titles[0].startswith(f"# {path.name[:2]} · "), titles[:1]
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "attn-course"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_parameters_cell_before_the_body(path):
    code = cells(path, "code")
    tagged = [i for i, c in enumerate(code) if "parameters" in tags(c)]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters', want 1"
    assert tagged[0] <= 1, f"{path.name}: the parameters cell must follow the setup cell"
    assert re.search(r"^SEED\s*=", source(code[tagged[0]]), re.M), "the parameters cell sets SEED"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_summary_exercises_and_self_checks(path):
    text = "\n".join(source(c) for c in cells(path, "markdown"))
    assert "## Summary" in text and "## Exercises" in text
    checks = [c for c in cells(path, "code") if re.search(r"\bchecks\.check_\w+\(", source(c))]
    assert len(checks) >= 2, f"{path.name}: {len(checks)} exercise self-checks, want at least 2"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_sliders_run_but_are_not_compared(path):
    for cell in cells(path, "code"):
        assert "nbval-skip" not in tags(cell), "cells must run: tag nbval-ignore-output, not nbval-skip"
        if "slider_panel(" in source(cell):
            assert "nbval-ignore-output" in tags(cell), source(cell)[:80]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_small_on_disk(path):
    assert path.stat().st_size < 3_000_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_slider_figures_have_no_errors(path):
    """nbval does not compare widget outputs, so check the stored ones: each drew a figure, none failed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    areas = [m["state"].get("outputs", []) for m in state.values() if m["model_name"] == "OutputModel"]
    sliders = sum("slider_panel(" in source(c) for c in cells(path, "code"))
    assert len(areas) == sliders, f"{len(areas)} stored widget output areas for {sliders} slider panels"
    for outputs in areas:
        assert [o["output_type"] for o in outputs] == ["display_data"], outputs
        assert "image/png" in outputs[0]["data"]


def test_navigation_links_are_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "nbnav.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_lists_every_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert f"(notebooks/{path.name})" in readme, f"README.md does not link {path.name}"


EXERCISE = re.compile(r"^\*\*(\d+)\.\*\*", re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_has_a_collapsed_solution(path):
    """Each exercise (a markdown cell that starts a line with **N.**) is followed, before the next exercise, by
    at least one cell tagged ``solution`` (one per exercise where a cell holds several), collapsed in JupyterLab
    (``jupyter.source_hidden``)."""
    blocks = []  # [exercise numbers of one markdown cell, number of solution cells after it]
    for cell in cells(path):
        if "solution" in tags(cell):
            assert cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True, (
                f"{path.name}: a solution cell is not collapsed (metadata jupyter.source_hidden): {source(cell)[:60]!r}"
            )
            if blocks:
                blocks[-1][1] += 1
            continue
        numbers = EXERCISE.findall(source(cell)) if cell["cell_type"] == "markdown" else []
        if numbers:
            blocks.append([[int(n) for n in numbers], 0])
    numbers = [n for ns, _ in blocks for n in ns]
    assert numbers, f"{path.name} has no exercise"
    assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}: exercises numbered {numbers}"
    missing = [ns for ns, solutions in blocks if solutions < len(ns)]
    assert not missing, f"{path.name}: exercises {missing} have fewer solution cells (tag 'solution') after them"
