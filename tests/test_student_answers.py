"""What the student edition (``make student``: the notebooks without their cells tagged ``solution``) keeps gives no
self-checked exercise's answer away above the exercise, and promises no solution it lacks. Not marked ``tools``: it
calls the course's own checks, so it runs wherever the course's dependencies are installed."""

import io
import keyword
import re
import tokenize

import pytest
from test_student import EXERCISE, NOTEBOOKS, assert_none_found, code_cell, is_solution, markdown_cell

from attn_course import checks as course_checks

# What the student edition shows above a self-checked exercise must not give its answer away, and what it says about
# solutions must be true of it. The checks themselves tell what they accept: an answer is whatever the exercise's
# check calls correct, so nothing here names an expected value.

CHECK_CALL = re.compile(r"\bchecks\.(check_\w+)\(")
# A number as the notebooks write it (1,024 or 0.125 or 1e-3), and the byte unit that may follow it.
NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?:\s*(bytes|B|KiB|MiB|GiB|KB|MB|GB)\b)?"
)
BYTE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 10**3, "MB": 10**6, "GB": 10**9}
GIVEN = re.compile(r"\b([A-Za-z])\s*=\s*(\d+)\b")  # "$D = 48$" in an exercise: a symbol and the value it is given
# A sentence that tells the reader a solution is there to open. In the student edition, which has none, it must say
# which edition holds them.
PROMISE = re.compile(
    r"worked solution|solutions? (?:is |are )?(?:below|collapsed|hidden)|open the solution|see the solution|"
    r"followed by (?:a|its) (?:worked )?solution",
    re.I,
)
EDITIONS = re.compile(r"\b(?:course|student) edition\b", re.I)


def student_edition(cells: list[dict]) -> list[dict]:
    """The cells that ``make student`` keeps (test_student_copy_is_the_notebook_without_its_solutions proves it)."""
    return [c for c in cells if not is_solution(c)]


def shown_text(cell: dict) -> str:
    """What a cell shows a reader: its source and, for a code cell, the text of its outputs."""
    parts = ["".join(cell["source"])]
    for output in cell.get("outputs", []):
        parts += ["".join(output.get("text", "")), "".join(output.get("data", {}).get("text/plain", ""))]
    return "\n".join(parts)


def self_checked_exercises(cells: list[dict]) -> list[tuple[int, str, str, str, list[str]]]:
    """(the exercise's cell index, its number, the check its cell calls, that cell's source, its solutions' code)."""
    found = []
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or is_solution(cell) or not EXERCISE.search(source):
            continue
        following = []
        for later in cells[i + 1 :]:
            if later["cell_type"] == "markdown" and not is_solution(later):
                break
            following.append(later)
        work = [c for c in following if c["cell_type"] == "code" and not is_solution(c)]
        if not work:
            continue
        given = "".join(work[0]["source"])
        solutions = ["".join(c["source"]) for c in following if c["cell_type"] == "code" and is_solution(c)]
        number = EXERCISE.findall(source)[-1].strip("*.")
        found += [(i, number, name, given, solutions) for name in CHECK_CALL.findall(given)]
    return found


def _verdict(check, answer):
    """The check's verdict when it calls ``answer`` correct, else None (also when it refuses the kind by raising)."""
    try:
        verdict = check(answer)
    except Exception:  # a check made for tensors or functions need not take a bare number
        return None
    return verdict if verdict else None


def _digits(written: str) -> int:
    """Significant digits of a number as written: 2.000 and 1000 have 1, 2.008 has 4, 0.0788 has 3."""
    mantissa = written.split("e")[0]
    return len(mantissa.replace(".", "").strip("0")) if "." in mantissa else len(mantissa.strip("0"))


def _reads_as(written: str, value: float) -> bool:
    """``value``, rounded to as many decimals as ``written`` shows, is ``written``."""
    decimals = len(written.split(".")[1]) if "." in written and "e" not in written else 0
    return "e" not in written and round(value, decimals) == float(written)


def numbers_accepted(text: str, check) -> list[str]:
    """The numbers of ``text`` that ``check`` calls correct. One written with a byte unit is tried in every byte unit
    (66 MiB is 69,206,016 bytes). One written bare counts when it is as specific as an answer (three significant
    digits or more) and the check's own explanation carries it: a check that allows for rounding would also accept a
    nearby number that has nothing to do with the exercise (a loss of 2.008 for an answer of 2)."""
    accepted = []
    for match in NUMBER.finditer(text):
        written, unit = match.group(1).replace(",", ""), match.group(2)
        if unit is not None:
            size = float(written) * BYTE_UNITS.get(unit, 1)
            if any(_verdict(check, size / per) for per in BYTE_UNITS.values()):
                accepted.append(match.group(0))
        elif _digits(written) >= 3 and (verdict := _verdict(check, float(written))):
            explained = (m.group(1).replace(",", "") for m in NUMBER.finditer(verdict.message))
            if any(_reads_as(written, float(number)) for number in explained):
                accepted.append(match.group(0))
    return accepted


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def givens_stated(exercise: str, text: str, check) -> list[str]:
    """When the answer is one of the exercise's givens ($D = 48$ and the answer 48), the phrases of three words of the
    check's explanation, written with the symbol, that ``text`` also says ("at most D"): the answer, in words."""
    stated, said = [], f" {' '.join(_words(text))} "
    for symbol, value in GIVEN.findall(exercise):
        verdict = _verdict(check, float(value))
        if verdict is None:
            continue
        explained = re.sub(rf"\b{value}\b", symbol, re.sub(rf"\b{symbol}\s*=\s*{value}\b", symbol, verdict.message))
        words = _words(explained)
        phrases = (words[i : i + 3] for i in range(len(words) - 2))
        stated += [" ".join(p) for p in phrases if symbol.lower() in p and f" {' '.join(p)} " in said]
    return stated


def code_tokens(source: str) -> list[str]:
    """Python code as tokens, with the names a learner chooses made alike ("v"); keywords, attributes (the ``exp``
    of ``torch.exp``), operators and numbers kept; comments and layout dropped."""
    tokens, previous = [], ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.ENDMARKER:
                break
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                continue
            name = token.type == tokenize.NAME and not keyword.iskeyword(token.string) and previous != "."
            tokens.append("v" if name else token.string)
            previous = token.string
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        return re.findall(r"\w+|[^\w\s]", source)
    return tokens


def shared_code(solution: str, given: str, shown: list[str], run: int = 8) -> float:
    """The share of a solution's code (less the lines the exercise's cell gives) that stands in ``shown``, in runs of
    ``run`` tokens or more, names aside: near 1 when the solution could be copied from a cell above."""
    lines = {line.strip() for line in given.splitlines()}
    tokens = code_tokens("\n".join(line for line in solution.splitlines() if line.strip() not in lines))
    seen = set()
    for source in shown:
        other = code_tokens(source)
        seen.update(tuple(other[i : i + run]) for i in range(len(other) - run + 1))
    covered = [False] * len(tokens)
    for i in range(len(tokens) - run + 1):
        if tuple(tokens[i : i + run]) in seen:
            covered[i : i + run] = [True] * run
    return sum(covered) / len(tokens) if tokens else 0.0


def answers_shown_before(cells: list[dict], check_of) -> list[str]:
    """Self-checked exercises whose answer the student edition shows above them (``check_of(name)`` is the check):
    a number the check accepts, in a cell's text or output; an answer that is a given, stated in its symbol; or a
    function to write whose solution stands, four fifths of it or more, in the code above."""
    found = []
    for index, number, name, given, solutions in self_checked_exercises(cells):
        check, above = check_of(name), student_edition(cells[:index])
        where = f"exercise {number} ({name})"
        for cell in above:
            found += [
                f"{where}: {n!r} above it is an answer the check accepts"
                for n in numbers_accepted(shown_text(cell), check)
            ]
        said = givens_stated("".join(cells[index]["source"]), " ".join(shown_text(c) for c in above), check)
        found += [f"{where}: its answer is one of its givens, and the text above says {p!r}" for p in said[:1]]
        code = ["".join(c["source"]) for c in above if c["cell_type"] == "code"]
        shares = [shared_code(s, given, code) for s in solutions if "def " in s]
        found += [
            f"{where}: {share:.0%} of its solution's code is in the cells above" for share in shares if share >= 0.8
        ]
    return list(dict.fromkeys(found))


def promised_solutions(cells: list[dict]) -> list[str]:
    """Sentences of the student edition's markdown that promise a solution without saying that only the course
    edition has the solutions."""
    promises = []
    for i, cell in enumerate(student_edition(cells)):
        if cell["cell_type"] != "markdown":
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join("".join(cell["source"]).split())):
            if PROMISE.search(sentence) and not EDITIONS.search(sentence):
                promises.append(f"student cell {i}: {sentence[:90]!r}")
    return promises


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_shows_no_answer_before_its_exercise(path):
    fault = "the student edition gives these answers away above the exercise"
    assert_none_found(path, lambda cells: answers_shown_before(cells, lambda name: getattr(course_checks, name)), fault)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_promises_no_solution_it_lacks(path):
    assert_none_found(path, promised_solutions, "the student edition has no solutions, yet says")


def _check_48(answer):  # the shape of a course check: a Feedback-like verdict, truthy when right
    if answer == 48:
        return course_checks.Feedback(True, "48: at most D = 48 keys can be orthogonal.")
    return course_checks.Feedback(False, "count the orthogonal keys.")


def _check_bytes(answer):
    if answer == 69206016:
        return course_checks.Feedback(True, "69,206,016 bytes (about 66 MiB).")
    return course_checks.Feedback(False, "count the bytes.")


def test_the_answer_finders_find_each_way_an_answer_shows_and_pass_a_clean_notebook():
    """A value in another unit, a given stated in its symbol, a solution copied from above: each found; the same
    exercises after a notebook that gives nothing away, none; a nearby number that only a tolerance accepts, none."""
    checks = {"check_48": _check_48, "check_bytes": _check_bytes, "check_fn": lambda fn: None}
    shown_code = "def f(x):\n    y = torch.exp(x - x.max(dim=-1).values) * 2.0 + x.sum(dim=-1)\n    return y / 4\n"
    exercises = [
        markdown_cell("**1.** How many bytes move? Answer with a number."),
        code_cell("moved = None\nchecks.check_bytes(moved)"),
        code_cell("moved = 69206016\nchecks.check_bytes(moved)", "solution"),
        markdown_cell("**2.** Keys of size $D = 48$: how many pairs?"),
        code_cell("pairs = None\nchecks.check_48(pairs)"),
        code_cell("pairs = 48\nchecks.check_48(pairs)", "solution"),
        markdown_cell("**3.** *Build it.* Write `g(x)`."),
        code_cell("def g(x):\n    return None\n\n\nchecks.check_fn(g)"),
        code_cell(shown_code.replace("def f", "def g") + "\n\nchecks.check_fn(g)", "solution"),
    ]
    giving = code_cell(shown_code + 'print("tiled: 66 MiB")')
    giving["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "tiled: 66 MiB\n"}]
    above = [markdown_cell("A state of size D holds at most $D$ keys exactly."), giving]
    found = answers_shown_before(above + exercises, checks.get)
    assert [line.split(":")[0] for line in found] == [
        "exercise 1 (check_bytes)",  # once, though both the code that prints it and its output show it
        "exercise 2 (check_48)",
        "exercise 3 (check_fn)",
    ]
    assert "'66 MiB'" in found[0] and "'at most d'" in found[1] and "100%" in found[2]
    clean = [
        markdown_cell("A state holds only so many keys; 48.0 and 2.008 are numbers of no exercise."),
        code_cell("x = 1"),
    ]
    assert answers_shown_before(clean + exercises, checks.get) == []
    assert promised_solutions([markdown_cell("Each exercise is followed by a worked solution, collapsed.")]) != []
    assert (
        promised_solutions([markdown_cell("In the course edition each exercise is followed by a worked solution.")])
        == []
    )
