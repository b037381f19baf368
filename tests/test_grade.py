"""make grade (tools/grade.py): a small class built on the fly from notebook 04 is graded by the course's checks, in
sandboxed kernels; wrong input stops the run before anything runs or is written."""

import csv
import fcntl
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.tools  # the course's files and tools, no runtime dependency: not in make test-oldest
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import grade  # noqa: E402

NOTEBOOK = "04_self_attention_by_hand.ipynb"  # small and quick: five checked exercises
MARKER = "86420975"  # the argument of a background process that a hand-in starts; it must not outlive its kernel
PROBE = r"""
import json, os, socket
found = {}
probe = socket.socket()
probe.settimeout(2)
found["net"] = probe.connect_ex(("192.0.2.1", 443))
for key, path in (("course", COURSE), ("tmp", "/tmp/attn-grade-probe")):
    try:
        open(path, "a").close()
        found[key] = "writable"
    except OSError as error:
        found[key] = error.errno
found["caps"] = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0]
found["procs"] = len([p for p in os.listdir("/proc") if p.isdigit()])
found["files"] = sorted(p for p in os.listdir(".") if not p.startswith("."))
found["env"] = "ATTN_GRADE_SECRET" in os.environ
try:
    bytearray(6 * 2**30)
    found["memory"] = "allocated"
except MemoryError:
    found["memory"] = "MemoryError"
raise RuntimeError(json.dumps(found, separators=(",", ":")))
""".replace("COURSE", repr(str(ROOT / "pyproject.toml")))
# The first cell of the hand-ins whose verdicts are about answers, hints and the sandbox: their figures are built but
# never drawn. The inline backend renders each figure to a PNG at the end of its cell, about 4 s of the 10 s that a
# copy of notebook 04 takes in a kernel, and no verdict reads a figure. "solved", the course's own notebook, still
# draws every figure in the sandbox, as a student's kernel would.
NO_DRAWING = 'import matplotlib\nmatplotlib.use("agg")'


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _code(source: str, *tags: str) -> dict:
    cell = {"cell_type": "code", "id": os.urandom(4).hex(), "metadata": {"tags": list(tags)}, "source": source}
    return {**cell, "outputs": [], "execution_count": None}


def _markdown(source: str, *tags: str) -> dict:
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": source}


def _save(folder: Path, student: str, cells: list[dict]) -> None:
    notebook = json.loads((ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    notebook["cells"] = cells
    (folder / student).mkdir(parents=True, exist_ok=True)
    (folder / student / NOTEBOOK).write_text(json.dumps(notebook), encoding="utf-8")


def _edit(cells: list[dict], start: str, old: str, new: str) -> list[dict]:
    """A copy of ``cells`` with ``old`` replaced by ``new`` in the one code cell whose source starts with ``start``."""
    cells = json.loads(json.dumps(cells))
    matching = [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith(start)]
    assert len(matching) == 1, f"expected one cell starting {start!r}"
    matching[0]["source"] = "".join(matching[0]["source"]).replace(old, new)
    return cells


def build_class(folder: Path) -> None:
    """Six students and one empty folder, each a case of the issue's list."""
    course = _cells(ROOT / "notebooks" / NOTEBOOK)
    student = [c for c in course if not grade.is_solution(c)]  # what make student keeps (tests/test_student.py)
    _save(folder, "solved", course)  # the course's own notebook: every check's solution cell runs
    _save(folder, "untouched", [_code(NO_DRAWING), *student])
    wrong = _edit(student, "x3 = torch.tensor", "key_3 = None", "key_3 = torch.zeros(4)")  # (4,) for a (3,) key
    _save(folder, "wrong", [_code(NO_DRAWING), *wrong, _code(PROBE)])
    # A loop that never ends, asleep: the cell timeout is what ends it, and a busy loop would take a core from the
    # tests that run beside this one for the whole timeout.
    looping = f"import subprocess, time\nsubprocess.Popen(['sleep', '{MARKER}'])\nwhile True:\n    time.sleep(0.05)\n"
    _save(folder, "loop", [_code(looping), *student])
    _save(folder, "crash", [_code("import os\nos._exit(3)"), *student])
    # Solutions of exercises 1-3 with every check call deleted; 4 and 5 unsolved, their checks redefined to pass.
    cheat = []
    for cell in course:
        source = "".join(cell["source"])
        if grade.is_solution(cell) and ("check_reversed_outputs" in source or "check_self_attending_key" in source):
            continue
        if cell["cell_type"] == "code":
            cell = {**cell, "source": "\n".join(line for line in source.splitlines() if "checks.check_" not in line)}
        cheat.append(cell)
    redefine = (
        "import attn_course.checks as real, attn_course.checks.selfattention as selfattention\n"
        "yes = lambda *args, **kwargs: real.Feedback(True, 'fine')\n"
        "checks.check_reversed_outputs = yes\n"
        "selfattention.check_self_attending_key = real.check_self_attending_key = yes\n"
        "def check_reversed_outputs(*args):\n    return True\n"
        "real.Feedback.__bool__ = lambda self: True\n"
        "open('attn_course.py', 'w').write('raise SystemExit')  # a module of the same name beside the notebook\n"
    )
    _save(folder, "cheater", [_code(NO_DRAWING), *cheat, _code(redefine)])
    (folder / "absent <b>&").mkdir()  # handed nothing in; a name that HTML must escape


def grade_class(root: Path) -> Path:
    """Build the class in ``root`` and grade it; the results folder."""
    folder = root / "class"
    build_class(folder)
    out = root / "out" / "grades"
    out.mkdir(parents=True)
    (out / "stale.txt").write_text("from an earlier run")
    os.environ["ATTN_GRADE_SECRET"] = "the grader's environment"  # must not reach a kernel
    try:
        code = grade.main(
            [str(folder), "--out", str(out), "--jobs", "2", "--cell-timeout", "10", "--check-timeout", "10"]
        )
    finally:
        del os.environ["ATTN_GRADE_SECRET"]
    assert code == 0
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded once per test session. Under pytest-xdist's default ``--dist load`` (make unit) this
    module's tests are spread over the workers, and each worker would grade the whole class again (about 25 s of
    kernels, and two gradings at once each see the other's processes); the first worker grades into the session's
    shared folder and the others wait for it and read its results. ``make test`` (``--dist loadfile``) grades once
    anyway."""
    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None  # then basetemp is .../pytest-N/popen-gwK
    root = (tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.getbasetemp()) / "graded-class"
    root.mkdir(exist_ok=True)
    with open(root.parent / "graded-class.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the grading fails
        done = root / "graded"
        if not done.exists():  # also when a grading before this one failed: a folder of its own
            done.write_text(str(grade_class(Path(tempfile.mkdtemp(dir=root)))))
    out = Path(done.read_text())
    with open(out / "grades.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return out, rows


def _verdicts(rows, student):
    return [(r["exercise"].split()[0], r["passed"], r["hint"]) for r in rows if r["student"] == student]


def test_every_student_gets_a_row_for_every_checked_exercise(graded):
    out, rows = graded
    labels = [c.label for c in grade.course_checks(ROOT / "notebooks" / NOTEBOOK)]
    students = ["absent <b>&", "cheater", "crash", "loop", "solved", "untouched", "wrong"]
    assert list(rows[0]) == ["student", "notebook", "exercise", "passed", "hint"]
    assert [(r["student"], r["exercise"]) for r in rows] == [(s, label) for s in students for label in labels]
    assert {r["passed"] for r in rows} == {"true", "false"}
    assert all(r["hint"] == "" for r in rows if r["passed"] == "true")
    assert not (out / "stale.txt").exists(), "the results folder is replaced whole"


def test_a_solved_copy_passes_everything_and_the_student_edition_nothing(graded):
    _, rows = graded
    assert [passed for _, passed, _ in _verdicts(rows, "solved")] == ["true"] * 5
    untouched = _verdicts(rows, "untouched")
    assert [passed for _, passed, _ in untouched] == ["false"] * 5
    assert all(hint.startswith("replace None") for _, _, hint in untouched), untouched


def test_a_wrong_answer_gets_the_checks_hint(graded):
    _, rows = graded
    first = _verdicts(rows, "wrong")[0]
    assert first[:2] == ("1", "false") and "expected shape (3,), got (4,)" in first[2], first


def test_a_loop_times_out_and_a_crash_is_said(graded):
    _, rows = graded
    assert {hint for _, _, hint in _verdicts(rows, "loop")} == {
        "timed out at cell 1: a cell ran longer than 10 s (the limit per cell)"
    }
    assert all("the kernel died at cell 1" in hint for _, _, hint in _verdicts(rows, "crash"))
    assert {hint for _, _, hint in _verdicts(rows, "absent <b>&")} == {"not handed in"}
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and MARKER in _cmdline(p)]
    assert not left, "a process the hand-in started outlived its kernel"


def _cmdline(process: Path) -> str:
    try:
        return (process / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_redefined_or_deleted_checks_do_not_change_the_verdict(graded):
    _, rows = graded
    assert [passed for _, passed, _ in _verdicts(rows, "cheater")] == ["true"] * 3 + ["false"] * 2


def test_the_sandbox_cuts_the_network_and_protects_the_course(graded):
    isolated, why = grade.isolation()
    if not isolated:
        pytest.skip(f"no sandbox on this system: {why}")
    _, rows = graded
    hint = _verdicts(rows, "wrong")[1][2]
    found = json.loads(hint.split("raised RuntimeError: ", 1)[1].removesuffix(")"))
    assert found == {
        "net": 101,  # ENETUNREACH: no interface is up
        "course": 30,  # EROFS
        "tmp": 30,
        "caps": "0000000000000000",
        "procs": 2,  # the kernel and its watcher, alone in their PID namespace
        "files": [NOTEBOOK],
        "env": False,
        "memory": "MemoryError",
    }


def test_the_summary_and_the_report(graded):
    out, _ = graded
    summary = (out / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert summary[0] == f"student,{NOTEBOOK},total"
    assert summary[1:] == [
        "absent <b>&,0,0",
        "cheater,3,3",
        "crash,0,0",
        "loop,0,0",
        "solved,5,5",
        "untouched,0,0",
        "wrong,0,0",
    ]
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "absent &lt;b&gt;&amp;" in report and "<b>&" not in report
    assert "<script" not in report and "src=" not in report and "<link" not in report and "http" not in report
    assert ">5/5</td>" in report


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "no such folder"),
        ("empty", "empty, no student folders"),
        ("not a notebook", "not a Jupyter notebook"),
        ("unknown name", "the course has no notebook '99_nothing.ipynb'"),
        ("loose file", "a file where a student's folder belongs"),
        ("no notebooks", "the student folders hold no notebook"),
    ],
)
def test_wrong_input_stops_before_anything_runs_and_writes_nothing(tmp_path, capsys, case, message):
    folder = tmp_path / "class"
    if case != "missing":
        (folder / ".ipynb_checkpoints").mkdir(parents=True)  # hidden: passed over
    if case == "not a notebook":
        (folder / "ann").mkdir()
        (folder / "ann" / NOTEBOOK).write_text("print('hello')")
    elif case == "unknown name":
        _save(folder, "ann", [])
        (folder / "ann" / "99_nothing.ipynb").write_text("{}")
    elif case == "loose file":
        _save(folder, "ann", [])
        (folder / NOTEBOOK).write_text("{}")
    elif case == "no notebooks":
        (folder / "ann").mkdir()
    out = tmp_path / "grades"
    out.mkdir()
    (out / "kept.txt").write_text("earlier results")
    assert grade.main([str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "nothing graded, nothing written" in err and message in err, err
    assert sorted(p.name for p in out.iterdir()) == ["kept.txt"]


def test_the_course_notebooks_never_assign_an_answer_again_after_its_exercise():
    """The grader evaluates each check after the whole notebook has run; that equals evaluating it in place only if
    no later cell of the student edition assigns the names the check call reads."""
    for path in grade.course_notebooks().values():
        cells = _cells(path)
        assert grade.exercises(cells), f"{path.name}: no checked exercise found"
        assert grade.reassigned_answers(cells) == [], path.name


def test_exercises_are_read_as_the_student_edition_shows_them():
    cells = [
        _markdown("## Exercises\n\n**1.** Two checks."),
        _code("a = None\nb = None\nchecks.check_a(a)\nchecks.check_b(b, n=3)"),
        _code("a = 1\nchecks.check_a(a)", "solution"),
        _markdown("**2.** Not checked."),
        _code(""),
        _markdown("**3.** Checked after a solution markdown."),
        _code("%matplotlib inline\nc = None\nchecks.check_c(c)"),
        _markdown("Because.", "solution"),
        _code("c = 5  # a later cell of the student edition"),
    ]
    found = grade.exercises(cells)
    assert [(c.label, c.call, c.names) for c in found] == [
        ("1 (check_a)", f"{grade.PRIVATE}(a)", ("a",)),
        ("1 (check_b)", f"{grade.PRIVATE}(b, n=3)", ("b",)),
        ("3 (check_c)", f"{grade.PRIVATE}(c)", ("c",)),
    ]
    assert grade.reassigned_answers(cells) == ["exercise 3 (check_c): cell 8 assigns c again"]
