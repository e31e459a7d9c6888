"""Render a PROCESS.md body or a step's text as sanitised Markdown; never raw HTML."""

from __future__ import annotations

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

# What the Markdown library emits for ordinary prose, and nothing that runs or loads anything.
ALLOWED_TAGS = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "code", "pre",
        "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
        "del", "sup", "sub", "abbr",
    }
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


def render_markdown(text: str | None) -> SafeString:
    """Return `text` as HTML that can only show formatting and safe links."""
    if not text:
        return mark_safe("")
    html = markdown.markdown(text, extensions=["sane_lists", "tables", "fenced_code"], output_format="html")
    # Headings inside a body are shifted down so they never outrank the page's own heading.
    for level in range(5, 0, -1):
        html = html.replace(f"<h{level}>", f"<h{level + 1}>").replace(f"</h{level}>", f"</h{level + 1}>")
    cleaned = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style", "iframe", "object", "embed", "template", "noscript"},
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # nh3 output: only the tags and attributes allowed above
