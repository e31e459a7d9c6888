"""Template filters for the people pages: names, times, run-data values and sanitised Markdown."""

from __future__ import annotations

import datetime as dt
import json
import re

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join, urlize
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince, timeuntil

from processes.wording import field_label, step_title
from work.rendering import render_markdown

register = template.Library()


def _moment(value) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


@register.filter
def who(ref, names=None):
    """Name the person, agent or group a ref stands for; a ref nobody knows is shown as it is."""
    if not ref:
        return ""
    return (names or {}).get(ref, ref)


@register.filter
def when(value):
    """Show a moment as `6 Oct 2026, 09:04 UTC` (in the person's zone) inside a <time> element."""
    moment = _moment(value)
    if moment is None:
        return value or ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    shown = timezone.localtime(moment)  # in the person's time zone (accounts.middleware), UTC until they choose
    return format_html('<time datetime="{}">{}</time>', moment.astimezone(dt.UTC).isoformat(),
                       shown.strftime("%-d %b %Y, %H:%M ") + (shown.tzname() or "UTC"))


@register.filter
def ago(value):
    """Say how long ago (or how far ahead) a moment is: `3 hours ago`, `in 2 days`."""
    moment = _moment(value)
    if moment is None:
        return ""
    now = timezone.now()
    if moment > now:
        if moment - now < dt.timedelta(minutes=1):
            return "in under a minute"  # not "in 0 minutes" with seconds still to go
        # "in 1 day, 23 hours" beyond a day, plain "in 5 hours" within one: precise where it matters.
        return f"in {timeuntil(moment, now, depth=2 if moment - now >= dt.timedelta(days=1) else 1)}"
    text = timesince(moment, now, depth=1)
    return "just now" if text.startswith("0\xa0minutes") else f"{text} ago"


@register.filter
def is_past(value) -> bool:
    moment = _moment(value)
    return moment is not None and moment <= timezone.now()


@register.filter
def markdown(text):
    return render_markdown(text)


@register.filter
def label(name):
    return field_label(str(name))


@register.filter
def step_name(step_id):
    return step_title(str(step_id or ""))


@register.filter
def get(mapping, key):
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def issue_text(issue: str) -> str:
    """Drop the path in front of an issue shown beside its own field: `output.x: expected number` → `expected number`."""
    _path, sep, rest = str(issue).partition(": ")
    return rest if sep else issue


def _linked(text: str):
    """Text escaped, with its http(s) addresses and emails as links (Django's urlize); other schemes stay text."""
    return mark_safe(urlize(text, nofollow=True, autoescape=True))


# A moment as run data writes it (a datetime field, `at` of a record): date, time and zone.
_ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})")


def _scalar(value):
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if value is None:
        return "—"
    if isinstance(value, str) and _ISO_MOMENT.fullmatch(value):
        return when(value)  # a person reads "4 Dec 2026, 10:00 UTC", not the ISO text
    return _linked(str(value)) if isinstance(value, str) else str(value)


def _render(value, depth: int = 0):
    if isinstance(value, str) and _ISO_MOMENT.fullmatch(value):
        return _scalar(value)
    if isinstance(value, str):
        if "\n" in value:
            return format_html('<span style="white-space: pre-line">{}</span>', _linked(value))
        return format_html("{}", _linked(value))
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="muted">none</span>')
        if all(not isinstance(v, (list, dict)) for v in value):
            return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((_scalar(v),) for v in value)))
    if isinstance(value, list) and all(isinstance(v, dict) and v for v in value) and all(
        not isinstance(x, (list, dict)) for v in value for x in v.values()
    ):
        columns = list(dict.fromkeys(k for v in value for k in v))
        head = format_html_join("", '<th scope="col">{}</th>', ((field_label(c),) for c in columns))
        rows = format_html_join(
            "", "<tr>{}</tr>",
            ((format_html_join("", "<td>{}</td>", ((_scalar(v.get(c)) if c in v else "",) for c in columns)),)
             for v in value),
        )
        return format_html('<div class="table-wrap"><table class="simple compact"><thead><tr>{}</tr></thead>'
                           "<tbody>{}</tbody></table></div>", head, rows)
    if isinstance(value, dict) and depth < 1 and all(not isinstance(v, (list, dict)) for v in value.values()):
        rows = format_html_join("", "<dt>{}</dt><dd>{}</dd>", ((field_label(k), _scalar(v)) for k, v in value.items()))
        return format_html('<dl class="data">{}</dl>', rows)
    if isinstance(value, (list, dict)):
        return format_html('<pre class="json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))
    return format_html("{}", _scalar(value))


@register.filter
def show(value):
    """Show one run-data value readably: text keeps its lines, lists are lists, objects are tables."""
    return _render(value)


@register.filter
def inline(value):
    """One short value in a line of text (an inbox card): a moment as `when` shows it, anything else as text."""
    if isinstance(value, str) and _ISO_MOMENT.fullmatch(value):
        return when(value)
    return value


@register.filter
def is_url(text) -> bool:
    return isinstance(text, str) and text.startswith(("https://", "http://"))


@register.filter
def pairs(mapping):
    """Return a dict's (key, value) pairs; `.items` in a template would look up a field named `items`."""
    return list(mapping.items()) if isinstance(mapping, dict) else []
