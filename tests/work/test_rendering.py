"""PROCESS.md bodies render as sanitised Markdown: formatting and safe links, nothing that runs."""

import re

import pytest

from work.rendering import render_markdown

HOSTILE = """---
name: hostile
description: A body that tries to run script.
steps:
  - id: look
    person: lookers
    task: |
      Read this. <script>alert("task")</script> [click](javascript:alert(1))
  - id: done
    finish: ok
---

# Hostile

<script>alert("body")</script>
<img src=x onerror="alert('img')">
[a javascript link](javascript:alert(1)) and [a data link](data:text/html;base64,PHNjcmlwdD4=)
<a href="JaVaScRiPt:alert(1)" onclick="alert(2)">mixed case</a>
<iframe src="https://evil.example"></iframe>
<div style="position:fixed">styled</div>

A [fine link](https://example.com/docs) and **bold** text.
"""


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        '<a href="jAvAsCrIpT:alert(1)">x</a>',
        "<img src=x onerror=alert(1)>",
        '<svg onload="alert(1)"></svg>',
        "<iframe src=https://evil.example></iframe>",
        '<p style="background:url(javascript:alert(1))">x</p>',
        "<object data=x></object>",
        "[x](vbscript:msgbox)",
    ],
)
def test_nothing_that_runs_survives(source):
    html = str(render_markdown(source)).lower()
    for bad in ("<script", "javascript:", "onerror", "onload", "<iframe", "style=", "<object", "<svg", "vbscript"):
        assert bad not in html


def test_formatting_and_safe_links_survive():
    html = str(render_markdown("# Title\n\n- **one**\n- `two`\n\n[docs](https://example.com/a?b=1)"))
    assert "<h2>Title</h2>" in html and "<strong>one</strong>" in html and "<code>two</code>" in html
    assert '<a href="https://example.com/a?b=1" rel="noopener noreferrer">docs</a>' in html


TASKS = """Before you approve:

- [ ] the quote is **current**
- [x] the vendor is [approved](https://example.com/vendors)
    - [X] nested and done
- an ordinary item
- [] not a task
"""


def checkboxes(html: str) -> list[str]:
    return re.findall(r"<input[^>]*>", html)


def test_a_task_list_shows_read_only_checkboxes_labelled_by_their_items():
    html = str(render_markdown(TASKS))
    assert "[ ]" not in html and "[x]" not in html and "[X]" not in html
    boxes = checkboxes(html)
    assert len(boxes) == 3 and all('type="checkbox"' in b and "disabled" in b for b in boxes)
    assert ["checked" in b for b in boxes] == [False, True, True]
    # Each label holds its checkbox and the item's whole inline text, link and emphasis included.
    assert re.search(r"<label><input [^>]*> the quote is <strong>current</strong></label>", html)
    assert re.search(r'<label><input [^>]*> the vendor is <a href="https://example.com/vendors" '
                     r'rel="noopener noreferrer">approved</a></label><ul>', html), "the nested list stays outside"
    assert "<li>an ordinary item</li>" in html and "<li>[] not a task</li>" in html


def test_a_loose_task_list_keeps_its_paragraphs():
    html = str(render_markdown("1. [x] first\n\n2. [ ] second\n"))
    assert re.search(r"<li>\s*<p><label><input [^>]*checked[^>]*> first</label></p>", html)
    assert len(checkboxes(html)) == 2


@pytest.mark.parametrize(
    "source",
    [
        '<input type="text" name="amount" value="1" onfocus="alert(1)" autofocus>',
        '<input type="submit" formaction="https://evil.example">',
        '<input type="checkbox" id="x" form="decide" name="decision">',
        '<input type="hidden" name="decision" value="approved">',
    ],
)
def test_any_input_in_a_body_leaves_as_a_disabled_checkbox_and_nothing_more(source):
    [box] = checkboxes(str(render_markdown(source)))
    assert sorted(re.findall(r'\s([a-z]+)="([^"]*)"', box)) == [("disabled", ""), ("type", "checkbox")]


def test_a_label_keeps_no_attributes():
    assert str(render_markdown('<label for="note" onclick="alert(1)">x</label>')) == "<p><label>x</label></p>"


def test_a_mermaid_block_is_kept_as_diagram_source_text():
    source = "```mermaid\nflowchart LR\n  A[Request] --> B{Within <budget>?}\n  B -- no --> A\n```\n"
    html = str(render_markdown(source))
    assert html == (
        '<pre class="mermaid">flowchart LR\n  A[Request] --&gt; B{Within &lt;budget&gt;?}\n'
        "  B -- no --&gt; A</pre>"
    )


def test_other_code_blocks_stay_plain_code():
    html = str(render_markdown("```python\nx = '<b>'\n```\n\n    indented\n"))
    assert html == "<pre><code>x = '&lt;b&gt;'</code></pre>\n<pre><code>indented</code></pre>"


@pytest.mark.parametrize(
    "source",
    [
        '<pre class="mermaid"><script>alert(1)</script><img src=x onerror=alert(1)></pre>',
        '<pre class="mermaid" id="m" style="x" onclick="alert(1)">graph TD</pre>',
        "```mermaid\n<script>alert(1)</script>\n```",
    ],
)
def test_diagram_source_is_only_ever_text(source):
    html = str(render_markdown(source))
    assert html.startswith('<pre class="mermaid">')
    inside = html[len('<pre class="mermaid">'):html.index("</pre>")]
    assert "<" not in inside
    assert "id=" not in html and "style=" not in html and "onclick" not in html


def test_no_class_but_the_diagrams_survives():
    source = '<p class="x">a</p><code class="language-python">b</code><pre class="mermaid x">c</pre>'
    assert "class" not in str(render_markdown(source))


def test_a_hostile_process_renders_inert_on_the_pages(publish, agent, make_person, browser_of):
    publish(HOSTILE)
    person = make_person("looker@example.com", groups=["lookers"])
    view = agent.write("start_run", process="hostile", inputs={})
    client = browser_of(person)
    for url in (f"/inbox/{view['workItems'][0]['id']}/", f"/runs/{view['run']['id']}/", "/processes/hostile/"):
        html = client.get(url).content.decode()
        main = html[html.index("<main"):]
        lowered = main.lower()
        assert "<script" not in lowered and "javascript:" not in lowered and "onerror" not in lowered
        assert "<iframe" not in lowered and "onclick" not in lowered
        assert '<a href="https://example.com/docs" rel="noopener noreferrer">fine link</a>' in main


HOSTILE_DATA = """---
name: hostile-data
description: A process whose run data tries to run script.
inputs:
  title: string
steps:
  - id: draft
    agent: Draft it.
    output:
      text: string
    evidence: [link]
  - id: look
    person: lookers
    task: Look at the draft.
  - id: done
    finish: ok
---
"""

SCRIPT = '<script>alert("x")</script><img src=x onerror="alert(1)">'


def assert_inert(html: str) -> str:
    """Return the page's main element, asserting no tag in it runs script: the senders' text shows as text."""
    main = html[html.index("<main"):html.index("</main>")]
    lowered = main.lower()
    assert "<script" not in lowered and "<img" not in lowered
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", lowered), "an event-handler attribute"
    assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*(javascript|data):""", lowered), "a script URL"
    return main


def test_run_data_renders_inert_on_the_pages(publish, agent, make_person, browser_of):
    # Inputs, outputs, summaries, notes and link evidence are the senders' text, shown and never run.
    from tests.runs.conftest import ToolCaller

    publish(HOSTILE_DATA)
    person = make_person("looker@example.com", groups=["lookers"])
    run_id = agent.write("start_run", process="hostile-data", inputs={"title": SCRIPT})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="draft")["token"]
    view = agent.write("submit", token=token, output={"text": SCRIPT}, summary=SCRIPT,
                       evidence=[{"kind": "link", "ref": "javascript:alert(1)"},
                                 {"kind": "link", "ref": "JaVaScRiPt:alert(2)"},
                                 {"kind": "link", "ref": "https://example.com/proof"}])
    [item] = view["workItems"]
    client = browser_of(person)
    pages = (f"/inbox/{item['id']}/", f"/runs/{run_id}/", "/inbox/", "/runs/")
    for url in pages:
        main = assert_inert(client.get(url).content.decode())
        if url != "/runs/":
            assert "&lt;script&gt;" in main, url  # shown, escaped
    for url in pages[:2]:
        main = assert_inert(client.get(url).content.decode())
        assert 'href="https://example.com/proof"' in main and "javascript:alert(1)" in main
    ToolCaller(person).write("decide", runId=run_id, workItemId=item["id"], snapshot=item["snapshot"],
                             decision="failed", note=SCRIPT)
    main = assert_inert(client.get(f"/runs/{run_id}/").content.decode())
    assert main.count("&lt;script&gt;") >= 3


def test_addresses_in_run_data_are_links_and_nothing_else_is():
    # issue: the people's first day: URLs in run data not clickable.
    from work.templatetags.work_tags import show

    html = str(show({"site": "https://example.com/a?b=1", "note": "javascript:alert(1) <b>x</b>"}))
    assert '<a href="https://example.com/a?b=1" rel="nofollow">https://example.com/a?b=1</a>' in html
    assert "javascript:alert(1)" in html and 'href="javascript' not in html and "&lt;b&gt;" in html
    listed = str(show(["see https://example.org/x", "plain"]))
    assert '<a href="https://example.org/x" rel="nofollow">' in listed


def test_a_moment_in_run_data_reads_as_a_date_and_time():
    # issue: the people's first day: raw ISO datetimes in run data.
    from work.templatetags.work_tags import show

    html = str(show({"paidAt": "2026-12-04T10:05:00.000Z", "code": "2026-12-04T10:05 is not a moment"}))
    assert '<time datetime="2026-12-04T10:05:00+00:00">4 Dec 2026, 10:05 UTC</time>' in html
    assert "2026-12-04T10:05 is not a moment" in html
    assert "4 Dec 2026, 10:05 UTC" in str(show("2026-12-04T12:05:00+02:00"))
