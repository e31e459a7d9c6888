"""The people a `person` value may name (spec §2.3): the active members of one organization, by email.

The engine assigns a step to `inputs.manager` through `member_by_email`, and the forms check a typed address
and suggest people through the same rule, so a form refuses exactly the addresses a run would fail on.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from .models import User


def active_members(organization_id: int) -> QuerySet[User]:
    """The organization's members whose account is active, by email."""
    return User.objects.filter(is_active=True, membership__organization_id=organization_id).order_by("email")


def member_by_email(organization_id: int, email: str) -> User | None:
    """The active member an address names, whatever its case, or None."""
    return active_members(organization_id).filter(email__iexact=email).first()


def members_among(organization_id: int, emails) -> set[str]:
    """Which of these addresses, lower-cased, name active members; one query."""
    wanted = {e.lower() for e in emails if isinstance(e, str)}
    if not wanted:
        return set()
    found = active_members(organization_id).annotate(address=Lower("email")).filter(address__in=wanted)
    return set(found.values_list("address", flat=True))


def display_name(user: User) -> str:
    return user.get_full_name().strip()


def member_choices(organization_id: int, *, query: str = "", limit: int) -> list[tuple[str, str]]:
    """Up to `limit` active members as (email, name), those whose email or name holds `query` when given."""
    people = active_members(organization_id)
    for word in query.split()[:4]:
        people = people.filter(Q(email__icontains=word) | Q(first_name__icontains=word) | Q(last_name__icontains=word))
    return [(user.email, display_name(user)) for user in people.only("email", "first_name", "last_name")[:limit]]
