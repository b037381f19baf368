#!/usr/bin/env python3
"""Build the student site: execute every course notebook with papermill, then render the site with Sphinx.

    python tools/build_site.py                          build build/site/ with the notebooks' own parameters
    python tools/build_site.py --params "-p SEED 1"     the same with other values (papermill's -p, -r, -y, -f)
    python tools/build_site.py --force                  execute every notebook again, changed or not

``make html`` runs the first form (``make html PARAMS="-p SEED 1 -f params.yaml"`` for the second).

What it writes, all under ``build/``:

- ``executed/NN_topic.ipynb``: each notebook as papermill ran it, with the widget state stored. A notebook is
  executed again only when something it depends on changed (its source, the parameters, ``attn_course``, the files
  beside it in ``notebooks/``, the pinned requirements, this build); ``--force`` re-executes them all. In the
  kernels that run them, figures carry alt text (``figure_alt.py``) and slider panels draw their frames for the
  static page (``attn_course/widgets/frames.py``).
- ``sphinx/``: what Sphinx reads: the executed notebooks prepared for the site (no prev | next cells, a note on
  running them yourself, solutions closed), ``index.md`` (the course map) and ``_static/`` (require.js, the widget
  manager and MathJax from the npm packages pinned in ``site/package-lock.json``, the site's CSS).
- ``site/``: the site, rendered by Sphinx with ``site/conf.py`` (myst-nb, sphinx-book-theme), built anew each time
  so that pages of removed notebooks do not linger. It works offline, from any static host or opened from disk.

The stored notebooks in ``notebooks/`` are never written.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import copy
import hashlib
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import yaml
from course import (
    LEAD,
    NOTEBOOKS,
    README,
    ROOT,
    TEACHING,
    Notebook,
    course_notebooks,
    objectives_lines,
    read_header,
    section,
    time_text,
)
from ipc_kernels import IPCKernelManager, kernel_env

PACKAGE = ROOT / "attn_course"
SITE_SRC = ROOT / "site"  # Sphinx conf.py, npm manifest and lock file, the site's CSS and script
BUILD = ROOT / "build"
EXECUTED = BUILD / "executed"
SITE = BUILD / "site"
SOURCES = BUILD / "sphinx"  # what Sphinx reads: prepared notebooks, index.md, _static
DOCTREES = BUILD / "doctrees"
KERNEL = "attn-course"
CELL_TIMEOUT = 180  # seconds per cell; a whole course notebook takes well under 30 s, so this means a hang
META = "attn_course_site"  # key of the build's own metadata in the executed notebooks
SITE_BUDGET_MB = 40  # the whole site, 12 notebooks' pages and everything they load
PAGE_BUDGET_MB = 5  # one page (its slider panels' frames are inside it)
SOURCE_MAP = re.compile(r"\n?(?://|/\*)# sourceMappingURL=\S+?(?: \*/)?\s*$")

# What each pinned npm package contributes to _static/<package>/: only what the pages load.
ASSETS = {
    "requirejs": ["require.js"],  # its licence is in the file's header
    "@jupyter-widgets/html-manager": [
        "dist/embed-amd.js",
        "dist/*.woff2",  # Font Awesome, used by widget icons
        "dist/*.woff",
        "dist/*.ttf",  # (not the .eot and .svg copies: only Internet Explorer and old iOS ask for those)
        "dist/embed.js.LICENSE.txt",
    ],
    "mathjax": [
        "MathJax.js",
        "LICENSE",
        "config/TeX-AMS_CHTML-full.js",
        "config/Safe.js",
        "extensions/*.js",
        "extensions/TeX/*.js",
        "jax/input/TeX/**/*",
        "jax/output/CommonHTML/**/*",
        "jax/element/**/*",
        "fonts/HTML-CSS/TeX/woff/**/*",
        "fonts/HTML-CSS/TeX/otf/**/*",
        "localization/en/*",
    ],
}


# --------------------------------------------------------------------------------------------- parameters


def _value(text: str) -> object:
    """A ``-p`` value the way papermill reads it: bool, None, int, float, else the string."""
    special = {"True": True, "False": False, "None": None}
    if text in special:
        return special[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


class _Options(argparse.ArgumentParser):
    """argparse for the papermill options in PARAMS: an error is a ValueError, not an exit."""

    def error(self, message):
        raise ValueError(message)


class _InOrder(argparse.Action):
    """Keep every option with its kind, in the order given: later options win, as in papermill."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.given = [*(namespace.given or []), (self.const, values)]


def parse_params(text: str | None) -> dict[str, object]:
    """Parameters from papermill-style options: ``-p NAME VALUE``, ``-r NAME VALUE``, ``-y YAML``, ``-f FILE``.

    Later options win, as in papermill. Raises ``ValueError`` naming whatever it cannot read.
    """
    parser = _Options(prog="PARAMS", add_help=False)
    parser.set_defaults(given=[])
    for short, long, kind, nargs in (
        ("-p", "--parameters", "value", 2),
        ("-r", "--parameters_raw", "raw", 2),
        ("-y", "--parameters_yaml", "yaml", 1),
        ("-f", "--parameters_file", "file", 1),
    ):
        parser.add_argument(short, long, nargs=nargs, action=_InOrder, const=kind, dest="given")
    params: dict[str, object] = {}
    for kind, values in parser.parse_args(shlex.split(text or "")).given:
        if kind in ("value", "raw"):
            name, raw = values
            if not name.isidentifier():
                raise ValueError(f"parameter name must be a Python name, got {name!r}")
            params[name] = raw if kind == "raw" else _value(raw)
            continue
        if kind == "file":
            path = Path(values[0])
            if not path.is_file():
                raise ValueError(f"-f: no parameters file {path}")
            loaded, where = yaml.safe_load(path.read_text(encoding="utf-8")), str(path)
        else:
            loaded, where = yaml.safe_load(values[0]), "-y"
        if not isinstance(loaded, dict) or not all(isinstance(k, str) and k.isidentifier() for k in loaded):
            raise ValueError(f"{where} must hold a mapping of parameter names to values, got {loaded!r}")
        params.update(loaded)
    return params


def executed(entry: Notebook) -> Path:
    """Where the build keeps the notebook as papermill ran it."""
    return EXECUTED / entry.source.name


def dependency_key(entry: Notebook, params: dict[str, object]) -> str:
    """A digest of everything an execution depends on: same digest, same executed notebook."""
    digest = hashlib.sha256()
    files = [entry.source, ROOT / "requirements.txt", ROOT / "pyproject.toml", Path(__file__).parent / "figure_alt.py"]
    files += sorted(PACKAGE.rglob("*.py"))
    files += sorted(  # teaching.toml is not read by the notebooks: what it says is in their header cells
        p
        for p in NOTEBOOKS.rglob("*")
        if p.is_file() and p.suffix != ".ipynb" and "checkpoint" not in str(p) and p != TEACHING
    )
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps(params, sort_keys=True, default=str).encode())
    digest.update(KERNEL_SETUP.encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


POLL_SLICE = 0.25  # seconds; see _poll_in_slices


def _poll_in_slices() -> None:
    """Make the kernel client wait for messages in short slices instead of one long wait.

    jupyter_client's asyncio channels wait with ``zmq.asyncio`` poll, which now and then misses the wake-up for a
    message that has already arrived: here a slider cell sat idle for exactly the cell timeout (180 s, and 600 s
    before that), then completed normally, because the poll looks again when its timeout fires (nbclient issue
    #312 describes the same stall). Waiting in slices of POLL_SLICE seconds bounds such a stall to one slice.
    """
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    original = AsyncZMQSocketChannel.get_msg
    if getattr(original, "sliced", False):
        return

    async def get_msg(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE if deadline is None else min(POLL_SLICE, max(0.0, deadline - time.monotonic()))
            try:
                return await original(self, timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    get_msg.sliced = True
    AsyncZMQSocketChannel.get_msg = get_msg


def execute(source: str, target: str, params: dict[str, object], key: str) -> tuple[float, str | None, str]:
    """Run one notebook with papermill in a fresh kernel; returns (seconds, error or None, kernel's log).

    Runs in a worker process: the kernel's own chatter goes to a log that is shown only when something fails. The
    kernel talks over Unix sockets in a private folder (``ipc_kernels``), so two notebooks run at once cannot pick
    the same port. A kernel that fails before the first cell runs is started once more, fresh; the log says so
    and the build prints it. A second failure is reported as the notebook's error.
    """
    import papermill

    _poll_in_slices()
    with tempfile.TemporaryFile(mode="w+") as log:
        saved = os.dup(1), os.dup(2)
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(log.fileno(), 1), os.dup2(log.fileno(), 2)
        start = time.perf_counter()
        started = []  # on_notebook_start appends once the kernel has answered
        for attempt in (1, 2):
            error = None
            started.clear()
            try:
                papermill.execute_notebook(
                    source,
                    target,
                    parameters=params or None,
                    kernel_name=KERNEL,
                    cwd=str(NOTEBOOKS),
                    progress_bar=False,
                    log_output=False,
                    execution_timeout=CELL_TIMEOUT,
                    kernel_manager_class=IPCKernelManager,
                    extra_arguments=[f"--InteractiveShellApp.exec_lines={KERNEL_SETUP}"],
                    on_notebook_start=lambda notebook: started.append(True),
                )
            except papermill.PapermillExecutionError as exc:
                error = f"cell [{exc.exec_count}] raised {exc.ename}: {exc.evalue}"
            except Exception as exc:  # the kernel did not start, a timeout, a bad notebook...
                error = f"{type(exc).__name__}: {exc}"
            if error is None or started or attempt == 2:
                break
            print(f"{RETRY}: {error}", file=log, flush=True)  # the log, not stdout: pytest may capture that
        seconds = time.perf_counter() - start
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        log.seek(0)
        text = log.read()
    if error is None:
        nb = nbformat.read(target, as_version=4)
        given = json.loads(json.dumps(params, default=str))  # a YAML date, say, as its text
        nb.metadata[META] = {"key": key, "seconds": round(seconds, 2), "parameters": given}
        nbformat.write(nb, target)
    return seconds, error, text


def share_cores(at_once: int) -> None:
    """In a build worker: the kernels it starts share the cores with the other workers' (``ipc_kernels.kernel_env``)."""
    os.environ.update(kernel_env(at_once))


def kernel_pool(at_once: int) -> concurrent.futures.ProcessPoolExecutor:
    """``at_once`` build workers, each starting its kernels with its share of the cores."""
    return concurrent.futures.ProcessPoolExecutor(at_once, initializer=share_cores, initargs=(at_once,))


RETRY = "kernel failed to start; retried once with a fresh kernel"
# Run in each kernel before the notebook: figures carry alt text in their output metadata (tools/figure_alt.py),
# and slider panels draw their frames for the static page (attn_course/widgets/frames.py).
KERNEL_SETUP = (
    f"import sys as _s; _s.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import figure_alt as _f; "
    "_f.install(); _s.path.pop(0); import os as _o; _o.environ['ATTN_COURSE_FRAMES'] = '1'; del _s, _f, _o"
)


def execute_all(
    entries: list[Notebook], params: dict[str, object], jobs: int, force: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """Execute the notebooks that need it, ``jobs`` at a time, printing each one's time as it ends.

    Returns (name -> error, name -> a line on its time) for the summary.
    """
    EXECUTED.mkdir(parents=True, exist_ok=True)
    known = {e.source.name for e in entries}
    for old in EXECUTED.glob("*.ipynb"):  # a removed or renamed notebook leaves nothing behind
        if old.name not in known:
            old.unlink()
    todo, errors, times = [], {}, {}
    for entry in entries:
        mine = {k: v for k, v in params.items() if k in entry.params}
        key = dependency_key(entry, mine)
        previous = None
        if executed(entry).exists() and not force:
            previous = nbformat.read(executed(entry), as_version=4).metadata.get(META, {})
        if previous and previous.get("key") == key:
            times[entry.source.name] = f"{previous['seconds']:6.1f} s  (unchanged: the earlier run's time)"
            print(f"  {entry.stem:<44} unchanged, not re-run")
        else:
            executed(entry).unlink(missing_ok=True)
            todo.append((entry, mine, key))
    if not todo:
        return errors, times
    at_once = min(jobs, len(todo))
    threads = kernel_env(at_once).get("OMP_NUM_THREADS")  # none for a kernel alone: PyTorch's default
    threads = f"OMP_NUM_THREADS={threads}" if threads else "OMP_NUM_THREADS unset (PyTorch's default)"
    print(f"executing {len(todo)} notebook(s), {at_once} at a time, kernel {KERNEL}, {threads}")
    with kernel_pool(at_once) as pool:
        futures = {pool.submit(execute, str(e.source), str(executed(e)), mine, key): (e, mine) for e, mine, key in todo}
        for future in concurrent.futures.as_completed(futures):
            entry, mine = futures[future]
            seconds, error, log = future.result()
            given = ", ".join(f"{k}={v!r}" for k, v in mine.items())
            status = "ok" if error is None else "FAILED"
            times[entry.source.name] = f"{seconds:6.1f} s" + ("" if error is None else "  FAILED")
            print(f"  {entry.stem:<44} {seconds:6.1f} s  {status}" + (f"  ({given})" if given else ""))
            for line in log.splitlines():
                if line.startswith(RETRY):
                    print(f"    {line}")
            if error:
                errors[entry.source.name] = error
                print(f"    {error}")
                tail = log.strip().splitlines()[-15:]
                if tail:
                    print("    kernel log (last lines):\n      " + "\n      ".join(tail))
    return errors, times


# --------------------------------------------------------------------------------------------- sources


def npm_install() -> None:
    """``npm ci`` in site/ unless node_modules already matches the lock file. Exits with a message without npm."""
    lock = SITE_SRC / "package-lock.json"
    stamp = SITE_SRC / "node_modules" / ".installed-from-lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "npm not found: the site's scripts (require.js, the widget manager, MathJax) come from the npm packages "
            "pinned in site/package-lock.json. Install Node.js and npm (apt-get install nodejs npm) and run again."
        )
    print("installing the site's JavaScript (npm ci in site/, versions from site/package-lock.json)")
    start = time.perf_counter()
    result = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=SITE_SRC,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit("npm ci failed in site/:\n" + (result.stderr or result.stdout).strip()[-2000:])
    stamp.write_text(digest + "\n")
    print(f"  npm ci {time.perf_counter() - start:.1f} s")


def install_assets(static: Path) -> None:
    """Copy what the pages load from the pinned npm packages into ``static`` (Sphinx's html_static_path)."""
    npm_install()
    modules = SITE_SRC / "node_modules"
    for package, patterns in ASSETS.items():
        source, target = modules / package, static / package.split("/")[-1]
        for pattern in patterns:
            matches = [p for p in source.glob(pattern) if p.is_file()]
            if not matches:
                raise SystemExit(f"site/node_modules/{package} has no {pattern}: run `npm ci` in site/ again")
            for path in matches:
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
    for name in ("course.css", "course.js"):
        shutil.copy2(SITE_SRC / name, static / name)


def site_links(source: str) -> str:
    """Markdown with the link to the course's contents (``../README.md#notebooks``) pointing at the course map."""
    return re.sub(r"(\]\(|href=\")\.\./README\.md(#[^)\"\s]*)?", r"\1index.md", source)


SOLUTION_PROMPTS = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}


def figure_alts(nb) -> dict[str, str]:
    """{sha256 of a PNG output: its alt text}: myst-nb names each image file after the sha256 of its bytes."""
    alts = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png, alt = output.get("data", {}).get("image/png"), output.get("metadata", {}).get("alt")
            if png and alt:
                alts[hashlib.sha256(base64.b64decode(png)).hexdigest()] = alt
    return alts


def write_alts(site: Path, alts: dict[str, str]) -> list[str]:
    """Put each figure's alt text on its <img> in every page; returns the images left without one."""
    missing = []
    for page in site.glob("*.html"):
        text = page.read_text(encoding="utf-8")

        def alt(match: re.Match, name: str = page.name) -> str:
            digest = match.group(2)
            if digest not in alts:
                missing.append(f"{name}: _images/{digest}.png")
                return match.group(0)
            return f'alt="{html.escape(alts[digest], quote=True)}"{match.group(1)}'

        new = re.sub(r'alt="_images/[0-9a-f]{64}\.png"(\s+src="_images/([0-9a-f]{64})\.png")', alt, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return missing


def prepare(entry: Notebook) -> nbformat.NotebookNode:
    """The executed notebook as the site shows it.

    - The prev | contents | next cells (tag ``nav``) go: the site has its own sidebar and prev/next links.
    - After the header cell, a note says how to run the notebook yourself.
    - Solution cells (tag ``solution``) are closed until the reader opens them: a code cell with myst-nb's
      ``hide-cell`` ("Show solution"), a markdown cell inside a ``<details>`` element.
    """
    nb = copy.deepcopy(nbformat.read(executed(entry), as_version=4))
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "nav" in tags:
            continue
        if cell.cell_type == "markdown":
            cell.source = site_links(cell.source)
        if "solution" in tags:
            if cell.cell_type == "code":
                cell.metadata.tags = [*tags, "hide-cell"]
                cell.metadata["mystnb"] = {**cell.metadata.get("mystnb", {}), **SOLUTION_PROMPTS}
            else:
                cell.source = (
                    f'<details class="solution">\n<summary>Show solution</summary>\n\n{cell.source}\n\n</details>'
                )
        cells.append(cell)
    header = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# "))
    note = nbformat.v4.new_markdown_cell(RUN_IT_YOURSELF.format(name=entry.source.name))
    note.metadata["tags"] = ["run-it-yourself"]
    cells.insert(header + 1, note)
    nb.cells = cells
    return nb


RUN_IT_YOURSELF = """\
:::{{admonition}} Run it yourself
:class: tip
This page shows the notebook as it ran when the site was built. To run the code and move the sliders with a live
kernel, download the course, run `make lab` in its folder, and open `notebooks/{name}` (the download button at the
top of this page gives you this notebook alone).
:::"""


def write_index(folder: Path, entries: list[Notebook], params: dict, course: str) -> None:
    """index.md: the course map, each notebook's title, motivation, objectives, prerequisites, time and difficulty
    (from notebooks/teaching.toml, as in its header cell), in order; then the toctree, the teachers' page last."""
    lines = [f"# {course}", "", INTRO.format(count=len(entries)), ""]
    for e in entries:
        lines += [f"## {e.number} · [{e.title}]({e.stem}.ipynb)", "", e.description, ""]
        if e.teaching:
            lines += [f"**{LEAD}**", "", *objectives_lines(e.teaching), ""]
            lines += [f"**Prerequisites**: {e.prerequisites}", "", time_text(e.teaching), ""]
    given = ", ".join(f"`{k} = {v!r}`" for k, v in params.items())
    lines += [
        "---",
        "",
        f"Built on {datetime.now(UTC):%Y-%m-%d} "
        + (
            f"with the parameters {given}. The numbers quoted in the notebooks' text were written for the "
            "notebooks' own parameters: with these, the printed outputs and figures may disagree with them."
            if params
            else "with each notebook's own parameters."
        ),
        "",
        "```{toctree}",
        ":hidden:",
        ":maxdepth: 1",
        "",
        *[e.stem for e in entries],
        TEACHERS,
        "```",
        "",
    ]
    (folder / "index.md").write_text("\n".join(lines), encoding="utf-8")


TEACHERS = "teachers"  # the teachers' page: the README's section "For teachers"


def teachers_page(readme: str) -> str:
    """The site's page for teachers: the README's section "## For teachers", its subsections one level up, links to
    notebooks pointing at their pages, and links to other files of the course (not on the site) left as their text."""
    text = section(readme, "For teachers")
    text = re.sub(r"^###", "##", text, flags=re.M)
    text = re.sub(r"\]\(notebooks/(\d\d_[a-z0-9_]+\.ipynb)\)", r"](\1)", text)
    text = re.sub(r"\[([^\]]+)\]\((?!https?://|\d\d_[a-z0-9_]+\.ipynb\))[^)]*\)", r"\1", text)
    return f"# For teachers\n\n{text}\n"


INTRO = """\
{count} notebooks, one idea each, in order. Each page shows a notebook as it ran, with its figures; its slider \
panels move on the page too, over a grid of values computed when the site was built. To run the code yourself, \
open the course in JupyterLab (`make lab` in the course's folder). Teaching this course to a class: \
[For teachers](teachers.md)."""


PARAMS_BANNER = """\
:::{{admonition}} Built with other parameters
:class: warning
This site was built with {given}. The numbers in the text below were written for the notebook's own parameters, so
they may not match the printed outputs and figures.
:::"""


def write_sources(folder: Path, entries: list[Notebook], params: dict[str, object], course: str) -> dict[str, str]:
    """build/sphinx: the prepared notebooks, the course map and _static, anew. Returns the figures' alt texts."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "_static").mkdir(parents=True)
    install_assets(folder / "_static")
    alts = {}
    for entry in entries:
        nb = prepare(entry)
        alts.update(figure_alts(nb))
        mine = {k: v for k, v in params.items() if k in entry.params}
        if mine:
            given = ", ".join(f"`{k} = {v!r}`" for k, v in mine.items())
            banner = nbformat.v4.new_markdown_cell(PARAMS_BANNER.format(given=given))
            nb.cells.insert(2, banner)
        nbformat.write(nb, folder / entry.source.name)
    write_index(folder, entries, params, course)
    (folder / f"{TEACHERS}.md").write_text(teachers_page(README.read_text(encoding="utf-8")), encoding="utf-8")
    return alts


def sphinx_command(source: Path, target: Path, doctrees: Path) -> list[str]:
    """The command that renders the site (the build's, and the offline test's)."""
    # -j auto: one process per core reads and writes the pages (every extension used says it is safe in parallel).
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "auto"]
    return command + ["-c", str(SITE_SRC), "-d", str(doctrees), str(source), str(target)]


def sphinx_build(source: Path, target: Path, course: str) -> list[str]:
    """Render the site with Sphinx; returns its warnings. Exits if Sphinx fails."""
    env = {**os.environ, "ATTN_COURSE_TITLE": course, "ATTN_COURSE_STATIC": str(source / "_static")}
    result = subprocess.run(sphinx_command(source, target, DOCTREES), env=env, capture_output=True, text=True)
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    if result.returncode != 0:
        raise SystemExit("sphinx-build failed:\n" + "\n".join(warnings[-30:]))
    return warnings


def remote_loads(page: str) -> list[str]:
    """Absolute http(s) URLs that a page's script, link, img, iframe or CSS would load (not plain links)."""
    found = re.findall(r"<(?:script|img|iframe|source|link)\b[^>]*?\b(?:src|href)=[\"'](https?://[^\"']+)", page)
    found = [url for url in found if not re.search(r"<link\b[^>]*rel=\"(?:canonical|alternate)", url)]
    found += re.findall(r"@import\s+(?:url\()?[\"']?(https?://[^\"')]+)", page)
    found += re.findall(r"import\([\"'](https?://[^\"']+)", page)
    return sorted(set(found))


def drop_source_maps(static: Path) -> float:
    """Remove the themes' source maps (``*.map``: what a developer's debugger reads, never a reader's browser) and
    the comments that name them; returns the megabytes saved."""
    saved = 0
    for path in static.rglob("*.map"):
        saved += path.stat().st_size
        path.unlink()
    for path in [*static.rglob("*.js"), *static.rglob("*.css")]:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        stripped = SOURCE_MAP.sub("", text)
        if stripped != text:
            path.write_text(stripped, encoding="utf-8", errors="surrogateescape")
    return saved / 1e6


def over_budget(site: Path) -> list[str]:
    """The site's size against its budgets: at most SITE_BUDGET_MB in all and PAGE_BUDGET_MB for any page."""
    problems = [
        f"{page.name} is {page.stat().st_size / 1e6:.1f} MB, over the {PAGE_BUDGET_MB} MB a page may take"
        for page in sorted(site.glob("*.html"))
        if page.stat().st_size > PAGE_BUDGET_MB * 1e6
    ]
    if size_mb(site) > SITE_BUDGET_MB:
        problems.append(f"the site is {size_mb(site):.1f} MB, over its budget of {SITE_BUDGET_MB} MB")
    return problems


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def course_title() -> str:
    """The README's first heading (the course's name)."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return "Attention course"


# --------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="", help='papermill options for every notebook, e.g. "-p SEED 1"')
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="notebooks run at once")
    parser.add_argument("--force", action="store_true", help="re-execute every notebook, even unchanged ones")
    args = parser.parse_args(argv)
    start = time.perf_counter()

    paths = course_notebooks()
    if not paths:
        print(f"no notebooks matching {NOTEBOOKS.relative_to(ROOT)}/NN_topic.ipynb")
        return 1
    entries = [read_header(p) for p in paths]
    try:
        params = parse_params(args.params)
    except ValueError as exc:
        print(f"--params: {exc}")
        return 2
    known = set().union(*(e.params for e in entries))
    unknown = sorted(set(params) - known)
    if unknown:
        print(
            f"--params: no notebook has a parameter named {', '.join(unknown)}; "
            f"the parameters cells define {', '.join(sorted(known))}"
        )
        return 2
    for name in params:
        users = [e.number for e in entries if name in e.params]
        print(f"parameter {name} = {params[name]!r} in notebook(s) {', '.join(users)}")

    print(f"{len(entries)} notebooks: executing into {EXECUTED.relative_to(ROOT)}/")
    # npm ci, mostly waiting on the disk, runs while the kernels compute; its failure is raised below.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as installer:
        scripts = installer.submit(npm_install)
        errors, times = execute_all(entries, params, max(1, args.jobs), args.force)
        scripts.result()
    executed_seconds = time.perf_counter() - start
    missing = [e for e in entries if not executed(e).exists()]
    if missing:
        for name, error in errors.items():
            print(f"ERROR: {name}: {error}")
        print(f"not rendered: {', '.join(e.source.name for e in missing)} did not run")
        return 1

    # Render into a fresh folder, then swap it in: the site never mixes old and new pages.
    course = course_title()
    alts = write_sources(SOURCES, entries, params, course)
    staging = BUILD / "site.partial"
    shutil.rmtree(staging, ignore_errors=True)
    warnings = sphinx_build(SOURCES, staging, course)
    problems = [f"sphinx: {line}" for line in warnings]
    problems += [f"no alt text for {image}" for image in write_alts(staging, alts)]
    for entry in entries:  # the download button gives the course notebook itself, live sliders and all
        shutil.copy2(entry.source, staging / "_sources" / entry.source.name)
    for page in sorted(staging.glob("*.html")):
        problems += [f"{page.name} loads {url}" for url in remote_loads(page.read_text(encoding="utf-8"))]
    drop_source_maps(staging / "_static")
    problems += over_budget(staging)
    shutil.rmtree(SITE, ignore_errors=True)
    staging.rename(SITE)

    total = time.perf_counter() - start
    print("seconds per notebook:")
    for entry in entries:
        print(f"  {entry.stem:<44} {times.get(entry.source.name, 'not run')}")
    print(f"executed in {executed_seconds:.1f} s (with npm ci, when needed, alongside)")
    print(f"rendered {len(entries)} pages and index.html in {total - executed_seconds:.1f} s")
    print(f"site: {SITE / 'index.html'}  ({size_mb(SITE):.1f} MB; open it in a browser or copy the folder)")
    print(f"total {total:.1f} s")
    for problem in problems:
        print(f"WARNING: {problem}")
    return 1 if errors or problems else 0


if __name__ == "__main__":
    sys.exit(main())
