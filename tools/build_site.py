#!/usr/bin/env python3
"""Build the student site: execute every course notebook with papermill, render it to HTML, write index.html.

    python tools/build_site.py                          build build/site/ with the notebooks' own parameters
    python tools/build_site.py --params "-p SEED 1"     the same with other values (papermill's -p, -r, -y, -f)
    python tools/build_site.py --cdn                    load the widget manager, require.js and MathJax from CDNs

``make html`` runs the first form (``make html PARAMS="-p SEED 1 -f params.yaml"`` for the second).

What it writes, all under ``build/``:

- ``executed/NN_topic.ipynb``: each notebook as papermill ran it, with the widget state stored. A notebook is
  executed again only when something it depends on changed (its source, the parameters, ``attn_course``, the files
  beside it in ``notebooks/``, the pinned requirements); ``--force`` re-executes them all.
- ``site/``: ``NN_topic.html`` for each notebook (nbconvert's lab template, widget state and images embedded,
  prev | contents | next links pointing at the site), ``index.html`` (the course map) and ``_static/`` (the widget
  manager, require.js and MathJax, copied from the npm packages pinned in ``site/package-lock.json``). The folder
  is built anew each time, so pages of removed notebooks do not linger, and works offline, from any static host
  or opened from disk. Where npm is missing, the pages load those three from public CDNs instead (it says so).

The stored notebooks in ``notebooks/`` are never written.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import jinja2
import nbformat
import yaml
from ipc_kernels import IPCKernelManager

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = ROOT / "attn_course"
SITE_SRC = ROOT / "site"  # npm manifest and lock file, nbconvert template, index template
BUILD = ROOT / "build"
EXECUTED = BUILD / "executed"
SITE = BUILD / "site"
STATIC = "_static"
KERNEL = "attn-course"
NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")
CELL_TIMEOUT = 180  # seconds per cell; a whole course notebook takes well under 30 s, so this means a hang
META = "attn_course_site"  # key of the build's own metadata in the executed notebooks

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
MATHJAX_QUERY = "?config=TeX-AMS_CHTML-full,Safe"  # the configuration nbconvert's lab template is written for
CDN = "https://cdn.jsdelivr.net/npm/"


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


def parse_params(text: str | None) -> dict[str, object]:
    """Parameters from papermill-style options: ``-p NAME VALUE``, ``-r NAME VALUE``, ``-y YAML``, ``-f FILE``.

    Later options win, as in papermill. Raises ``ValueError`` naming whatever it cannot read.
    """
    tokens = shlex.split(text or "")
    params: dict[str, object] = {}
    i = 0
    while i < len(tokens):
        option = tokens[i]
        if option in ("-p", "--parameters", "-r", "--parameters_raw"):
            if i + 2 >= len(tokens):
                raise ValueError(f"{option} needs a NAME and a VALUE, got {' '.join(tokens[i + 1 :]) or 'nothing'}")
            name, raw = tokens[i + 1], tokens[i + 2]
            if not name.isidentifier():
                raise ValueError(f"{option}: parameter name must be a Python name, got {name!r}")
            params[name] = raw if option in ("-r", "--parameters_raw") else _value(raw)
            i += 3
        elif option in ("-f", "--parameters_file", "-y", "--parameters_yaml"):
            if i + 1 >= len(tokens):
                raise ValueError(f"{option} needs a {'FILE' if option in ('-f', '--parameters_file') else 'YAML text'}")
            if option in ("-f", "--parameters_file"):
                path = Path(tokens[i + 1])
                if not path.is_file():
                    raise ValueError(f"{option}: no parameters file {path}")
                loaded, where = yaml.safe_load(path.read_text(encoding="utf-8")), str(path)
            else:
                loaded, where = yaml.safe_load(tokens[i + 1]), "-y"
            if not isinstance(loaded, dict) or not all(isinstance(k, str) and k.isidentifier() for k in loaded):
                raise ValueError(f"{where} must hold a mapping of parameter names to values, got {loaded!r}")
            params.update(loaded)
            i += 2
        else:
            raise ValueError(
                f"cannot read {option!r} in the parameters: use -p NAME VALUE, -r NAME VALUE, -y YAML or -f FILE"
            )
    return params


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
    def executed(self) -> Path:
        return EXECUTED / self.source.name


def course_notebooks() -> list[Path]:
    """The course notebooks in teaching order: ``notebooks/NN_topic.ipynb``."""
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if NAME.match(p.name))


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


def dependency_key(entry: Notebook, params: dict[str, object]) -> str:
    """A digest of everything an execution depends on: same digest, same executed notebook."""
    digest = hashlib.sha256()
    files = [entry.source, ROOT / "requirements.txt", ROOT / "pyproject.toml"]
    files += sorted(PACKAGE.rglob("*.py"))
    files += sorted(
        p for p in NOTEBOOKS.rglob("*") if p.is_file() and p.suffix != ".ipynb" and "checkpoint" not in str(p)
    )
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps(params, sort_keys=True, default=str).encode())
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


RETRY = "kernel failed to start; retried once with a fresh kernel"


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
        if entry.executed.exists() and not force:
            previous = nbformat.read(entry.executed, as_version=4).metadata.get(META, {})
        if previous and previous.get("key") == key:
            times[entry.source.name] = f"{previous['seconds']:6.1f} s  (unchanged: the earlier run's time)"
            print(f"  {entry.stem:<44} unchanged, not re-run")
        else:
            entry.executed.unlink(missing_ok=True)
            todo.append((entry, mine, key))
    if not todo:
        return errors, times
    print(f"executing {len(todo)} notebook(s), {min(jobs, len(todo))} at a time, kernel {KERNEL}")
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
        futures = {pool.submit(execute, str(e.source), str(e.executed), mine, key): (e, mine) for e, mine, key in todo}
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


# --------------------------------------------------------------------------------------------- assets


def install_assets(site: Path, use_cdn: bool) -> dict[str, str]:
    """Put the widget manager, require.js and MathJax in the site; returns the URLs the pages load them from.

    From the npm packages pinned in site/package-lock.json (``npm ci``, skipped while node_modules matches the
    lock file); without npm, or with ``--cdn``, the same versions from a public CDN.
    """
    versions = json.loads((SITE_SRC / "package.json").read_text(encoding="utf-8"))["dependencies"]
    cdn_urls = {
        "require_js_url": f"{CDN}requirejs@{versions['requirejs']}/require.js",
        "mathjax_url": f"{CDN}mathjax@{versions['mathjax']}/MathJax.js{MATHJAX_QUERY}",
        "widget_renderer_url": f"{CDN}@jupyter-widgets/html-manager@{versions['@jupyter-widgets/html-manager']}"
        "/dist/embed-amd.js",
    }
    if use_cdn:
        print("WARNING: --cdn: the pages load the widget manager, require.js and MathJax from " + CDN)
        return cdn_urls
    problem = npm_install()
    if problem:
        print(
            f"WARNING: {problem}.\n"
            f"WARNING: the pages will load the widget manager, require.js and MathJax from {CDN}:\n"
            "WARNING: they need the internet to show sliders and formulas (install Node.js and npm for an "
            "offline site)."
        )
        return cdn_urls
    modules = SITE_SRC / "node_modules"
    for package, patterns in ASSETS.items():
        source, target = modules / package, site / STATIC / package.split("/")[-1]
        for pattern in patterns:
            matches = [p for p in source.glob(pattern) if p.is_file()]
            if not matches:
                raise SystemExit(f"site/node_modules/{package} has no {pattern}: run `npm ci` in site/ again")
            for path in matches:
                dest = target / path.relative_to(source)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
    return {
        "require_js_url": f"{STATIC}/requirejs/require.js",
        "mathjax_url": f"{STATIC}/mathjax/MathJax.js{MATHJAX_QUERY}",
        "widget_renderer_url": f"{STATIC}/html-manager/dist/embed-amd.js",
    }


def npm_install() -> str | None:
    """``npm ci`` in site/ unless node_modules already matches the lock file; returns what went wrong, if anything."""
    lock = SITE_SRC / "package-lock.json"
    stamp = SITE_SRC / "node_modules" / ".installed-from-lock"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return "npm not found"
    print("installing the site's JavaScript (npm ci in site/, versions from site/package-lock.json)")
    start = time.perf_counter()
    result = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=SITE_SRC,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return "npm ci failed in site/:\n" + (result.stderr or result.stdout).strip()[-2000:]
    stamp.write_text(digest + "\n")
    print(f"  npm ci {time.perf_counter() - start:.1f} s")
    return None


# --------------------------------------------------------------------------------------------- rendering


def site_links(source: str, pages: set[str]) -> tuple[str, list[str]]:
    """Markdown with links to notebooks turned into links to their pages, and ../README.md into index.html.

    Returns the new text and the relative links that leave the site (they would be broken).
    """

    def notebook_link(match: re.Match) -> str:
        stem, anchor = match.group(2), match.group(3) or ""
        return f"{match.group(1)}{stem}.html{anchor}"

    text = re.sub(r"(\]\(|href=\")(?:\./)?(\d\d_[a-z0-9_]+)\.ipynb(#[^)\"\s]*)?", notebook_link, source)
    text = re.sub(r"(\]\(|href=\")\.\./README\.md(#[^)\"\s]*)?", r"\1index.html", text)
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)|href=\"([^\"]+)\"", text):
        target = (link[0] or link[1]).split("#")[0]
        if target and not re.match(r"[a-z][a-z0-9+.-]*:", target) and target not in pages:
            broken.append(target)
    return text, broken


def render(entry: Notebook, urls: dict[str, str], pages: set[str], course: str) -> tuple[str, list[str]]:
    """The HTML page of one executed notebook, and the links in it that leave the site."""
    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nbformat.read(entry.executed, as_version=4))
    broken = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source, leaving = site_links(cell.source, pages)
            broken += leaving
    nb.metadata["title"] = f"{entry.number} · {entry.title} · {course}"
    exporter = HTMLExporter(
        template_name="course",
        extra_template_basedirs=[str(SITE_SRC / "templates")],
        embed_images=True,
        **urls,
    )
    resources = {"metadata": {"name": entry.stem}}
    if not urls["widget_renderer_url"].startswith("http"):  # the widget manager's icon fonts, beside it
        resources["widget_assets_path"] = urls["widget_renderer_url"].rsplit("/", 1)[0] + "/"
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body, broken


def course_title() -> str:
    """The README's first heading (the course's name)."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return "Attention course"


def write_index(site: Path, entries: list[Notebook], urls: dict[str, str], params: dict, course: str) -> None:
    """index.html: the course map, each notebook's title, motivation, objectives and prerequisites, in order."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    def md(text: str) -> str:
        return markdown2html_mistune(text)

    def inline(text: str) -> str:  # one paragraph without its <p>
        return re.sub(r"^<p>(.*)</p>\s*$", r"\1", md(text).strip(), flags=re.S)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(SITE_SRC / "templates"), autoescape=jinja2.select_autoescape(["html"])
    )
    page = env.get_template("course_map.html.j2").render(
        course=course,
        notebooks=[
            {
                "number": e.number,
                "title": inline(e.title),
                "page": e.page,
                "description": md(e.description),
                "objectives": [inline(o) for o in e.objectives],
                "prerequisites": inline(e.prerequisites) if e.prerequisites else "",
            }
            for e in entries
        ],
        params=", ".join(f"{k} = {v!r}" for k, v in params.items()),
        built=datetime.now(UTC).strftime("%Y-%m-%d"),
        mathjax_url=urls["mathjax_url"],
    )
    (site / "index.html").write_text(page, encoding="utf-8")


def remote_loads(page: str) -> list[str]:
    """Absolute http(s) URLs that a page's script, link, img, iframe or CSS would load (not plain links)."""
    found = re.findall(r"<(?:script|img|iframe|source|link)\b[^>]*?\b(?:src|href)=[\"'](https?://[^\"']+)", page)
    found += re.findall(r"@import\s+(?:url\()?[\"']?(https?://[^\"')]+)", page)
    found += re.findall(r"import\([\"'](https?://[^\"']+)", page)
    found += re.findall(r"Src\s*=\s*'(https?://[^']+)'", page)  # nbconvert's widget-manager loader
    return sorted(set(found))


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


# --------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="", help='papermill options for every notebook, e.g. "-p SEED 1"')
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="notebooks run at once")
    parser.add_argument("--force", action="store_true", help="re-execute every notebook, even unchanged ones")
    parser.add_argument("--cdn", action="store_true", help="load the page scripts from public CDNs (not offline)")
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
    errors, times = execute_all(entries, params, max(1, args.jobs), args.force)
    executed_seconds = time.perf_counter() - start

    # Render into a fresh folder, then swap it in: the site never mixes old and new pages.
    course = course_title()
    staging = BUILD / "site.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    urls = install_assets(staging, args.cdn)
    pages = {e.page for e in entries} | {"index.html"}
    problems = []
    for entry in entries:
        if not entry.executed.exists():
            problems.append(f"{entry.page}: not rendered, its notebook did not run")
            continue
        body, broken = render(entry, urls, pages, course)
        problems += [f"{entry.page}: link to {target} leads out of the site" for target in broken]
        (staging / entry.page).write_text(body, encoding="utf-8")
    write_index(staging, entries, urls, params, course)
    if urls["mathjax_url"].startswith("http"):
        problems.append(f"the pages load the widget manager, require.js and MathJax from {CDN}: not an offline site")
    else:
        for page in sorted(staging.glob("*.html")):
            problems += [f"{page.name} loads {url}" for url in remote_loads(page.read_text(encoding="utf-8"))]
    shutil.rmtree(SITE, ignore_errors=True)
    staging.rename(SITE)

    total = time.perf_counter() - start
    print("seconds per notebook:")
    for entry in entries:
        print(f"  {entry.stem:<44} {times.get(entry.source.name, 'not run')}")
    print(f"executed in {executed_seconds:.1f} s")
    print(f"rendered {len(entries)} pages and index.html in {total - executed_seconds:.1f} s")
    print(f"site: {SITE / 'index.html'}  ({size_mb(SITE):.1f} MB; open it in a browser or copy the folder)")
    print(f"total {total:.1f} s")
    for problem in problems:
        print(f"WARNING: {problem}")
    for name, error in errors.items():
        print(f"ERROR: {name}: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
