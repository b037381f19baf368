"""Browser fixtures: Debian's chromium, headless, driven by Playwright, with every non-local request blocked.

``watched_page`` yields a :class:`WatchedPage`: a Playwright page plus what went wrong while it was open
(console errors, uncaught exceptions, failed requests, and requests to any host other than this machine,
which are blocked and counted). ``watched.problems()`` lists them; a test asserts it is empty.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path(os.environ.get("ATTN_COURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
LOCAL_SCHEMES = {"file", "data", "blob", "about"}


def is_local(url: str) -> bool:
    """True for file:, data:, blob:, about: URLs and http(s)/ws(s) URLs on this machine."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.hostname in LOCAL_HOSTS


@dataclass
class WatchedPage:
    page: object
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    failed_requests: list = field(default_factory=list)
    blocked_requests: list = field(default_factory=list)

    def forget(self) -> None:
        """Start a new record on the same page (a page that serves several tests in turn)."""
        for seen in (self.console_errors, self.page_errors, self.failed_requests, self.blocked_requests):
            seen.clear()

    def problems(self) -> list[str]:
        """Everything that went wrong so far, one line each (empty when the page was clean)."""
        return (
            [f"console error: {text}" for text in self.console_errors]
            + [f"uncaught exception: {text}" for text in self.page_errors]
            + [f"failed request: {text}" for text in self.failed_requests]
            + [f"blocked request to another host: {url}" for url in self.blocked_requests]
        )


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) "
            "or set ATTN_COURSE_CHROMIUM to a Chromium binary",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_watched_page(browser) -> tuple[object, "WatchedPage"]:
    """A new browser context and page, watched as the module docstring says; the caller closes the context."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watched = WatchedPage(page)

    def route(route_, request):
        if is_local(request.url):
            route_.continue_()
        else:
            watched.blocked_requests.append(request.url)
            route_.abort("blockedbyclient")

    context.route("**/*", route)
    page.on("console", lambda msg: msg.type == "error" and watched.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: watched.page_errors.append(str(exc)))
    page.on(
        "requestfailed",
        lambda req: is_local(req.url) and watched.failed_requests.append(f"{req.url} ({req.failure})"),
    )
    return context, watched


@pytest.fixture
def watched_page(browser):
    context, watched = open_watched_page(browser)
    yield watched
    context.close()


@pytest.fixture(scope="session")
def new_watched_page():
    """``new_watched_page(browser)`` -> (context, WatchedPage), for a fixture that keeps one page for several tests."""
    return open_watched_page
