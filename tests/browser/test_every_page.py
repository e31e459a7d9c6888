"""Every people page, in Chromium: no WCAG 2.2 A/AA violation that axe-core finds, and no sideways scroll on a phone."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import screenshot, sign_in, wait_for_diagrams
from tests.browser.pages import people_pages

# Served by the server itself: the pages' policy runs scripts from this server only.
AXE = "/static/vendor/axe-core/axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
PHONE = (390, 844)

RUN_AXE = """async (tags) => {
  const results = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(" "), html: n.html.slice(0, 200), why: n.failureSummary})),
  }));
}"""


def browse_as(new_page, width: int, height: int):
    """Return open(who, url) -> the page showing `url` to `who`, signing each person in once."""
    pages = {}

    def open_page(who, url: str):
        key = getattr(who, "email", None)
        if key not in pages:
            pages[key] = new_page(width, height)
            if who is not None:
                sign_in(pages[key], who)
        page = pages[key]
        page.goto(url)
        wait_for_diagrams(page)
        return page

    return open_page


def shot_name(name: str, width: int) -> str:
    return "page-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + f"-{width}"


def axe_violations(page) -> list[dict]:
    page.add_script_tag(url=AXE)
    return page.evaluate(RUN_AXE, WCAG_TAGS)


def sideways_overflow(page) -> dict | None:
    """Return how the page scrolls sideways, as a whole or in a box of its own, and what sticks out; or None."""
    return page.evaluate("""() => {
      const over = document.documentElement.scrollWidth - window.innerWidth;
      const describe = e => e.tagName.toLowerCase() + (typeof e.className === "string" && e.className.trim()
        ? "." + e.className.trim().split(/\\s+/).join(".") : "") + " " + e.textContent.trim().slice(0, 50);
      const all = [...document.querySelectorAll("body *")];
      // A box that scrolls sideways inside the page hides part of it just the same; only a diagram wider
      // than a phone at a readable size does so, in a box of its own the keyboard scrolls (diagrams.js).
      const diagram = e => e.matches("pre.mermaid.scrolls[tabindex='0']");
      const scrollers = all.filter(e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX)
        && e.scrollWidth > e.clientWidth + 1 && !diagram(e)).map(describe);
      if (over <= 0 && !scrollers.length) return null;
      const wide = all.filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5).map(describe);
      // Text that runs out of a box that itself fits (a long word in a narrow note).
      const spills = all.filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === "visible")
        .map(describe);
      return {over, scrollers, wide: wide.slice(-6), spills: spills.slice(-4)};
    }""")


@pytest.mark.parametrize("width, height", [(1280, 900), PHONE], ids=["desktop", "phone"])
def test_every_people_page_is_clean_under_axe(publish, agent, make_person, new_page, width, height):
    open_page = browse_as(new_page, width, height)
    found = {}
    for name, url, who in people_pages(publish, agent, make_person):
        page = open_page(who, url)
        if width != PHONE[0]:
            screenshot(page, shot_name(name, width))
        violations = axe_violations(page)
        if violations:
            found[f"{name} ({url})"] = violations
    assert not found, "axe-core found WCAG violations:\n" + json.dumps(found, indent=2)


def test_no_people_page_scrolls_sideways_on_a_phone(publish, agent, make_person, new_page):
    open_page = browse_as(new_page, *PHONE)
    found = {}
    for name, url, who in people_pages(publish, agent, make_person):
        page = open_page(who, url)
        screenshot(page, shot_name(name, PHONE[0]))
        overflow = sideways_overflow(page)
        if overflow:
            found[f"{name} ({url})"] = overflow
    assert not found, "pages wider than a 390px phone:\n" + json.dumps(found, indent=2)
