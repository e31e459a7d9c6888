"""Who is calling: a person (human identity) or an agent, always inside one organization."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accounts.models import Agent, Organization, User

HUMAN = "human"
AGENT = "agent"


@dataclass(frozen=True)
class Identity:
    """The caller of a tool; `ref` is what run data records as `by` (u_<id>, a_<id>)."""

    organization: Organization
    kind: str
    ref: str
    user: User | None = None
    agent: Agent | None = None
    is_operator: bool = False
    # The OAuth client a bearer token was issued to; a person's token is still an agent client (spec §6 rule 4).
    via_client: bool = False

    @property
    def is_human(self) -> bool:
        return self.kind == HUMAN and not self.via_client

    @property
    def is_agent(self) -> bool:
        return not self.is_human

    @property
    def email(self) -> str | None:
        return self.user.email if self.user is not None else None

    @classmethod
    def for_user(cls, user: User) -> Identity | None:
        """The human identity of a signed-in person, or None when they belong to no organization."""
        membership = getattr(user, "membership", None)
        if membership is None:
            return None
        return cls(
            organization=membership.organization,
            kind=HUMAN,
            ref=user.ref,
            user=user,
            is_operator=membership.is_operator,
        )

    @classmethod
    def for_agent(cls, agent: Agent) -> Identity:
        return cls(organization=agent.organization, kind=AGENT, ref=agent.ref, agent=agent, via_client=True)
