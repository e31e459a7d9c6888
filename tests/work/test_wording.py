"""How times read to a person on the pages (work_tags)."""

import datetime as dt

import pytest
from django.utils import timezone

from work.templatetags.work_tags import ago


@pytest.mark.parametrize(("offset", "expected"), [
    (dt.timedelta(seconds=36), "in under a minute"),  # not "in 0 minutes"
    (dt.timedelta(minutes=5, seconds=30), "in 5\xa0minutes"),
    (dt.timedelta(seconds=-20), "just now"),
    (dt.timedelta(hours=-3, minutes=-1), "3\xa0hours ago"),
])
def test_a_moment_reads_in_words(offset, expected):
    assert ago(timezone.now() + offset) == expected


# The stylesheet's text colours, each on the surfaces it is drawn on (static/css/app.css).
TEXT_ON = {
    "text": ("bg", "surface", "surface-2"), "muted": ("bg", "surface", "surface-2", "primary-soft"),
    "faint": ("bg", "surface", "surface-2", "primary-soft"), "primary": ("bg", "surface", "primary-soft"),
    "success": ("surface", "success-soft"), "warn": ("surface", "warn-soft"), "danger": ("surface", "danger-soft"),
    "agent": ("surface",), "task": ("surface",), "approve": ("surface",),
}


def contrast(one: str, other: str) -> float:
    """The WCAG 2.2 contrast ratio of two #rrggbb colours."""
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_text_colour_reaches_4_5_to_1_on_its_surfaces():
    # WCAG 2.2 AA for normal text; issue: small grey text at 3.09:1.
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "app.css").read_text()
    colours = dict(re.findall(r"--([a-z0-9-]+):\s*(#[0-9a-fA-F]{6})", css))
    low = [(text, ground, round(contrast(colours[text], colours[ground]), 2))
           for text, grounds in TEXT_ON.items() for ground in grounds
           if contrast(colours[text], colours[ground]) < 4.5]
    assert not low, low


def test_a_preview_reads_past_the_first_line_break_and_cuts_at_a_word():
    # issue: the people's first day: task previews cut at the first line break.
    from work.display import preview

    assert preview("Check the invoice.\nThen file it.", 140) == "Check the invoice. Then file it."
    assert preview("word " * 40, 20) == "word word word word…"
    assert len(preview("x" * 500, 140)) == 140
