"""Render a PROCESS.md body or a step's text as sanitised Markdown; never raw HTML."""

from __future__ import annotations

import html as html_escaping
import re
import xml.etree.ElementTree as etree

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

# What the Markdown library emits for ordinary prose, and nothing that runs or loads anything. A task
# list item adds a label around a checkbox; the checkbox is forced disabled (INPUT_IS_A_CHECKBOX).
ALLOWED_TAGS = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "code", "pre",
        "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
        "del", "sup", "sub", "abbr", "label", "input",
    }
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"}, "abbr": {"title"}, "th": {"align"}, "td": {"align"}, "input": {"checked"},
}
# Whatever `<input>` a body holds, it leaves the sanitiser as a read-only checkbox and nothing else.
INPUT_IS_A_CHECKBOX = {"input": {"type": "checkbox", "disabled": ""}}
# The one class kept, exactly: it marks a diagram's source for the page's diagram script.
ALLOWED_VALUES = {"pre": {"class": {"mermaid"}}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

TASK_MARK = re.compile(r"^\s*\[(?P<state>[ xX])\]\s+")
# Where a task item's label ends: the first block inside the item (a nested list, a paragraph, code).
BLOCK_TAGS = frozenset(
    {"ul", "ol", "p", "pre", "blockquote", "table", "div", "dl", "hr", "h1", "h2", "h3", "h4", "h5", "h6"}
)


class TaskListItems(Treeprocessor):
    """Turn a list item starting with `[ ]` or `[x]` into a disabled checkbox labelled by the item's text."""

    def run(self, root: etree.Element) -> None:
        for item in root.iter("li"):
            holder = item
            if not (item.text or "").strip() and len(item) and item[0].tag == "p":
                holder = item[0]  # an item of a loose list keeps its text in a paragraph
            match = TASK_MARK.match(holder.text or "")
            if match:
                label_task(holder, done=match["state"] != " ", text=holder.text[match.end():])


def label_task(holder: etree.Element, *, done: bool, text: str) -> None:
    """Put a checkbox and the inline text of `holder` in one label, so the checkbox is named by its item."""
    label = etree.Element("label")
    checkbox = etree.SubElement(label, "input", {"type": "checkbox", "disabled": "disabled"})
    if done:
        checkbox.set("checked", "checked")
    checkbox.tail = " " + text
    while len(holder) and holder[0].tag not in BLOCK_TAGS:
        inline = holder[0]
        holder.remove(inline)
        label.append(inline)
    holder.text = None
    holder.insert(0, label)


class TaskLists(Extension):
    """GitHub's task lists: `- [ ] to do` and `- [x] done`, shown and never ticked from the page."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        # After the inline processor (20), so bold text and links in the item move into the label whole.
        md.treeprocessors.register(TaskListItems(md), "task-list-items", 15)


def diagram_source(source: str, language: str, css_class: str, options: dict, md, **kwargs) -> str:
    """Keep a ```mermaid block's source as text: code without script, a diagram once the page draws it."""
    return f'<pre class="mermaid">{html_escaping.escape(source)}</pre>'


def _markdown_to_html(text: str) -> str:
    return markdown.markdown(
        text,
        extensions=["sane_lists", "tables", "pymdownx.highlight", "pymdownx.superfences", TaskLists()],
        extension_configs={
            # Plain <pre><code>: colouring would only add spans and classes the sanitiser drops.
            "pymdownx.highlight": {"use_pygments": False, "css_class": ""},
            "pymdownx.superfences": {
                "custom_fences": [{"name": "mermaid", "class": "mermaid", "format": diagram_source}],
            },
        },
        output_format="html",
    )


def render_markdown(text: str | None) -> SafeString:
    """Return `text` as HTML that can only show formatting and safe links."""
    if not text:
        return mark_safe("")
    html = _markdown_to_html(text)
    # Headings inside a body are shifted down so they never outrank the page's own heading.
    for level in range(5, 0, -1):
        html = html.replace(f"<h{level}>", f"<h{level + 1}>").replace(f"</h{level}>", f"</h{level + 1}>")
    cleaned = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style", "iframe", "object", "embed", "template", "noscript"},
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        set_tag_attribute_values=INPUT_IS_A_CHECKBOX,
        tag_attribute_values=ALLOWED_VALUES,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # nh3 output: only the tags and attributes allowed above

