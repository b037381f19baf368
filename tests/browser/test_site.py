"""The student site that ``make html`` writes to build/site, checked in Debian's chromium as a student would see it.

Each page is opened twice: from a static web server on 127.0.0.1 (what a teacher's host looks like) and straight
from disk (the folder handed to students). Every request to another host is blocked and counted by the
``watched_page`` fixture, so a page that needs the internet fails here. For each page: no console error, no
failed, blocked or 4xx request; every image decoded and shown; every slider panel shows its controls and its
figure; the formulas typeset, with no raw TeX left in the text; every local link resolves. A full-page screenshot
of each page goes to build/screenshots/site/ for a person to look at.
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

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SCREENSHOTS = ROOT / "build" / "screenshots" / "site"
NOTEBOOK_PAGES = [p.stem + ".html" for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
PAGES = ["index.html", *NOTEBOOK_PAGES]
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
  const cell = el.closest('.jp-Cell, li') || el;
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
() => [...document.images].map((img, i) => ({
  index: i + 1,
  where: window.__where(img),
  complete: img.complete,
  naturalWidth: img.naturalWidth,
  shown: img.getBoundingClientRect().width > 0 && img.getBoundingClientRect().height > 0,
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
  const blocks = [...document.querySelectorAll('.jp-RenderedMarkdown, .course-map, header')];
  const text = blocks.map((b) => b.innerText).join('\n');
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
    try:
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


def check_in_browser(watched, url: str, name: str, screenshot: Path | None = None) -> None:
    bad_responses = watch_responses(watched)
    watched.page.goto(url)
    failures = settle(watched.page)
    failures += page_failures(watched.page)
    if source_has_math(name) and watched.page.evaluate(MATH_JS)["typeset"] == 0:
        failures.append("the page has formulas but MathJax typeset none")
    if screenshot is not None:
        watched.page.screenshot(path=str(screenshot), full_page=True)
    failures += watched.problems() + bad_responses
    if failures:
        pytest.fail(f"{name} ({url}):\n  " + "\n  ".join(failures), pytrace=False)


@pytest.mark.parametrize("name", PAGES)
def test_page_from_a_static_host(name, site_url, watched_page, screenshots):
    """Served over HTTP from 127.0.0.1, the page is complete and asks no other host for anything."""
    check_in_browser(watched_page, urljoin(site_url, name), name, screenshots / name.replace(".html", ".png"))


@pytest.mark.parametrize("name", PAGES)
def test_page_opened_from_disk(name, site, watched_page):
    """Opened as a file (the site handed out as a folder), the page is just as complete."""
    check_in_browser(watched_page, (site / name).as_uri(), name)


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


def nav_links(name: str) -> list[list[str]]:
    """The hrefs of each prev | contents | next bar of a notebook page (the cells tagged ``nav``)."""
    page = (SITE / name).read_text(encoding="utf-8")
    bars = re.findall(r'<div class="[^"]*celltag_nav[^"]*"[^>]*>(.*?)</div>', page, flags=re.S)
    return [re.findall(r'href="([^"]*)"', bar) for bar in bars]


def test_site_has_one_page_per_notebook_and_no_other(site):
    pages = sorted(p.name for p in site.glob("*.html"))
    assert pages == sorted(PAGES), (
        f"build/site has {pages}, the notebooks make {sorted(PAGES)}: "
        "a missing page was not rendered, an extra one is left from an old build"
    )


@pytest.mark.parametrize("name", PAGES)
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
            # a browser looks the fragment up as written, then percent-decoded (nbconvert's ids stay encoded)
            if not {parts.fragment, unquote(parts.fragment)} & anchors(target).ids:
                broken.append(f"{href!r}: {target.name} has no element with id {unquote(parts.fragment)!r}")
    assert not broken, f"{name}: broken links:\n  " + "\n  ".join(broken)


@pytest.mark.parametrize("index", range(len(NOTEBOOK_PAGES)), ids=NOTEBOOK_PAGES)
def test_prev_contents_next_bars(index, site):
    """At the top and the bottom of each notebook page: previous page, index.html, next page, in the site."""
    name = NOTEBOOK_PAGES[index]
    expected = (
        ([NOTEBOOK_PAGES[index - 1]] if index > 0 else [])
        + ["index.html"]
        + ([NOTEBOOK_PAGES[index + 1]] if index + 1 < len(NOTEBOOK_PAGES) else [])
    )
    assert nav_links(name) == [expected, expected], f"{name}: the prev | contents | next bars should link {expected}"


def header_cell(page: str) -> str:
    """The markdown of a notebook's header cell (the one with the '# NN · Title' heading)."""
    nb = json.loads((ROOT / "notebooks" / page.replace(".html", ".ipynb")).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^# ", source, re.M):
            return source
    raise AssertionError(f"{page}: its notebook has no '# ' heading")


def squeezed(text: str) -> str:
    """Text without tags, markdown marks and white space: what a reader sees, letter by letter."""
    return re.sub(r"\s+|[*`]", "", html.unescape(re.sub(r"<[^>]+>", "", text)))


def test_index_is_the_course_map_in_order(site):
    """index.html lists every notebook in order with its motivation, all its objectives and its prerequisites."""
    index = (site / "index.html").read_text(encoding="utf-8")
    listed = list(dict.fromkeys(re.findall(r'href="(\d\d_[a-z0-9_]+\.html)"', index)))
    assert listed == NOTEBOOK_PAGES, f"index.html links {listed}, expected every notebook page in order"
    chunks = re.split(r'<li id="notebook-(\d\d)">', index)[1:]
    entries = list(zip(chunks[::2], chunks[1::2], strict=True))
    assert [number for number, _ in entries] == [name[:2] for name in NOTEBOOK_PAGES]
    for page, (number, entry) in zip(NOTEBOOK_PAGES, entries, strict=True):
        header = header_cell(page)
        assert re.search(r'class="description">\s*<p>\S', entry), f"index.html: notebook {number} has no description"
        objectives = re.search(r'<ol class="objectives">(.*?)</ol>', entry, re.S)
        expected = len(re.findall(r"^\d+\.\s", header.split("**You will learn to**")[-1], re.M))
        found = objectives.group(1).count("<li>") if objectives else 0
        assert found == expected > 0, f"index.html: notebook {number} lists {found} objectives, its header {expected}"
        prerequisites = re.search(r"\*\*Prerequisites\*\*:?(.*?)(?:\n\s*\n|$)", header, re.S)
        if prerequisites:  # the whole paragraph, also when it runs over several lines
            last_words = " ".join(prerequisites.group(1).split()[-3:])
            assert squeezed(last_words) in squeezed(entry), (
                f"index.html: notebook {number}'s prerequisites lack {last_words!r}"
            )
