"""Pictures on the pages: a process's mermaid diagrams are drawn, and the process map fits a phone."""

from __future__ import annotations

import io

from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, sign_in, wait_for_diagrams
from tests.work.conftest import open_item

DIAGRAMMED = """---
name: diagrammed
description: A review whose description and instructions carry diagrams.
inputs:
  title: string
steps:
  - id: review
    person: reviewers
    approve: |
      Check the flow below before approving.

      ```mermaid
      flowchart TD
        check[Check the draft] --> ok{Fine?}
        ok -- no --> check
      ```
    on_reject: review
    next: done
  - id: done
    finish: reviewed
---

# Diagrammed

```mermaid
flowchart TD
  draft[Agent drafts] --> review{Reviewer approves?}
  review -- yes --> done[Published]
  review -- no --> draft
```

```mermaid
flowchart TD
  this is not -->-->--> a diagram
```
"""


def import_process(tmp_path, text: str) -> None:
    folder = tmp_path / "diagrammed"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(text)
    call_command("import_process", str(folder), "--publish", "--bind", "reviewers=reviewers", stdout=io.StringIO())


def test_mermaid_blocks_are_drawn_on_the_item_run_and_start_pages(tmp_path, agent, make_person, new_page):
    import_process(tmp_path, DIAGRAMMED)
    reviewer = make_person("reviewer@example.com", groups=["reviewers"], operator=True)
    view = agent.write("start_run", process="diagrammed", inputs={"title": "Q3 report"})
    page = new_page()
    sign_in(page, reviewer)
    fetched = []
    page.on("request", lambda request: fetched.append(request.url))
    for url, drawn in ((f"/inbox/{open_item(view)['id']}/", 2), (f"/runs/{view['run']['id']}/", 1),
                       ("/processes/diagrammed/", 1)):
        page.goto(url)
        wait_for_diagrams(page)
        blocks = page.locator("pre.mermaid")
        expect(blocks.locator("svg"), url).to_have_count(drawn)
        # The block that does not parse keeps its source, readable, instead of an error picture.
        broken = blocks.filter(has_text="this is not")
        expect(broken, url).to_have_count(1)
        expect(broken.locator("svg"), url).to_have_count(0)
    screenshot(page, "diagram-start-1280")
    assert any(u.endswith("/static/vendor/mermaid/mermaid.min.js") for u in fetched)
    # A page without a diagram does not fetch Mermaid at all.
    fetched.clear()
    page.goto("/inbox/")
    page.wait_for_load_state("load")
    assert fetched and not any("mermaid" in u for u in fetched)


def test_the_drawn_diagram_shows_the_authors_labels(tmp_path, agent, make_person, new_page):
    import_process(tmp_path, DIAGRAMMED)
    reviewer = make_person("reviewer@example.com", groups=["reviewers"])
    agent.write("start_run", process="diagrammed", inputs={"title": "Q3 report"})
    page = new_page(390, 844)
    sign_in(page, reviewer)
    page.goto("/processes/diagrammed/")
    wait_for_diagrams(page)
    diagram = page.locator("pre.mermaid svg").first
    for label in ("Agent drafts", "Reviewer approves?", "Published"):
        expect(diagram.get_by_text(label), label).to_have_count(1)
    box = diagram.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    screenshot(page, "diagram-start-390")


def test_without_script_a_diagram_reads_as_its_source(tmp_path, chromium, site, make_person):
    import_process(tmp_path, DIAGRAMMED)
    reviewer = make_person("reviewer@example.com", groups=["reviewers"])
    context = chromium.new_context(java_script_enabled=False, base_url=site)
    try:
        page = context.new_page()
        sign_in(page, reviewer)
        page.goto("/processes/diagrammed/")
        first = page.locator("pre.mermaid").first
        expect(first).to_contain_text("draft[Agent drafts] --> review{Reviewer approves?}")
        expect(page.locator("pre.mermaid svg")).to_have_count(0)
    finally:
        context.close()


# A map with a rejection loop, a fork and a long route label: the widest kind of drawing.
MAP_CHECK = """() => {
  const svg = document.querySelector("svg.process-map");
  const [x, y, w, h] = svg.getAttribute("viewBox").split(/\\s+/).map(Number);
  const outside = [...svg.querySelectorAll("path.map-edge, g.map-step, text.map-label")].filter(e => {
    const b = e.getBBox();
    return b.x < x - 0.5 || b.y < y - 0.5 || b.x + b.width > x + w + 0.5 || b.y + b.height > y + h + 0.5;
  }).map(e => e.outerHTML.slice(0, 120));
  const drawn = svg.getBoundingClientRect(), column = svg.parentElement.getBoundingClientRect();
  return {outside, fits: drawn.width <= column.width + 0.5, loops: svg.querySelectorAll("path.reject").length,
          width: drawn.width};
}"""


def test_the_process_map_scales_to_a_phone_and_keeps_its_rejection_loop_in_view(publish, agent, make_person,
                                                                                new_page):
    from tests.work.conftest import PURCHASE

    publish(PURCHASE)
    buyer = make_person("buyer@example.com", groups=["buyers"])
    run = agent.write("start_run", process="purchase", inputs={"item": "Laptop", "budget": 2000})
    for width in (1280, 390):
        page = new_page(width, 844)
        sign_in(page, buyer)
        for url in ("/processes/purchase/", f"/runs/{run['run']['id']}/"):
            page.goto(url)
            found = page.evaluate(MAP_CHECK)
            assert found["loops"] == 1 and found["outside"] == [], (url, width, found)
            assert found["fits"], (url, width, found)
        screenshot(page, f"run-map-{width}")
