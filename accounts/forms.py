"""A person's own settings: the time zone pages show moments in, and how they want notices by email."""

from __future__ import annotations

import zoneinfo
from functools import cache

from django import forms

from .models import EmailNotices, User


@cache
def time_zones() -> list[tuple[str, str]]:
    """Every IANA zone this machine knows, as (name, shown) choices: `Europe/Berlin` → `Europe / Berlin`."""
    names = sorted(zoneinfo.available_timezones() - {"localtime", "Factory"})
    return [(name, name.replace("/", " / ").replace("_", " ")) for name in names]


class PreferencesForm(forms.ModelForm):
    time_zone = forms.TypedChoiceField(
        label="Time zone", choices=time_zones, help_text="Dates and times on every page are shown in this zone."
    )
    email_notices = forms.ChoiceField(
        label="Email notices", choices=EmailNotices.choices, widget=forms.RadioSelect,
        help_text="New work for you or your groups, work sent back to you, a run you started ending, overdue "
                  "work, and escalations if you are an operator. They are always listed in your inbox.",
    )

    class Meta:
        model = User
        fields = ["first_name", "last_name", "time_zone", "email_notices"]
        labels = {"first_name": "First name", "last_name": "Last name"}
