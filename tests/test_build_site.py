"""tools/build_site.py and tools/course.py without a browser: parameters, headers, the pages' sources, alt text."""

import base64
import hashlib
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_site  # noqa: E402
import course  # noqa: E402
import ipc_kernels  # noqa: E402


def test_params_read_like_papermill_later_options_win(tmp_path):
    file = tmp_path / "params.yaml"
    file.write_text("SEED: 4\nEPOCHS: 2\n")
    given = f'-p SEED 1 -r NAME 007 -y "{{LR: 0.1}}" -f {file} -p EPOCHS 3 -p FLAG True'
    assert build_site.parse_params(given) == {"SEED": 4, "NAME": "007", "LR": 0.1, "EPOCHS": 3, "FLAG": True}
    assert build_site.parse_params("") == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("-p SEED", "expected 2 arguments"),
        ("-q 1", "unrecognized arguments: -q 1"),
        ("-p 1x 2", "must be a Python name, got '1x'"),
        ("-f /no/such/file.yaml", "no parameters file"),
        ('-y "[1, 2]"', "must hold a mapping of parameter names to values"),
    ],
)
def test_params_that_cannot_be_read_say_why(text, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[")):
        build_site.parse_params(text)


def test_every_course_notebook_has_a_header_the_site_can_read():
    paths = course.course_notebooks()
    assert paths and len({p.name[:2] for p in paths}) == len(paths), "one notebook per number"
    for path in paths:
        entry = course.read_header(path)
        assert entry.number == path.name[:2] and entry.title and entry.description
        assert entry.objectives and entry.prerequisites, path.name
        assert entry.params, f"{path.name}: no parameters cell"
        assert entry.heading.startswith(f"{entry.number} · ")


HEADER = "# 01 · Demo\n\nWhy.\n\n**You will learn to**\n\n1. one\n\n**Prerequisites**: none"


def _executed(tmp_path, cells) -> course.Notebook:
    nb = nbformat.v4.new_notebook(cells=cells)
    source = tmp_path / "notebooks" / "01_demo.ipynb"
    source.parent.mkdir()
    nbformat.write(nb, source)
    entry = course.read_header(source)
    target = build_site.executed(entry)
    return entry, target, nb


def test_prepared_page_drops_nav_adds_the_note_and_closes_solutions(tmp_path, monkeypatch):
    monkeypatch.setattr(build_site, "EXECUTED", tmp_path / "executed")
    cells = [
        nbformat.v4.new_markdown_cell("[Contents](../README.md#notebooks)", metadata={"tags": ["nav"]}),
        nbformat.v4.new_markdown_cell(
            "# 01 · Demo\n\nWhy.\n\n**You will learn to**\n\n1. one\n\n**Prerequisites**: none"
        ),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_markdown_cell("**1.** Do it. See [the map](../README.md#notebooks)."),
        nbformat.v4.new_code_cell("check(x)", metadata={"tags": ["solution"]}),
        nbformat.v4.new_markdown_cell("Because.", metadata={"tags": ["solution"]}),
        nbformat.v4.new_markdown_cell("[Contents](../README.md#notebooks)", metadata={"tags": ["nav"]}),
    ]
    entry, target, nb = _executed(tmp_path, cells)
    target.parent.mkdir(parents=True)
    nbformat.write(nb, target)
    page = build_site.prepare(entry)
    sources = [c.source for c in page.cells]
    assert not any("nav" in c.metadata.get("tags", []) for c in page.cells)
    assert "Run it yourself" in sources[1] and "notebooks/01_demo.ipynb" in sources[1] and "make lab" in sources[1]
    assert "(index.md)" in sources[3], "the link to the contents leads to the course map"
    code = page.cells[4]
    assert "hide-cell" in code.metadata.tags and code.metadata.mystnb["code_prompt_show"] == "Show solution"
    assert sources[5].startswith('<details class="solution">') and "Because." in sources[5]
    assert sources[5].rstrip().endswith("</details>") and " open" not in sources[5].split(">")[0]


def test_figures_get_their_alt_text_on_the_page(tmp_path):
    png = base64.b64encode(b"\x89PNG fake bytes").decode()
    output = nbformat.v4.new_output(
        "display_data", data={"image/png": png}, metadata={"alt": 'Figure: weights "by key"'}
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("plot()", outputs=[output])])
    alts = build_site.figure_alts(nb)
    digest = hashlib.sha256(b"\x89PNG fake bytes").hexdigest()
    assert alts == {digest: 'Figure: weights "by key"'}
    page = tmp_path / "01_demo.html"
    other = "f" * 64
    page.write_text(
        f'<img alt="_images/{digest}.png" src="_images/{digest}.png" />'
        f'<img alt="_images/{other}.png" src="_images/{other}.png" />'
    )
    missing = build_site.write_alts(tmp_path, alts)
    assert 'alt="Figure: weights &quot;by key&quot;" src="_images/' in page.read_text()
    assert missing == [f"01_demo.html: _images/{other}.png"]


def test_course_map_warns_when_built_with_other_parameters(tmp_path):
    entries = [course.read_header(p) for p in course.course_notebooks()]
    build_site.write_index(tmp_path, entries, {}, "Course")
    plain = (tmp_path / "index.md").read_text()
    assert "with each notebook's own parameters" in plain
    assert all(f"({e.stem}.ipynb)" in plain for e in entries) and plain.count(":hidden:") == 1
    for e in entries:  # from teaching.toml, as in the header cell
        assert (
            f"**Time**: about {e.teaching.minutes} minutes" in plain
            and f"**Difficulty**: {e.teaching.difficulty}." in plain
        )
        assert (
            "\n".join(course.objectives_lines(e.teaching)) in plain and f"**Prerequisites**: {e.prerequisites}" in plain
        )
    assert plain.count(f"**{course.LEAD}**") == len(entries)
    assert plain.split(":maxdepth: 1\n\n", 1)[1].split("\n")[: len(entries) + 1] == [e.stem for e in entries] + [
        "teachers"
    ], "the toctree: every notebook in order, then the teachers' page"
    assert "[For teachers](teachers.md)" in plain
    build_site.write_index(tmp_path, entries, {"SEED": 1}, "Course")
    assert "`SEED = 1`" in (tmp_path / "index.md").read_text()
    assert "may disagree" in (tmp_path / "index.md").read_text()


def test_source_maps_and_the_comments_naming_them_are_left_out(tmp_path):
    static = tmp_path / "_static"
    (static / "scripts").mkdir(parents=True)
    (static / "scripts" / "theme.js").write_text("var a = 1;\n//# sourceMappingURL=theme.js.map\n")
    (static / "scripts" / "theme.js.map").write_text("x" * 1000)
    (static / "theme.css").write_text("a{color:red}\n/*# sourceMappingURL=theme.css.map */\n")
    (static / "theme.css.map").write_text("y" * 500)
    (static / "plain.js").write_text("var sourceMappingURL = 'kept';\n")  # not a trailing comment: kept
    assert build_site.drop_source_maps(static) == pytest.approx(1500 / 1e6)
    assert sorted(p.name for p in static.rglob("*") if p.is_file()) == ["plain.js", "theme.css", "theme.js"]
    assert (static / "scripts" / "theme.js").read_text() == "var a = 1;"
    assert (static / "theme.css").read_text() == "a{color:red}"
    assert (static / "plain.js").read_text() == "var sourceMappingURL = 'kept';\n"


def test_a_site_or_a_page_over_its_budget_is_named(tmp_path, monkeypatch):
    (tmp_path / "small.html").write_bytes(b"x" * 1000)
    assert build_site.over_budget(tmp_path) == []
    monkeypatch.setattr(build_site, "PAGE_BUDGET_MB", 0.0005)
    monkeypatch.setattr(build_site, "SITE_BUDGET_MB", 0.0009)
    assert build_site.over_budget(tmp_path) == [
        "small.html is 0.0 MB, over the 0.0005 MB a page may take",
        "the site is 0.0 MB, over its budget of 0.0009 MB",
    ]


@pytest.mark.parametrize("jobs", [1, 2])
def test_executing_one_notebook_or_two_at_a_time_says_its_threads(tmp_path, monkeypatch, capsys, jobs):
    """One notebook at a time keeps PyTorch's default thread count; two share the cores. Either way the build runs."""
    monkeypatch.setattr(build_site, "EXECUTED", tmp_path / "executed")
    monkeypatch.setattr(build_site, "execute", _fake_execute)  # the pool's workers are forked: they see it too
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    entries = [course.read_header(p) for p in course.course_notebooks()[:2]]
    errors, times = build_site.execute_all(entries, {}, jobs, force=True)
    assert errors == {} and len(times) == 2
    said = capsys.readouterr().out
    if jobs == 1:
        assert "1 at a time" in said and "OMP_NUM_THREADS unset (PyTorch's default)" in said
    else:
        assert f"OMP_NUM_THREADS={max(1, ipc_kernels.usable_cores() // 2)}" in said


def _fake_execute(source, target, params, key):
    return 0.0, None, ""
