"""Real headless Chromium against the live server, driven by Playwright (issue 4 §6).

Debian's chromium is launched directly: Playwright's own browser download does not work here.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.db import connections
from playwright.sync_api import expect

from tests.runs import conftest as engine_fixtures

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
# Waits hold on a machine whose cores are busy: every action and every expect() waits up to 30 s.
expect.set_options(timeout=30_000)

# The engine tests' fixtures, shared: people, agents, publishing.
agent = engine_fixtures.agent
make_agent = engine_fixtures.make_agent
make_person = engine_fixtures.make_person
org = engine_fixtures.org
other_org = engine_fixtures.other_org
person_caller = engine_fixtures.person_caller
publish = engine_fixtures.publish


@pytest.fixture
def chromium(site):
    """Start Chromium for one test, after the live server, so it stops before the database is flushed."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()
        # While Playwright's event loop runs, Django keeps this thread's connections in context storage;
        # close those now, or they outlive the test and block dropping the test database.
        connections.close_all()


@pytest.fixture(autouse=True)
def _allow_sync_db_in_browser_tests(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls here are ordinary sync code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def site(live_server, transactional_db):
    """Return the live server's base URL."""
    return live_server.url


@pytest.fixture
def new_page(chromium, site):
    """Return new_page(viewport=…) -> a fresh browser context's page; every context is closed afterwards."""
    contexts = []

    def make(width: int = 1280, height: int = 900):
        context = chromium.new_context(viewport={"width": width, "height": height}, base_url=site)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def sign_in(page, identity) -> None:
    """Sign in through the allauth form as a person made by `make_person` (password `pw-<email>`)."""
    page.goto("/accounts/login/")
    page.get_by_label("Email address").fill(identity.email)
    page.get_by_label("Password").fill(f"pw-{identity.email}")
    page.get_by_role("button", name="Sign in").click()
    wait_path(page, "/inbox/")


def wait_path(page, path: str) -> None:
    """Wait until the page shows `path` (a glob would also match `/accounts/login/?next=<path>`)."""
    page.wait_for_url(lambda url: urlparse(url).path == path)


def wait_for_diagrams(page) -> None:
    """Wait until the page's diagrams are drawn (or left as source), so a check sees the finished page."""
    page.wait_for_function("""() => !document.querySelector("pre.mermaid")
      || document.documentElement.getAttribute('data-diagrams') === 'drawn'""")


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


