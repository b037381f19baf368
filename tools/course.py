"""The course's notebooks as the tools see them: which they are, in order, what their header cell says, and their
teaching metadata.

``tools/nbnav.py``, ``tools/build_site.py`` and the tests read the notebooks through this module, so the list, the
titles and the teaching metadata are read in one place.

The teaching metadata of every notebook (objectives, prerequisites, minutes, difficulty, the README's line of
topics) lives in one file, ``notebooks/teaching.toml``, and the suggested paths through the course beside it. This
module writes it into each notebook's header cell, between two marker comments, and into the README's generated
blocks; ``tests/test_teaching.py`` fails when either differs from what the file gives:

    python tools/course.py --write      write the header cells' teaching blocks and the README's generated blocks
    python tools/course.py --check      exit 1 if any of them is out of date, or the file is incomplete
    python tools/course.py --estimate   each notebook's minutes beside the estimate made from its cells
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
TEACHING = NOTEBOOKS / "teaching.toml"
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


# --------------------------------------------------------------------------------------------- teaching metadata

DIFFICULTIES = ("introductory", "intermediate", "advanced")
OBJECTIVES = (3, 5)  # at least, at most
LEAD = "After this notebook you will be able to"
BEGIN = "<!-- teaching: from notebooks/teaching.toml, written by python tools/course.py --write; edit it there -->"
END = "<!-- /teaching -->"
FIELDS = {"objectives": list, "minutes": int, "difficulty": str, "topics": str, "prerequisites": dict}
PREREQUISITE_FIELDS = {"notebooks": dict, "maths": str, "code": str}
REQUIRED_PREREQUISITES = ("notebooks", "maths")  # code: only where a notebook needs more than Python and tensors


@dataclass
class Teaching:
    """One notebook's entry in teaching.toml."""

    objectives: list[str]  # markdown, each completing "After this notebook you will be able to ..."
    notebooks: dict[str, str]  # the earlier notebooks it builds on: number ("03") -> what it uses from it
    maths: str
    code: str
    minutes: int  # a student's time, reading, running and the exercises
    difficulty: str  # one of DIFFICULTIES
    topics: str  # the README table's line: what the notebook covers


@dataclass
class Plan:
    """A suggested path through the course: the notebooks of each week."""

    key: str
    title: str
    intro: str
    weeks: list[list[str]]  # notebook numbers


def problems_in(data: dict, stems: list[str]) -> list[str]:
    """What is missing or wrong in teaching.toml's ``data``, for the course notebooks ``stems`` (``01_topic``...)."""
    problems = []
    entries = data.get("notebooks", {})
    numbers = [stem[:2] for stem in stems]
    by_number = {stem[:2]: stem for stem in entries if stem in stems}
    for stem in stems:
        if stem not in entries:
            problems.append(f"{stem}.ipynb has no entry [notebooks.{stem}] in {TEACHING.name}")
    for stem, entry in entries.items():
        if stem not in stems:
            problems.append(f"[notebooks.{stem}]: there is no notebook {stem}.ipynb")
            continue
        if not isinstance(entry, dict):
            problems.append(f"[notebooks.{stem}] is not a table")
            continue
        for name, kind in FIELDS.items():
            if name not in entry:
                problems.append(f"[notebooks.{stem}] has no {name}")
            elif not isinstance(entry[name], kind) or (kind is str and not entry[name].strip()):
                problems.append(f"[notebooks.{stem}] {name} must be a non-empty {kind.__name__}")
        problems += [f"[notebooks.{stem}] has an unknown field {name!r}" for name in set(entry) - set(FIELDS)]
        objectives = entry.get("objectives", [])
        if isinstance(objectives, list):
            if not OBJECTIVES[0] <= len(objectives) <= OBJECTIVES[1]:
                problems.append(
                    f"[notebooks.{stem}] has {len(objectives)} objectives, want {OBJECTIVES[0]} to {OBJECTIVES[1]}"
                )
            if not all(isinstance(o, str) and o.strip() for o in objectives):
                problems.append(f"[notebooks.{stem}] objectives must be non-empty strings")
        if entry.get("difficulty", DIFFICULTIES[0]) not in DIFFICULTIES:
            problems.append(f"[notebooks.{stem}] difficulty {entry['difficulty']!r} is not one of {DIFFICULTIES}")
        if isinstance(entry.get("minutes"), int) and not 5 <= entry["minutes"] <= 600:
            problems.append(f"[notebooks.{stem}] minutes must be between 5 and 600, got {entry['minutes']}")
        needs = entry.get("prerequisites", {})
        if not isinstance(needs, dict):
            continue
        for name in REQUIRED_PREREQUISITES:
            if name not in needs:
                problems.append(f"[notebooks.{stem}.prerequisites] has no {name}")
        for name, kind in PREREQUISITE_FIELDS.items():
            if name in needs and not isinstance(needs[name], kind):
                problems.append(f"[notebooks.{stem}.prerequisites] {name} must be a {kind.__name__}")
        problems += [
            f"[notebooks.{stem}.prerequisites] has an unknown field {name!r}"
            for name in set(needs) - set(PREREQUISITE_FIELDS)
        ]
        for number in needs.get("notebooks", {}) if isinstance(needs.get("notebooks"), dict) else []:
            if number not in numbers or number >= stem[:2]:
                problems.append(f"[notebooks.{stem}.prerequisites] notebook {number!r} is not an earlier notebook")
    for key, plan in data.get("plans", {}).items():
        weeks = plan.get("weeks") if isinstance(plan, dict) else None
        if not isinstance(plan.get("title") if isinstance(plan, dict) else None, str) or not (
            isinstance(weeks, list) and weeks and all(isinstance(w, list) and w for w in weeks)
        ):
            problems.append(f"[plans.{key}] needs a title and weeks (lists of notebook numbers)")
            continue
        listed = [n for week in weeks for n in week]
        for n in listed:
            if n not in by_number:
                problems.append(f"[plans.{key}] lists notebook {n!r}, which has no entry")
        if len(set(listed)) != len(listed):
            problems.append(f"[plans.{key}] lists a notebook twice")
        for i, n in enumerate(listed):
            needs = entries.get(by_number.get(n, ""), {}).get("prerequisites", {})
            late = [m for m in needs.get("notebooks", {}) if m not in listed[:i]] if isinstance(needs, dict) else []
            if late:
                problems.append(f"[plans.{key}] has notebook {n} before (or without) its prerequisite(s) {late}")
    return problems


def load_teaching(path: Path = TEACHING) -> tuple[dict[str, Teaching], list[Plan]]:
    """teaching.toml: ({notebook number: its entry}, the plans), for the notebooks beside it. Exits naming every
    problem it finds."""
    with path.open("rb") as file:
        data = tomllib.load(file)
    problems = problems_in(data, [p.stem for p in course_notebooks(path.parent)])
    if problems:
        raise SystemExit(f"{path.name}:\n  " + "\n  ".join(problems))
    entries = {}
    for stem, entry in data.get("notebooks", {}).items():
        needs = entry["prerequisites"]
        entries[stem[:2]] = Teaching(
            objectives=[" ".join(o.split()) for o in entry["objectives"]],
            notebooks=dict(needs["notebooks"]),
            maths=" ".join(needs["maths"].split()),
            code=" ".join(needs.get("code", "").split()),
            minutes=entry["minutes"],
            difficulty=entry["difficulty"],
            topics=" ".join(entry["topics"].split()),
        )
    plans = [
        Plan(key, plan["title"], " ".join(plan.get("intro", "").split()), plan["weeks"])
        for key, plan in data.get("plans", {}).items()
    ]
    return entries, plans


def _wrap(text: str, indent: str = "", width: int = 120) -> str:
    """Markdown wrapped at ``width``, never inside ``$math$`` or a `code span` (a line break there may not render)."""
    keep = "\x00"
    guarded = re.sub(r"(\$[^$]+\$|`[^`]+`)", lambda m: m.group(0).replace(" ", keep), text)
    wrapped = textwrap.fill(guarded, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return wrapped.replace(keep, " ")


def prerequisites_text(t: Teaching, link) -> str:
    """The prerequisites as one markdown sentence; ``link(number)`` gives the address of an earlier notebook."""
    parts = []
    if t.notebooks:
        named = [f"[{n}]({link(n)}) ({what})" if what else f"[{n}]({link(n)})" for n, what in t.notebooks.items()]
        word = "notebook" if len(named) == 1 else "notebooks"
        parts.append(f"{word} " + (named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]))
    else:
        parts.append("no earlier notebook")
    parts.append(f"maths: {t.maths}")
    if t.code:
        parts.append(f"code: {t.code}")
    return "; ".join(parts) + "."


def time_text(t: Teaching) -> str:
    return f"**Time**: about {t.minutes} minutes, exercises included. **Difficulty**: {t.difficulty}."


def objectives_lines(t: Teaching, width: int = 120) -> list[str]:
    """The numbered objectives, each ending in ';' and the last in '.'."""
    last = len(t.objectives)
    return [
        _wrap(f"{i}. {o}{'.' if i == last else ';'}", indent="   ", width=width) for i, o in enumerate(t.objectives, 1)
    ]


def header_block(t: Teaching, link) -> str:
    """The teaching block of a notebook's header cell, markers included."""
    return "\n".join(
        [
            BEGIN,
            "",
            f"**{LEAD}**",
            "",
            *objectives_lines(t),
            "",
            _wrap(f"**Prerequisites**: {prerequisites_text(t, link)}"),
            "",
            time_text(t),
            "",
            END,
        ]
    )


# --------------------------------------------------------------------------------------------- notebooks


@dataclass
class Notebook:
    """One course notebook and what the site needs to know of it."""

    source: Path
    nb: object = field(repr=False)
    number: str = ""
    title: str = ""
    description: str = ""  # markdown: the motivation paragraph(s) of the header cell
    teaching: Teaching | None = None  # its entry in teaching.toml
    params: set[str] = field(default_factory=set)
    header_index: int = -1  # the header cell's index in nb.cells

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

    @property
    def objectives(self) -> list[str]:
        return self.teaching.objectives if self.teaching else []

    @property
    def prerequisites(self) -> str:
        """Markdown, with links to the earlier notebooks beside this one."""
        if not self.teaching:
            return ""
        siblings = {p.name[:2]: p.name for p in course_notebooks(self.source.parent)}
        return prerequisites_text(self.teaching, lambda n: siblings.get(n, f"{n}.ipynb"))


def course_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The course notebooks in teaching order: ``notebooks/NN_topic.ipynb``."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if NAME.match(p.name))


STOPS = ("**You will learn to**", f"**{LEAD}**", "**Prerequisites**")  # where an old-style header's lists begin


def _split_header(source: str) -> tuple[str, str, str, str] | None:
    """(heading line, motivation, block, what follows the block) of a header cell; None if it has no ``# `` line."""
    lines = source.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("# ")]
    if not heads:
        return None
    rest = lines[heads[0] + 1 :]
    cut = next((i for i, line in enumerate(rest) if line.strip() == BEGIN or line.strip().startswith(STOPS)), len(rest))
    tail = rest[cut:]
    block, after = tail, []
    if END in [line.strip() for line in tail]:
        end = [line.strip() for line in tail].index(END)
        block, after = tail[: end + 1], tail[end + 1 :]
    return lines[heads[0]], "\n".join(rest[:cut]).strip(), "\n".join(block).strip(), "\n".join(after).strip()


def header_cell(nb) -> int:
    """Index of the header cell: the first markdown cell, not a nav cell, with a ``# `` heading."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and "nav" not in cell.get("metadata", {}).get("tags", []):
            if _split_header(cell.source):
                return i
    return -1


def read_header(path: Path, teaching: dict[str, Teaching] | None = None) -> Notebook:
    """Title and motivation from the notebook's header cell (``# NN · Title``), its entry in teaching.toml."""
    nb = nbformat.read(path, as_version=4)
    entry = Notebook(path, nb, params=parameter_names(nb))
    entry.header_index = header_cell(nb)
    if entry.header_index < 0:
        raise SystemExit(f"{path.name}: no markdown cell with a '# NN · Title' heading")
    heading, entry.description, _, _ = _split_header(nb.cells[entry.header_index].source)
    match = re.match(r"(\d+)\s*[·.:-]\s*(.+)", heading[2:].strip())
    entry.number, entry.title = (match.group(1), match.group(2)) if match else (path.name[:2], heading[2:].strip())
    if teaching is None and (path.parent / TEACHING.name).is_file():
        teaching, _ = load_teaching(path.parent / TEACHING.name)
    entry.teaching = (teaching or {}).get(path.name[:2])
    return entry


def header_source(entry: Notebook) -> str:
    """The header cell as teaching.toml writes it: heading, motivation, the teaching block, anything after it."""
    heading, description, _, after = _split_header(entry.nb.cells[entry.header_index].source)
    siblings = {p.name[:2]: p.name for p in course_notebooks(entry.source.parent)}
    block = header_block(entry.teaching, lambda n: siblings[n])
    return "\n\n".join(part for part in (heading, description, block, after) if part)


# --------------------------------------------------------------------------------------------- exercises


EXERCISE = re.compile(r"^\*\*(\d+)\.\*\*", re.M)
CHECK = re.compile(r"\bchecks\.(check_\w+)\(")


@dataclass
class Exercise:
    number: int
    checks: list[str]  # the checks.check_... functions its student cell calls: checked automatically when any
    build: bool  # a "Build it" exercise: a function to write


def student_cells(nb):
    """The cells a student works through: neither solutions nor the navigation links."""
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "solution" not in tags and "nav" not in tags:
            yield cell


def exercises(nb) -> list[Exercise]:
    """The exercises after a notebook's ``## Exercises`` heading: a markdown cell that starts a line with **N.**, and
    the cells up to the next one. An exercise is checked automatically when one of those cells that is not a
    solution calls ``checks.check_...``."""
    found, started = [], False
    for cell in student_cells(nb):
        if cell.cell_type == "markdown":
            started = started or "## Exercises" in cell.source
            body = cell.source.split("## Exercises", 1)[-1]
            parts = re.split(r"^(?=\*\*\d+\.\*\*)", body, flags=re.M) if started else []
            for part in parts:
                number = EXERCISE.match(part)
                if number:
                    found.append(Exercise(int(number.group(1)), [], bool(re.search(r"Build it", part[:200]))))
        elif found:
            found[-1].checks += [c for c in CHECK.findall(cell.source) if c not in found[-1].checks]
    return found


# How the minutes were estimated (README, "For teachers"): prose read at READ_WPM words a minute, a minute for each
# code cell of the body (read it, run it, look at what it prints or draws), and per exercise: a "Build it" function,
# a short answer that a check marks, an open question or experiment that none does.
READ_WPM = 120
CELL_MINUTES = 1
EXERCISE_MINUTES = {"build": 15, "checked": 5, "open": 12}


def estimate_minutes(nb) -> int:
    """A student's minutes for a notebook, from its words, code cells and exercises (solutions left out)."""
    words, cells, in_exercises = 0, 0, False
    for cell in student_cells(nb):
        if cell.cell_type == "markdown":
            in_exercises = in_exercises or "## Exercises" in cell.source
            words += len(re.sub(r"\$[^$]*\$", "x", cell.source).split())  # a formula counts as a word
        elif not in_exercises:
            cells += 1
    minutes = words / READ_WPM + cells * CELL_MINUTES
    for e in exercises(nb):
        minutes += EXERCISE_MINUTES["build" if e.build else "checked" if e.checks else "open"]
    return round(minutes)


# --------------------------------------------------------------------------------------------- the README


def _hours(minutes: int) -> str:
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def readme_notebooks(entries: list[Notebook]) -> str:
    """The README's table of notebooks, then each notebook's objectives and prerequisites (folded)."""
    lines = [
        "| # | notebook | time | difficulty | what you learn |",
        "|---|---|---|---|---|",
    ]
    for e in entries:
        t = e.teaching
        lines.append(
            f"| {e.number} | [{e.title}](notebooks/{e.source.name}) | {t.minutes} min | {t.difficulty} | {t.topics} |"
        )
    total = sum(e.teaching.minutes for e in entries)
    lines += [
        "",
        _wrap(
            f"In all about {_hours(total)} of a student's time, exercises included (how it was estimated: *For "
            "teachers*, below). Each notebook opens with what you will be able to do after it and what it builds on:"
        ),
        "",
    ]
    for e in entries:
        lines += [
            f"<details><summary>{e.number} · {e.title}</summary>",
            "",
            f"**{LEAD}**",
            "",
            *objectives_lines(e.teaching),
            "",
            _wrap(f"**Prerequisites**: {prerequisites_text(e.teaching, lambda n: _readme_link(entries, n))}"),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines).rstrip()


def _readme_link(entries: list[Notebook], number: str) -> str:
    return next(f"notebooks/{e.source.name}" for e in entries if e.number == number)


def readme_plans(entries: list[Notebook], plans: list[Plan]) -> str:
    """The suggested paths: one table per plan, a row a week with its notebooks and their minutes."""
    by_number = {e.number: e for e in entries}
    lines = []
    for plan in plans:
        listed = [n for week in plan.weeks for n in week]
        lines += [_wrap(f"**{plan.title}**: {plan.intro}" if plan.intro else f"**{plan.title}**"), ""]
        lines += ["| week | notebooks | student time |", "|---|---|---|"]
        for i, week in enumerate(plan.weeks, 1):
            names = ", ".join(f"[{n}](notebooks/{by_number[n].source.name})" for n in week)
            lines.append(f"| {i} | {names} | {_hours(sum(by_number[n].teaching.minutes for n in week))} |")
        left = [n for n in by_number if n not in listed]
        if left:
            lines += ["", f"Left out, for students who want more: {', '.join(left)}."]
        lines.append("")
    return "\n".join(lines).rstrip()


def readme_checked(entries: list[Notebook]) -> str:
    """Which exercises a check marks, notebook by notebook (found in the notebooks' cells)."""
    lines = ["| # | exercises | checked automatically | not checked (read the answer) |", "|---|---|---|---|"]
    count = checked = 0
    for e in entries:
        found = exercises(e.nb)
        yes = [x for x in found if x.checks]
        no = [str(x.number) for x in found if not x.checks]
        count, checked = count + len(found), checked + len(yes)
        marked = ", ".join(f"{x.number} (`{'`, `'.join(x.checks)}`)" for x in yes) or "none"
        lines.append(f"| {e.number} | {len(found)} | {marked} | {', '.join(no) or 'none'} |")
    lines += ["", f"{checked} of the {count} exercises are checked automatically."]
    return "\n".join(lines)


BLOCKS = {  # name: what writes it; the README holds each between <!-- name: ... --> and <!-- /name -->
    "notebooks": lambda entries, plans: readme_notebooks(entries),
    "plans": readme_plans,
    "checked-exercises": lambda entries, plans: readme_checked(entries),
}


def _marker(name: str) -> tuple[str, str]:
    return f"<!-- {name}: written by python tools/course.py --write from notebooks/ -->", f"<!-- /{name} -->"


def readme_with_blocks(text: str, entries: list[Notebook], plans: list[Plan]) -> str:
    """The README with each generated block written anew. Exits if a block's markers are missing."""
    for name, write in BLOCKS.items():
        begin, end = _marker(name)
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no block {begin} ... {end}")
        block = f"{begin}\n\n{write(entries, plans)}\n\n{end}"
        text = pattern.sub(lambda m, block=block: block, text, count=1)
    return text


def section(text: str, heading: str) -> str:
    """A ``## `` section of a markdown text, from its heading to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not match:
        raise SystemExit(f"README.md has no section '## {heading}'")
    return match.group(1).strip()


# --------------------------------------------------------------------------------------------- main


def course(folder: Path = NOTEBOOKS) -> tuple[list[Notebook], list[Plan]]:
    """Every course notebook with its teaching entry, and the plans."""
    teaching, plans = load_teaching(folder / TEACHING.name)
    return [read_header(p, teaching) for p in course_notebooks(folder)], plans


def stale(folder: Path = NOTEBOOKS, readme: Path = README, write: bool = False) -> list[str]:
    """The notebooks and README whose generated text differs from teaching.toml's; written anew if ``write``."""
    entries, plans = course(folder)
    found = []
    for entry in entries:
        wanted = header_source(entry)
        if entry.nb.cells[entry.header_index].source == wanted:
            continue
        found.append(entry.source.name)
        if write:  # the stored JSON as it is, the header cell's source alone changed
            nb = json.loads(entry.source.read_text(encoding="utf-8"))
            nb["cells"][entry.header_index]["source"] = wanted.splitlines(keepends=True)
            with entry.source.open("w", encoding="utf-8") as file:
                json.dump(nb, file, indent=1, ensure_ascii=False)
                file.write("\n")
    text = readme.read_text(encoding="utf-8")
    new = readme_with_blocks(text, entries, plans)
    if new != text:
        found.append(readme.name)
        if write:
            readme.write_text(new, encoding="utf-8")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write the header cells and the README's blocks")
    action.add_argument("--check", action="store_true", help="exit 1 if any is out of date")
    action.add_argument("--estimate", action="store_true", help="minutes in teaching.toml beside the estimate")
    args = parser.parse_args(argv)
    if args.estimate:
        entries, _ = course()
        print(f"{'notebook':<44} {'minutes':>7} {'estimate':>8}")
        for e in entries:
            print(f"{e.stem:<44} {e.teaching.minutes:>7} {estimate_minutes(e.nb):>8}")
        return 0
    found = stale(write=args.write)
    if args.check and found:
        print("teaching metadata out of date in: " + ", ".join(found) + " (run: python tools/course.py --write)")
        return 1
    print(f"course: {len(found)} file(s) {'written' if args.write else 'out of date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
