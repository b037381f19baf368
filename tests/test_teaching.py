"""The teaching metadata: one source (notebooks/teaching.toml) for every notebook's objectives, prerequisites, time and
difficulty, written into its header cell and the README by tools/course.py, and the teachers' page made from the
README's section."""

import copy
import json
import re
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_site  # noqa: E402
import course  # noqa: E402

PATHS = course.course_notebooks()
NUMBERS = [p.name[:2] for p in PATHS]
STEMS = [p.stem for p in PATHS]
DATA = tomllib.loads(course.TEACHING.read_text(encoding="utf-8"))
README = course.README.read_text(encoding="utf-8")


def test_every_notebook_has_a_complete_entry():
    assert PATHS, "no course notebook"
    assert course.problems_in(DATA, STEMS) == []
    teaching, plans = course.load_teaching()
    assert sorted(teaching) == NUMBERS
    for number, t in teaching.items():
        assert 3 <= len(t.objectives) <= 5, number
        assert t.difficulty in course.DIFFICULTIES and t.minutes > 0 and t.maths and t.topics, number
        assert all(n < number for n in t.notebooks), f"{number}: a prerequisite that comes later"
    assert {p.key for p in plans} == {"two_weeks", "six_weeks"}


def test_header_cells_and_readme_are_what_the_source_writes():
    """The check that keeps them from drifting: `python tools/course.py --write` would change nothing."""
    assert course.stale() == [], "run: python tools/course.py --write"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_each_header_opens_with_objectives_prerequisites_time_and_difficulty(path):
    entry = course.read_header(path)
    t = entry.teaching
    header = entry.nb.cells[entry.header_index].source
    assert entry.header_index == 1, "the header cell comes right after the nav cell"
    assert header.startswith(f"# {entry.number} · ") and entry.description in header
    block = header[header.index(course.BEGIN) : header.index(course.END)]
    assert f"**{course.LEAD}**" in block and "**Prerequisites**: " in block
    assert len(re.findall(r"^\d\. ", block, re.M)) == len(t.objectives)
    assert f"about {t.minutes} minutes" in block and f"**Difficulty**: {t.difficulty}." in block
    for number in t.notebooks:  # each earlier notebook named links to its file
        target = next(p.name for p in PATHS if p.name.startswith(number))
        assert f"[{number}]({target})" in block


def test_readme_table_shows_time_and_difficulty_of_every_notebook():
    section = README.split("## Notebooks", 1)[1].split("\n## ", 1)[0]
    teaching, _ = course.load_teaching()
    for path in PATHS:
        t = teaching[path.name[:2]]
        link = rf"\[[^\]]+\]\(notebooks/{path.name}\)"
        row = re.search(rf"^\| {path.name[:2]} \| {link} \| (\d+) min \| (\w+) \|", section, re.M)
        assert row, f"README.md: no row for {path.name}"
        assert (int(row.group(1)), row.group(2)) == (t.minutes, t.difficulty)
        assert "\n".join(course.objectives_lines(t)) in section, f"README.md: objectives of {path.name}"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_minutes_stay_near_the_estimate(path):
    """The minutes are estimated from the notebook's words, code cells and exercises (README, For teachers): a
    notebook that grew or shrank by more than a quarter needs its time looked at again."""
    t = course.read_header(path).teaching
    estimate = course.estimate_minutes(course.read_header(path).nb)
    assert abs(t.minutes - estimate) <= max(15, estimate / 4), (
        f"{path.name}: {t.minutes} minutes in teaching.toml, the estimate is {estimate}: update minutes"
    )


def _entry(**changes):
    entry = copy.deepcopy(DATA["notebooks"][PATHS[1].stem])
    entry.update(changes)
    return entry


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"minutes": 60}, "has no objectives"),
        (_entry(objectives=["a", "b"]), "has 2 objectives, want 3 to 5"),
        (_entry(objectives=["a", "b", "c", "d", "e", "f"]), "has 6 objectives, want 3 to 5"),
        (_entry(difficulty="hard"), "difficulty 'hard' is not one of"),
        (_entry(minutes="an hour"), "minutes must be a non-empty int"),
        (_entry(prerequisites={"notebooks": {}}), "has no maths"),
        (_entry(prerequisites={"notebooks": {"99": "x"}, "maths": "m"}), "notebook '99' is not an earlier notebook"),
        (_entry(level="easy"), "unknown field 'level'"),
    ],
)
def test_an_incomplete_entry_is_named(entry, says):
    data = copy.deepcopy(DATA)
    data["notebooks"][PATHS[1].stem] = entry
    problems = course.problems_in(data, STEMS)
    assert any(says in p for p in problems), problems


def test_a_notebook_without_an_entry_and_a_plan_out_of_order_are_named():
    data = copy.deepcopy(DATA)
    data["notebooks"]["01_renamed"] = data["notebooks"].pop(PATHS[0].stem)
    data["plans"]["two_weeks"]["weeks"] = [["03", "01"]]
    problems = course.problems_in(data, STEMS)
    assert "[notebooks.01_renamed]: there is no notebook 01_renamed.ipynb" in problems
    assert f"{STEMS[0]}.ipynb has no entry [notebooks.{STEMS[0]}] in teaching.toml" in problems
    assert "[plans.two_weeks] lists notebook '01', which has no entry" in problems
    assert "[plans.two_weeks] has notebook 03 before (or without) its prerequisite(s) ['01']" in problems


OLD_HEADER = """# 01 · Demo

Why it matters.

**You will learn to**
1. one thing;
2. another.

**Prerequisites**: none."""

TOML = """
[notebooks.01_demo]
minutes = 30
difficulty = "introductory"
topics = "demo"
objectives = ["compute a", "explain b", "measure c"]
[notebooks.01_demo.prerequisites]
notebooks = {}
maths = "sums"

[notebooks.13_sparse]
minutes = 45
difficulty = "advanced"
topics = "sparse attention"
objectives = ["compute d", "explain e", "measure f", "build g"]
[notebooks.13_sparse.prerequisites]
notebooks = { 01 = "the demo" }
maths = "none"
code = "PyTorch"

[plans.short]
title = "Short"
weeks = [["01", "13"]]
"""


def _course(tmp_path) -> tuple[Path, Path]:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name, title in (("01_demo", "01 · Demo"), ("13_sparse", "13 · Sparse")):
        header = OLD_HEADER.replace("01 · Demo", title)
        cells = [
            nbformat.v4.new_markdown_cell("[Contents](../README.md#notebooks)", metadata={"tags": ["nav"]}),
            nbformat.v4.new_markdown_cell(header),
            nbformat.v4.new_code_cell("SEED = 0", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_markdown_cell("## Exercises\n\n**1.** *Build it.* Write f."),
            nbformat.v4.new_code_cell("checks.check_f(f)"),
            nbformat.v4.new_code_cell("checks.check_f(g)", metadata={"tags": ["solution"]}),
            nbformat.v4.new_markdown_cell("**2.** Why?"),
        ]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / f"{name}.ipynb")
    (folder / "teaching.toml").write_text(TOML, encoding="utf-8")
    markers = "\n\n".join(f"{b}\n{e}" for b, e in (course._marker(name) for name in course.BLOCKS))
    readme = tmp_path / "README.md"
    readme.write_text(f"# Course\n\n## Notebooks\n\n{markers}\n", encoding="utf-8")
    return folder, readme


def test_a_new_notebook_is_picked_up_from_the_source_alone(tmp_path):
    """Writing replaces an old-style header's lists with the block, keeps the title and the motivation and every
    other cell; a second run finds nothing to do; the README gets the notebook's row, plan and exercises."""
    folder, readme = _course(tmp_path)
    before = {p.name: json.loads(p.read_text()) for p in folder.glob("*.ipynb")}
    assert course.stale(folder, readme, write=True) == ["01_demo.ipynb", "13_sparse.ipynb", "README.md"]
    assert course.stale(folder, readme) == []
    for path in folder.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        after = json.loads(path.read_text())
        assert [c for i, c in enumerate(after["cells"]) if i != 1] == [
            c for i, c in enumerate(before[path.name]["cells"]) if i != 1
        ], "only the header cell changes"
        header = nb.cells[1].source
        assert header.startswith(f"# {path.name[:2]} · ") and "\n\nWhy it matters.\n\n" in header
        assert "You will learn to" not in header and "**Prerequisites**: none" not in header
    sparse = nbformat.read(folder / "13_sparse.ipynb", as_version=4).cells[1].source
    assert "4. build g.\n" in sparse and "3. measure f;\n" in sparse
    assert "**Prerequisites**: notebook [01](01_demo.ipynb) (the demo); maths: none; code: PyTorch." in sparse
    assert "**Time**: about 45 minutes, exercises included. **Difficulty**: advanced." in sparse
    text = readme.read_text()
    assert "| 13 | [Sparse](notebooks/13_sparse.ipynb) | 45 min | advanced | sparse attention |" in text
    assert "| 1 | [01](notebooks/01_demo.ipynb), [13](notebooks/13_sparse.ipynb) | 1 h 15 min |" in text
    assert "| 13 | 2 | 1 (`check_f`) | 2 |" in text and "2 of the 4 exercises are checked" in text
    entry = course.read_header(folder / "13_sparse.ipynb")
    assert entry.title == "Sparse" and entry.description == "Why it matters."
    assert entry.objectives == ["compute d", "explain e", "measure f", "build g"]


def test_a_hand_edited_header_block_is_stale(tmp_path):
    folder, readme = _course(tmp_path)
    course.stale(folder, readme, write=True)
    path = folder / "01_demo.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][1]["source"] = [line.replace("30 minutes", "20 minutes") for line in nb["cells"][1]["source"]]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert course.stale(folder, readme) == ["01_demo.ipynb"]


def test_checked_exercises_are_found_in_the_cells_and_their_checks_exist():
    """An exercise is checked when a cell of it that is not a solution calls checks.check_...; every check named is a
    function of attn_course.checks (read as text: no runtime dependency here)."""
    defined = set()
    for path in (ROOT / "attn_course" / "checks").rglob("*.py"):
        defined |= set(re.findall(r"^def (check_\w+)\(", path.read_text(encoding="utf-8"), re.M))
    for path in PATHS:
        found = course.exercises(nbformat.read(path, as_version=4))
        assert [e.number for e in found] == list(range(1, len(found) + 1)), path.name
        named = {c for e in found for c in e.checks}
        assert len([e for e in found if e.checks]) >= 2 and named <= defined, (path.name, named - defined)
    table = README.split("### Exercises checked automatically", 1)[1].split("\n### ", 1)[0]
    assert "| 03 | 6 | 1 (`check_scaled_scores`), 2 (`check_attention_memory`)," in table


def test_the_teachers_page_is_the_readme_section():
    """One text: the site's page is the README's section, its links to notebooks leading to their pages."""
    assert "\n## For teachers\n" in README
    teachers = course.section(README, "For teachers")
    assert "### Grading with `make grade`\n" in teachers
    for name in ("make student", "build/student/", "make lab", "Two weeks", "Six weeks", "checks.check_", "grades.csv"):
        assert name in teachers, name
    page = build_site.teachers_page(README)
    assert page.startswith("# For teachers\n") and "\n## Grading with `make grade`\n" in page
    assert "](notebooks/" not in page and "[03](03_scoring_functions.ipynb)" in page
    assert "\n## Running the course for a class\n" in page
    same = lambda text: re.sub(r"\s+|#|\]\([^)]*\)|\[", "", text)  # noqa: E731 - text without links and headings
    assert same(page.replace("# For teachers", "", 1)) == same(teachers)
