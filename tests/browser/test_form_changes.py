"""The task form in Chromium: lines and fields added, removed and retyped in the page, with the file chosen
still chosen; a long unbroken value kept inside its inbox card on a phone; and a diagram in the narrow
"About" column drawn at a size its text can be read (spec §2.3)."""

from __future__ import annotations

import io
import uuid

from django.core.management import call_command
from playwright.sync_api import expect

from runs.models import Run
from runs.tools import call_tool
from tests.browser.conftest import screenshot, sign_in, wait_for_diagrams
from tests.work.conftest import open_item
from tests.work.test_form_changes import NOTED

# Set on the page's window: still there after a change only if the page never loaded again.
MARK = "() => { window.sameDocument = 'yes'; }"
SAME_DOCUMENT = "() => window.sameDocument === 'yes'"


def noted_item(publish, make_person, inputs=None) -> tuple[object, str]:
    publish(NOTED)
    writer = make_person("writer@example.com")
    view = call_tool(writer, "start_run", {"process": "noted", "inputs": inputs or {"title": "Q3"},
                                           "requestId": str(uuid.uuid4())})
    return writer, f"/inbox/{open_item(view)['id']}/"


def test_a_chosen_file_is_still_chosen_after_fields_are_added_retyped_and_removed(publish, make_person, new_page):
    writer, url = noted_item(publish, make_person)
    page = new_page()
    sign_in(page, writer)
    page.goto(url)
    page.evaluate(MARK)
    files = page.locator("#evidence-files")
    files.set_input_files(files=[{"name": "receipt.pdf", "mimeType": "application/pdf", "buffer": b"%PDF receipt"}])
    page.get_by_label("Notes").fill("Two receipts")
    page.get_by_label("Field 1 name").fill("vendor")
    page.get_by_label("vendor", exact=True).fill("ACME")

    page.get_by_role("button", name="Add a field to Details").click()
    expect(page.get_by_label("Field 2 name")).to_be_focused()
    page.get_by_label("Field 2 name").fill("count")
    page.locator("#f-output-details-col-1-kind").select_option(label="Number")
    expect(page.locator("#f-output-details-0-1")).to_have_attribute("type", "number")
    expect(page.locator("#f-output-details-col-1-kind")).to_be_focused()
    page.locator("#f-output-details-0-1").fill("2")
    page.get_by_role("button", name="Add a field to Details").click()
    page.get_by_role("button", name="Remove field 3 of Details").click()
    expect(page.get_by_label("Field 3 name")).to_have_count(0)
    expect(page.get_by_label("vendor", exact=True)).to_have_value("ACME")  # typed before the changes: kept

    assert page.evaluate(SAME_DOCUMENT), "the page loaded again"
    assert files.evaluate("input => [...input.files].map(f => f.name)") == ["receipt.pdf"]
    expect(page.get_by_label("Notes")).to_have_value("Two receipts")
    screenshot(page, "form-fields-changed-in-page")

    page.get_by_label("Summary").fill("Counted")
    page.get_by_role("button", name="Complete task", exact=True).click()
    expect(page.get_by_text("Completed “Write”")).to_be_visible()
    record = Run.objects.get().data["steps"]["write"]
    assert record["output"]["details"] == {"vendor": "ACME", "count": 2}
    assert [e["kind"] for e in record["evidence"]] == ["file"]


def test_lines_are_added_and_removed_without_the_page_loading(publish, make_person, new_page):
    writer, url = noted_item(publish, make_person)
    page = new_page(390, 844)
    sign_in(page, writer)
    page.goto(url)
    page.evaluate(MARK)
    points = page.locator("#field-output-points ol.lines > li")
    page.get_by_label("Points, line 1").fill("1")
    for _ in range(2):
        page.get_by_role("button", name="Add a line to Points").click()
    expect(points).to_have_count(3)
    page.get_by_label("Points, line 3").fill("3")
    page.get_by_role("button", name="Remove line 2 of Points").click()
    expect(points).to_have_count(2)
    expect(page.get_by_label("Points, line 2")).to_have_value("3")
    assert page.evaluate(SAME_DOCUMENT), "the page loaded again"


def test_a_long_unbroken_value_stays_inside_its_inbox_card_on_a_phone(publish, make_person, new_page):
    writer, _url = noted_item(publish, make_person, inputs={"title": "W" * 300})
    page = new_page(390, 844)
    sign_in(page, writer)
    card = page.locator(".work-list > li").first
    expect(card).to_contain_text("Title: WWW")
    outside = card.evaluate("""card => {
      const right = card.getBoundingClientRect().right;
      return [...card.querySelectorAll("*")].filter(e => e.getBoundingClientRect().right > right + 0.5)
        .map(e => e.tagName + " " + e.textContent.slice(0, 40));
    }""")
    assert outside == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "inbox-long-value-390")


WIDE = """---
name: pictured
description: A review whose description carries a wide diagram.
inputs:
  title: string
steps:
  - id: review
    person: reviewers
    approve: Approve when the flow below is followed.
    on_reject: review
    next: done
  - id: done
    finish: reviewed
---

# Pictured

```mermaid
flowchart LR
  draft[Agent drafts the post] --> review{Reviewer approves?}
  review -- yes --> publish[Published on the blog]
  review -- no --> draft
```
"""

# The size the diagram's text is seen at: its font size as drawn, times how much the picture is scaled.
TEXT_PX = """block => {
  const svg = block.querySelector("svg"), label = svg.querySelector(".nodeLabel, text");
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return parseFloat(getComputedStyle(label).fontSize) * scale;
}"""


def test_a_diagram_in_the_about_column_is_drawn_at_a_readable_size(tmp_path, agent, make_person, new_page):
    folder = tmp_path / "pictured"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(WIDE)
    call_command("import_process", str(folder), "--publish", "--bind", "reviewers=reviewers", stdout=io.StringIO())
    reviewer = make_person("reviewer@example.com", groups=["reviewers"])
    view = agent.write("start_run", process="pictured", inputs={"title": "Q3 report"})
    for width in (1280, 390):
        page = new_page(width, 844)
        sign_in(page, reviewer)
        page.goto(f"/inbox/{open_item(view)['id']}/")
        wait_for_diagrams(page)
        block = page.locator("aside pre.mermaid")
        expect(block.locator("svg")).to_have_count(1)
        assert block.evaluate(TEXT_PX) >= 11, width
        # wider than its column at that size: it scrolls in its own box, which the keyboard reaches
        expect(block).to_have_attribute("tabindex", "0")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
        screenshot(page, f"about-diagram-{width}")


def test_without_script_the_redrawn_form_says_the_file_was_kept(publish, make_person, chromium, site):
    writer, url = noted_item(publish, make_person)
    context = chromium.new_context(java_script_enabled=False, base_url=site)
    try:
        page = context.new_page()
        sign_in(page, writer)
        page.goto(url)
        page.locator("#evidence-files").set_input_files(
            files=[{"name": "receipt.pdf", "mimeType": "application/pdf", "buffer": b"%PDF receipt"}])
        page.get_by_role("button", name="Add a field to Details").click()
        expect(page.get_by_label("Field 2 name")).to_be_visible()
        expect(page.get_by_role("status").filter(has_text="receipt.pdf")).to_contain_text("receipt.pdf was uploaded and is ticked above")
        expect(page.get_by_role("checkbox", name="receipt.pdf")).to_be_checked()
    finally:
        context.close()
