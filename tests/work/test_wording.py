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
