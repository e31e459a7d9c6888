"""Picking a person on a form: the organization's members to suggest, and the check of a typed address.

A page lists up to `LISTED` members in a `<datalist>`, which the browser searches by name and address as
the person types, with no script. A larger organization's page lists none and its script asks `suggest`
for the few that match what is typed.
"""

from __future__ import annotations

from django.urls import reverse

from accounts.identity import Identity
from accounts.members import member_choices, members_among

from .forms import Control, Members

LISTED = 500
SUGGESTED = 20


def members_of(identity: Identity) -> Members:
    """The check a form's `person` fields go through: active members of the person's own organization."""
    organization = identity.organization
    return Members(organization=organization.name or organization.slug,
                   known=lambda emails: members_among(organization.pk, emails))


def picker(identity: Identity, controls: list[Control]) -> dict | None:
    """What the page needs to suggest people, or None when no control asks for a person."""
    if not any(control.picks_person for control in controls):
        return None
    choices = member_choices(identity.organization.pk, limit=LISTED + 1)
    if len(choices) > LISTED:
        return {"choices": [], "suggest_url": reverse("people-suggest")}
    return {"choices": choices, "suggest_url": ""}


def suggestions(identity: Identity, query: str) -> list[dict]:
    """The members of the person's organization whose name or address holds `query`."""
    query = query[:100]
    if not query.strip():
        return []
    return [{"email": email, "name": name}
            for email, name in member_choices(identity.organization.pk, query=query, limit=SUGGESTED)]
