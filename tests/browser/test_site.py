"""The student site that ``make html`` writes to build/site, checked in Debian's chromium as a student would see it.

Each page is opened twice: from a static web server on 127.0.0.1 (what a teacher's host looks like), in light mode,
and straight from disk (the folder handed to students), in dark mode. Every request to another host is blocked and
counted by the ``watched_page`` fixture, so a page that needs the internet fails here. For each page: no console
error, no failed, blocked or 4xx request; every image decoded, shown and described by its alt text; every slider
panel shows its controls and its figure; the formulas typeset, with no raw TeX left in the text; every local link
resolves. Then what a course site needs: the sidebar of all notebooks, the page's table of contents, previous and
next links, a search that works offline, dark mode, copy buttons, the notebook's download, the "run it yourself"
note, solutions closed until clicked, no launch buttons, and an accessibility audit (axe-core) with no serious or
critical finding. Screenshots, light and dark, go to build/screenshots/site/ for a person to look at.
"""

import functools
import html
import json
import re
import shutil
import threading
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from attn_course.widgets.frames import MAX_FRAMES

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SCREENSHOTS = ROOT / "build" / "screenshots" / "site"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOK_PAGES = [p.stem + ".html" for p in NOTEBOOKS]
PAGES = ["index.html", *NOTEBOOK_PAGES, "teachers.html"]  # the teachers' page comes last (README, "For teachers")
SPHINX_PAGES = ["search.html"]  # Sphinx's own: the search results
AXE = ROOT / "site" / "node_modules" / "axe-core" / "axe.min.js"
SETTLE_MS = 30_000  # time allowed for MathJax and the widget manager to finish on one page

# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE / 'index.html'} not found: build the site first with `make html`", pytrace=False)
    return SITE


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url(site):
    """build/site served the way any static host serves it, on 127.0.0.1 at a free port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def screenshots(site) -> Path:
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)  # no picture of a page that no longer exists
    SCREENSHOTS.mkdir(parents=True)
    return SCREENSHOTS


# --------------------------------------------------------------------------------------------- in the browser

# For each element that a check names: the page's nearest heading above it, so a person can find it.
WHERE_JS = """
window.__where = (el) => {
  const cell = el.closest('.cell, section, li') || el;
  const id = cell.id ? ` in ${cell.id}` : '';
  for (let node = cell; node; node = node.previousElementSibling) {
    const headings = node.querySelectorAll ? node.querySelectorAll('h1, h2, h3, h4') : [];
    if (headings.length) {
      return `after heading "${headings[headings.length - 1].textContent.replace('¶', '').trim()}"${id}`;
    }
  }
  return `near the top${id}`;
};
"""

IMAGES_JS = """
() => [...document.querySelectorAll('.bd-article img')].map((img, i) => ({
  index: i + 1,
  where: window.__where(img),
  complete: img.complete,
  naturalWidth: img.naturalWidth,
  shown: img.getBoundingClientRect().width > 0 && img.getBoundingClientRect().height > 0,
  alt: img.getAttribute('alt') || '',
  inWidget: !!img.closest('.widget-subarea'),
}))
"""

VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
CONTROL = ".widget-inline-hbox, .widget-inline-vbox, .widget-button, .widget-toggle-buttons"

WIDGETS_JS = f"""
() => [...document.querySelectorAll('{VIEW}')].map((script, i) => {{
  const area = script.previousElementSibling;
  const rendered = !!area && area.classList.contains('widget-subarea') && area.children.length > 0;
  const shown = (el) => el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().height > 0;
  const controls = rendered ? [...area.querySelectorAll('{CONTROL}')] : [];
  const outputs = rendered ? [...area.querySelectorAll('.widget-output')] : [];
  const images = outputs.flatMap((o) => [...o.querySelectorAll('img')]);
  return {{
    index: i + 1,
    where: window.__where(script),
    rendered,
    shown: rendered && shown(area),
    errors: rendered ? [...area.querySelectorAll('.widget-error, .jupyter-widgets-error-widget')].length : 0,
    controls: controls.length,
    hiddenControls: controls.filter((c) => !shown(c)).map((c) => c.className).slice(0, 3),
    labels: controls.map((c) => (c.querySelector('.widget-label') || {{}}).textContent || '').filter(Boolean),
    outputs: outputs.length,
    figures: images.filter((img) => img.complete && img.naturalWidth > 0 && shown(img)).length,
  }};
}})
"""

WIDGETS_RENDERED_JS = f"""
() => [...document.querySelectorAll('{VIEW}')].every((script) => {{
  const area = script.previousElementSibling;
  return area && area.classList.contains('widget-subarea') && area.children.length > 0;
}})
"""

MATH_JS = r"""
() => {
  // the prose only: code cells and their outputs may hold dollar signs that are no formula
  const article = document.querySelector('.bd-article').cloneNode(true);
  article.querySelectorAll('.cell, pre, code, .highlight, script, .MathJax_Preview').forEach((el) => el.remove());
  const text = article.textContent;
  const raw = [];
  for (const pattern of [/\$\$[^]{0,60}/g, /\\\([^]{0,60}/g, /\\\[[^]{0,60}/g, /\$[^$\s][^$\n]{0,60}\$/g]) {
    raw.push(...(text.match(pattern) || []).map((s) => s.replace(/\s+/g, ' ')));
  }
  return {
    raw: raw.slice(0, 5),
    typeset: document.querySelectorAll('.MathJax_CHTML, mjx-container').length,
    errors: [...document.querySelectorAll('.mjx-merror, .MathJax_Error, merror')].map((e) => e.textContent).slice(0, 5),
  };
}
"""


def watch_responses(watched):
    """A 404 is no failed request to the browser; count local 4xx and 5xx answers as problems too."""
    bad = []
    watched.page.on("response", lambda r: r.status >= 400 and bad.append(f"HTTP {r.status}: {r.url}"))
    return bad


def settle(page) -> list[str]:
    """Wait for MathJax to finish typesetting and the widget manager to draw every widget; say what did not."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    late = []
    page.wait_for_load_state("load")
    try:  # only on pages that load MathJax (Sphinx's search page does not)
        if page.evaluate("() => !!document.querySelector('script[src*=\"MathJax.js\"]')"):
            page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.isReady", timeout=SETTLE_MS)
            page.evaluate("() => new Promise((done) => MathJax.Hub.Queue(() => done(true)))")
    except PlaywrightTimeout:
        late.append(f"MathJax did not start within {SETTLE_MS / 1000:.0f} s")
    try:
        page.wait_for_function(WIDGETS_RENDERED_JS, timeout=SETTLE_MS)
    except PlaywrightTimeout:
        late.append(f"the widget manager did not draw every widget within {SETTLE_MS / 1000:.0f} s")
    try:
        page.wait_for_load_state("networkidle", timeout=SETTLE_MS)
    except PlaywrightTimeout:
        late.append(f"the page was still loading after {SETTLE_MS / 1000:.0f} s")
    page.add_script_tag(content=WHERE_JS)
    return late


def page_failures(page) -> list[str]:
    """What a student would see broken on the page: images, slider panels, formulas."""
    failures = []
    for img in page.evaluate(IMAGES_JS):
        if not img["complete"] or img["naturalWidth"] == 0:
            failures.append(f"image {img['index']} {img['where']} is not decoded (naturalWidth 0)")
        elif not img["shown"]:
            failures.append(f"image {img['index']} {img['where']} is not shown (zero size)")
        if not img["inWidget"] and (len(img["alt"]) < 12 or "_images/" in img["alt"]):
            failures.append(f"image {img['index']} {img['where']} has no alt text saying what it shows: {img['alt']!r}")
    for w in page.evaluate(WIDGETS_JS):
        name = f"widget {w['index']} {w['where']}"
        if not w["rendered"]:
            failures.append(f"{name} was not drawn by the widget manager")
            continue
        if not w["shown"]:
            failures.append(f"{name} is not shown (zero size)")
        if w["errors"]:
            failures.append(f"{name} shows an error instead of the widget")
        if w["outputs"]:  # a slider panel: controls above an output area with the figure
            if w["controls"] == 0:
                failures.append(f"{name} is a slider panel without any control")
            if w["hiddenControls"]:
                failures.append(f"{name} has controls that are not shown: {w['hiddenControls']}")
            if w["figures"] == 0:
                failures.append(f"{name} (controls {w['labels']}) shows no figure in its output area")
    math = page.evaluate(MATH_JS)
    failures += [f"raw TeX left in the text: {raw!r}" for raw in math["raw"]]
    failures += [f"MathJax could not typeset: {error!r}" for error in math["errors"]]
    return failures


def source_has_math(name: str) -> bool:
    return bool(re.search(r"\$[^$\s]|\\\(|\\\[", (SITE / name).read_text(encoding="utf-8")))


# What a colour theme changes: contrast, and links told from the text around them by colour alone. The other rules
# (names, labels, structure, alt text) see the same page in light and dark mode, and run once, in light mode.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def accessibility_problems(page, rules: list[str] | None = None) -> list[str]:
    """What axe-core (pinned in site/package.json) finds serious or critical on a settled page, one line each: every
    rule of its default set, or only ``rules``."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} not found: `make html` installs it (npm ci in site/)", pytrace=False)
    page.add_script_tag(path=str(AXE))
    # From disk, axe's preload of the style sheets (XHR, for its CSS-orientation rule) is refused by the browser's
    # file:// origin rules and logged as console errors; its other rules, contrast included, read computed styles.
    options = {"resultTypes": ["violations"], "preload": not page.url.startswith("file:")}
    if rules is not None:
        options["runOnly"] = {"type": "rule", "values": rules}
    result = page.evaluate("options => axe.run(document, options)", options)
    return [
        f"accessibility, {v['impact']}: {v['id']} ({v['help']}) on {len(v['nodes'])} element(s), "
        f"e.g. {v['nodes'][0]['target']}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def check_in_browser(
    watched, url: str, name: str, screenshot: Path | None = None, audit: bool | list[str] = False, then=None
) -> None:
    """Open the page and fail with everything a student would find broken; ``audit`` adds axe-core's audit (True:
    every rule; a list: those rules), and ``then(page)`` more checks on the same page once it is settled (those that
    click or move something, last)."""
    bad_responses = watch_responses(watched)
    watched.page.goto(url)
    failures = settle(watched.page)
    failures += page_failures(watched.page)
    if source_has_math(name) and watched.page.evaluate(MATH_JS)["typeset"] == 0:
        failures.append("the page has formulas but MathJax typeset none")
    if screenshot is not None:  # the whole page, as JPEG: a PNG of a page this long takes seconds to encode
        watched.page.screenshot(path=str(screenshot), full_page=True, type="jpeg", quality=80)
    if audit:
        failures += accessibility_problems(watched.page, None if audit is True else audit)
    if then is not None:
        failures += then(watched.page)
    failures += watched.problems() + bad_responses
    if failures:
        pytest.fail(f"{name} ({url}):\n  " + "\n  ".join(failures), pytrace=False)


@pytest.mark.parametrize("name", PAGES)
def test_page_from_a_static_host(name, site_url, watched_page, screenshots):
    """Served over HTTP from 127.0.0.1, the page is complete, asks no other host for anything, axe-core finds no
    serious or critical accessibility problem in it (light mode; dark mode is audited from disk, below), and every
    control of its slider panels shows the frame drawn for its new value (``slider_failures``)."""
    shot = screenshots / name.replace(".html", ".jpg")
    check_in_browser(watched_page, urljoin(site_url, name), name, shot, audit=True, then=slider_failures(name))


@pytest.mark.parametrize("name", PAGES)
def test_page_opened_from_disk_in_dark_mode(name, site, watched_page, screenshots):
    """Opened as a file (the site handed out as a folder) by a reader whose system is set to dark, the page is just
    as complete; it is dark, every figure keeps its light card (``dark_failures``) and axe-core's colour rules find
    no serious or critical problem in dark mode (its other rules ran on the light page); each worked solution,
    closed on arrival, opens when its summary is clicked (``solution_failures``). One visit for the three: each page
    load costs seconds of MathJax and widgets."""
    watched_page.page.emulate_media(color_scheme="dark")
    solutions = solution_failures(name)

    def then(page) -> list[str]:
        failures = dark_failures(name, page)
        page.screenshot(path=str(screenshots / name.replace(".html", "-dark.png")), full_page=False)
        return failures + solutions(page)

    check_in_browser(watched_page, (site / name).as_uri(), name, audit=COLOUR_RULES, then=then)


# --------------------------------------------------------------------------------------------- the files


class Anchors(HTMLParser):
    """The hrefs of a page's <a> elements and every id it defines."""

    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href") is not None:
            self.hrefs.append(attrs["href"])


@functools.cache
def anchors(path: Path) -> Anchors:
    parser = Anchors()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def article(name: str) -> str:
    """The page's main content (the article, without the theme's sidebars and header)."""
    page = (SITE / name).read_text(encoding="utf-8")
    found = re.search(r'<article class="bd-article">(.*?)</article>', page, flags=re.S)
    assert found, f'{name}: no <article class="bd-article"> (not a sphinx-book-theme page?)'
    return found.group(1)


def solution_cells(notebook: Path) -> list[str]:
    """The cell types of a notebook's cells tagged ``solution``, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [c["cell_type"] for c in cells if "solution" in c.get("metadata", {}).get("tags", [])]


def test_site_has_one_page_per_notebook_and_no_other(site):
    pages = sorted(p.name for p in site.glob("*.html"))
    assert pages == sorted(PAGES + SPHINX_PAGES), (
        f"build/site has {pages}, the notebooks make {sorted(PAGES)} (and Sphinx {SPHINX_PAGES}): "
        "a missing page was not rendered, an extra one is left from an old build"
    )


@pytest.mark.parametrize("name", PAGES + SPHINX_PAGES)
def test_local_links_resolve(name, site):
    """Every link to a page of the site leads to a file that exists, and to an anchor that exists there."""
    broken = []
    base = (site / name).as_uri()
    for href in anchors(site / name).hrefs:
        parts = urlsplit(urljoin(base, href))
        if parts.scheme != "file":
            continue  # a link out (papers, documentation): followed by the student, not requested by the page
        target = Path(unquote(parts.path))
        if site.resolve() not in target.resolve().parents:
            broken.append(f"{href!r} leads out of the site folder")
        elif not target.is_file():
            broken.append(f"{href!r}: no file {target.relative_to(site)} in the site")
        elif parts.fragment and target.suffix == ".html":
            if not {parts.fragment, unquote(parts.fragment)} & anchors(target).ids:
                broken.append(f"{href!r}: {target.name} has no element with id {unquote(parts.fragment)!r}")
    assert not broken, f"{name}: broken links:\n  " + "\n  ".join(broken)


@pytest.mark.parametrize("name", PAGES)
def test_sidebar_lists_every_notebook_in_order(name, site):
    page = (site / name).read_text(encoding="utf-8")
    nav = re.search(r'<nav class="bd-links bd-docs-nav"[^>]*>(.*?)</nav>', page, flags=re.S)
    assert nav, f"{name}: no sidebar (nav.bd-docs-nav)"
    hrefs = [name if h == "#" else h for h in re.findall(r'href="([^"]*)"', nav.group(1))]  # "#": this page
    listed = [h for h in dict.fromkeys(hrefs) if re.match(r"\d\d_", h)]
    assert listed == NOTEBOOK_PAGES, f"{name}: the sidebar links {listed}, expected every notebook in order"


@pytest.mark.parametrize("index", range(len(PAGES)), ids=PAGES)
def test_previous_and_next_links(index, site):
    """The course reads as a book: index, 01, 02, ... each page links the one before and the one after."""
    name = PAGES[index]
    page = (site / name).read_text(encoding="utf-8")
    prev = re.search(r'<a class="left-prev"\s+href="([^"]+)"', page)
    nxt = re.search(r'<a class="right-next"\s+href="([^"]+)"', page)
    assert (prev.group(1) if prev else None) == (PAGES[index - 1] if index > 0 else None), f"{name}: previous link"
    assert (nxt.group(1) if nxt else None) == (PAGES[index + 1] if index + 1 < len(PAGES) else None), f"{name}: next"


@pytest.mark.parametrize("name", NOTEBOOK_PAGES)
def test_page_has_its_table_of_contents(name, site):
    """The right-hand table of contents lists the page's numbered sections, and each entry leads to one."""
    page = (site / name).read_text(encoding="utf-8")
    toc = re.search(r'<nav id="pst-page-toc-nav"[^>]*>(.*?)</nav>', page, flags=re.S)
    assert toc, f"{name}: no table of contents of the page"
    targets = re.findall(r'href="#([^"]+)"', toc.group(1))
    sections = re.findall(r'<section id="([^"]+)">\s*<h2>', page)
    assert len(targets) >= 3 and set(sections) <= set(targets), (
        f"{name}: the page's contents link {targets}, its sections are {sections}"
    )
    assert set(targets) <= anchors(site / name).ids


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_download_button_gives_the_notebook(notebook, site):
    """The download button offers the .ipynb, and it is the course notebook with its code and outputs."""
    name = notebook.stem + ".html"
    page = (site / name).read_text(encoding="utf-8")
    link = re.search(r'<a href="([^"]+\.ipynb)"[^>]*btn-download-source-button', page, flags=re.S)
    assert link, f"{name}: no download button for the notebook"
    downloaded = json.loads((site / link.group(1)).read_text(encoding="utf-8"))
    course = json.loads(notebook.read_text(encoding="utf-8"))

    def code(nb):
        return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]

    assert code(downloaded) == code(course), f"{name}: the downloaded notebook's code differs from {notebook.name}"
    assert any(c.get("outputs") for c in downloaded["cells"] if c["cell_type"] == "code"), "outputs are missing"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_run_it_yourself_note_and_no_launch_buttons(notebook, site):
    text = article(notebook.stem + ".html")
    seen = squeezed(text)
    assert "Runityourself" in seen and "makelab" in seen and f"notebooks/{notebook.name}" in seen
    page = (site / (notebook.stem + ".html")).read_text(encoding="utf-8")
    for launcher in ("launch-buttons", "mybinder", "colab.research", "thebe", "jupyterhub"):
        assert launcher not in page, f"{notebook.stem}.html offers {launcher}, which the course does not set up"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_solution_is_a_closed_dropdown(notebook, site):
    """Each cell tagged ``solution`` is on the page inside a <details> element that is closed."""
    text = article(notebook.stem + ".html")
    dropdowns = re.findall(r"<details\b[^>]*>\s*<summary[^>]*>(.*?)</summary>", text, flags=re.S)
    solutions = [d for d in dropdowns if "solution" in d.lower()]
    assert len(solutions) == len(solution_cells(notebook)), (
        f"{notebook.stem}.html: {len(solutions)} solution dropdowns, its notebook has "
        f"{len(solution_cells(notebook))} solution cells"
    )
    assert not re.search(r"<details\b[^>]*\bopen\b", text), f"{notebook.stem}.html: a dropdown is open on arrival"


def solution_failures(name: str):
    """Checks for a settled page: each worked solution is a closed <details> that opens when its summary is clicked."""

    def check(page) -> list[str]:
        notebook = ROOT / "notebooks" / name.replace(".html", ".ipynb")
        wanted = len(solution_cells(notebook)) if notebook.is_file() else 0
        details = page.locator(".bd-article details").filter(has_text=re.compile("solution", re.I))
        if details.count() != wanted:
            return [f"{details.count()} solution dropdowns on the page, its notebook has {wanted} solution cells"]
        failures = []
        for i in range(details.count()):
            one = details.nth(i)
            if one.evaluate("d => d.open"):
                failures.append(f"solution {i + 1} is open before any click")
                continue
            one.locator("summary").first.click()
            if not one.evaluate("d => d.open"):
                failures.append(f"solution {i + 1} did not open when clicked")
        return failures

    return check


def test_search_works_offline(site_url, watched_page):
    """Sphinx's search runs in the page from its own index: "positional encoding" finds notebook 06."""
    page = watched_page.page
    page.goto(urljoin(site_url, "search.html?q=positional+encoding"))
    page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0", timeout=SETTLE_MS)
    found = page.eval_on_selector_all("#search-results li a", "links => links.map((a) => a.getAttribute('href'))")
    assert any(href.startswith("06_") for href in found), f"the search for 'positional encoding' found {found}"
    assert not watched_page.problems(), watched_page.problems()


def test_copy_button_on_every_code_cell(site, watched_page):
    page = watched_page.page
    page.goto((site / NOTEBOOK_PAGES[0]).as_uri())
    page.wait_for_load_state("load")
    cells = page.locator(".cell_input pre").count()
    buttons = page.locator(".cell_input .copybtn").count()
    assert cells > 5 and buttons == cells, f"{NOTEBOOK_PAGES[0]}: {cells} code cells, {buttons} copy buttons"


def dark_failures(name: str, page) -> list[str]:
    """In dark mode the page is dark and every figure (drawn on white) keeps a light card behind it."""
    theme = page.evaluate("() => document.documentElement.dataset.theme")
    if theme != "dark":
        return [f"the page ignores the reader's dark setting (data-theme={theme!r})"]
    failures = []
    body = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    if _luminance(body) >= 0.2:
        failures.append(f"dark mode, but the page's background is {body}")
    backgrounds = page.eval_on_selector_all(
        ".bd-article .cell_output img", "imgs => imgs.map((i) => getComputedStyle(i).backgroundColor)"
    )
    light = [b for b in backgrounds if _luminance(b) > 0.75]
    if len(light) != len(backgrounds):
        failures.append(f"figures on a dark background: {backgrounds}")
    return failures


def _luminance(css: str) -> float:
    """0 (black) to 1 (white) for a CSS rgb()/rgba() colour; a transparent colour counts as 0."""
    values = [float(v) for v in re.findall(r"[\d.]+", css)]
    if len(values) == 4 and values[3] == 0:
        return 0.0
    r, g, b = (v / 255 for v in values[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("name", SPHINX_PAGES)
def test_accessibility_audit_of_sphinx_pages(name, mode, site, browser):
    """Sphinx's own pages (the search results) pass axe-core's audit too, in light and in dark mode; the course's
    pages are audited where they are opened above."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=mode)
    try:
        page = context.new_page()
        page.goto((site / name).as_uri())
        settle(page)
        bad = accessibility_problems(page)
    finally:
        context.close()
    assert not bad, f"{name} ({mode}):\n  " + "\n  ".join(bad)


def header_cell(page: str) -> str:
    """The markdown of a notebook's header cell (the one with the '# NN · Title' heading)."""
    nb = json.loads((ROOT / "notebooks" / page.replace(".html", ".ipynb")).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^# ", source, re.M):
            return source
    raise AssertionError(f"{page}: its notebook has no '# ' heading")


SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def squeezed(text: str) -> str:
    """Text without tags, markdown marks and white space: what a reader sees, letter by letter (Sphinx's
    smartquotes turn ' and " into curly quotes; they count as the straight ones)."""
    return re.sub(r"\s+|[*`]", "", html.unescape(re.sub(r"<[^>]+>", "", text))).translate(SMART_QUOTES)


def test_index_is_the_course_map_in_order(site):
    """index.html lists every notebook in order with its motivation, all its objectives and its prerequisites."""
    index = article("index.html")
    sections = re.split(r'<section id="[^"]*">\s*(?:<span id="[^"]*"></span>)?<h2>', index)[1:]
    linked = [re.search(r'href="(\d\d_[a-z0-9_]+\.html)"', s).group(1) for s in sections]
    assert linked == NOTEBOOK_PAGES, f"index.html's sections link {linked}, expected every notebook page in order"
    for page, entry in zip(NOTEBOOK_PAGES, sections, strict=True):
        header = header_cell(page)
        number = page[:2]
        assert re.search(r"</h2>\s*<p>\S", entry), f"index.html: notebook {number} has no description"
        objectives = re.search(
            r"After this notebook you will be able to</strong></p>\s*<ol[^>]*>(.*?)</ol>", entry, re.S
        )
        expected = len(re.findall(r"^\d+\.\s", header.split("**After this notebook you will be able to**")[-1], re.M))
        found = objectives.group(1).count("<li>") if objectives else 0
        assert found == expected > 0, f"index.html: notebook {number} lists {found} objectives, its header {expected}"
        prerequisites = re.search(r"\*\*Prerequisites\*\*:?(.*?)(?:\n\s*\n|$)", header, re.S)
        if prerequisites:  # the whole paragraph, also when it runs over several lines
            last_words = " ".join(prerequisites.group(1).split()[-3:])
            assert squeezed(last_words) in squeezed(entry), (
                f"index.html: notebook {number}'s prerequisites lack {last_words!r}"
            )


# --------------------------------------------------------------------------------------------- sliders on the page

# Every slider panel of the site is a grid of frames (attn_course/widgets/frames.py): images in nested Stacks, switched
# by controls through jslink. In the page, move one control one step, wait for one animation frame, and report the
# frame shown before and after: its place in the grid (class attn-frame-i-j) and whether its bytes hash to what
# Python recorded (class attn-sha-<16 hex>).
FRAMES_JS = """
async ([panelIndex, controlIndex]) => {
  const panel = document.querySelectorAll('.attn-frames-panel')[panelIndex];
  const shown = () => [...panel.querySelectorAll('img.attn-frame')].filter((img) => img.offsetParent !== null);
  const describe = async (img) => {
    const place = [...img.classList].find((c) => c.startsWith('attn-frame-')).slice('attn-frame-'.length);
    const sha = [...img.classList].find((c) => c.startsWith('attn-sha-')).slice('attn-sha-'.length);
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const digest = [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))]
      .map((b) => b.toString(16).padStart(2, '0')).join('').slice(0, 16);
    return {place: place.split('-').map(Number), hashMatches: digest === sha, decoded: img.naturalWidth > 0};
  };
  const controls = [...panel.querySelectorAll('.widget-hslider, .widget-dropdown, .widget-toggle-buttons')];
  const control = controls[controlIndex];
  const before = shown();
  if (before.length !== 1) return {error: `${before.length} frames shown before the move, not 1`};
  const first = await describe(before[0]);
  const position = first.place[controlIndex];
  if (control.classList.contains('widget-hslider')) {
    const handle = control.querySelector('.noUi-handle');
    const key = position === 0 ? 'ArrowRight' : 'ArrowLeft';
    handle.dispatchEvent(new KeyboardEvent('keydown', {key, keyCode: key === 'ArrowRight' ? 39 : 37, bubbles: true}));
  } else if (control.classList.contains('widget-dropdown')) {
    const select = control.querySelector('select');
    select.selectedIndex = position === 0 ? 1 : 0;
    select.dispatchEvent(new Event('change', {bubbles: true}));
  } else {
    const buttons = control.querySelectorAll('button');
    buttons[position === 0 ? 1 : 0].click();
  }
  await new Promise((done) => requestAnimationFrame(() => done()));
  const after = shown();
  if (after.length !== 1) return {error: `${after.length} frames shown one animation frame after the move, not 1`};
  return {controls: controls.length, before: first, after: await describe(after[0])};
}
"""


def frame_panels(name: str) -> int:
    """How many static slider panels a page holds (from its widget state)."""
    return (SITE / name).read_text(encoding="utf-8").count('"attn-frames-panel"')


def test_every_slider_panel_is_a_grid_of_frames(site):
    """Each live slider panel of a notebook became a static panel on its page, of at most MAX_FRAMES frames."""
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        live = sum(
            1
            for c in cells
            if c["cell_type"] == "code" and re.search(r"^[^#\n]*\bslider_panel\(", "".join(c["source"]), re.M)
        )
        name = notebook.stem + ".html"
        assert frame_panels(name) == live, f"{name}: {frame_panels(name)} static panels, its notebook has {live}"
        page = (site / name).read_text(encoding="utf-8")
        for count in re.findall(r"figure moves over (\d+) pictures", page):
            assert 2 <= int(count) <= MAX_FRAMES, f"{name}: a panel of {count} frames, more than {MAX_FRAMES}"


def slider_failures(name: str):
    """Checks for a settled page: moving any control of any slider panel shows, within one animation frame, the frame
    Python drew for the new values."""

    def check(page) -> list[str]:
        failures = []
        for panel in range(frame_panels(name)):
            control, count = 0, 1
            while control < count:
                result = page.evaluate(FRAMES_JS, [panel, control])
                where = f"slider panel {panel + 1}, control {control + 1}"
                if "error" in result:
                    failures.append(f"{where}: {result['error']}")
                    break
                count = result["controls"]
                before, after = result["before"]["place"], result["after"]["place"]
                moved = [k for k in range(len(before)) if before[k] != after[k]]
                if moved != [control]:
                    failures.append(
                        f"{where}: the frame went from {before} to {after}, not along control {control + 1}"
                    )
                if not (result["after"]["hashMatches"] and result["after"]["decoded"]):
                    failures.append(f"{where}: the frame shown for {after} is not the image Python drew for it")
                control += 1
        return failures

    return check
