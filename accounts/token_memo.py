"""Access tokens this process validated lately, so a warm tool call spends no round trip on its token.

An entry is kept for at most TOKEN_CACHE_SECONDS (and never past the token's own expiry), keyed by the
token's hash, never by the token. Whatever ends a token (revoked, its grant revoked on refresh-token
reuse, its agent turned off, its person gone from the organization) takes effect in this process at
once, since any save or delete of a token, agent, person or membership forgets everything remembered
here, and in every other process within TOKEN_CACHE_SECONDS. TOKEN_CACHE_SECONDS=0 turns it off.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from allauth.idp.oidc.models import Token
from django.conf import settings
from django.db.models.signals import post_delete, post_save

from accounts.identity import Identity
from accounts.models import Agent, Membership, User

MAX_ENTRIES = 10_000
clock = time.monotonic


@dataclass(frozen=True)
class Validated:
    """What the database said about one access token: who it stands for, and what it was granted."""

    identity: Identity
    resources: tuple[str, ...]
    scoped: bool  # granted the tools' scope
    seconds_left: float | None  # until the token expires, when it does


_lock = threading.Lock()
_entries: dict[str, tuple[float, Validated]] = {}


def recall(token_hash: str) -> Validated | None:
    """The token's validation, when this process made it within the bound; None otherwise."""
    entry = _entries.get(token_hash)
    if entry is None:
        return None
    deadline, validated = entry
    if clock() >= deadline:
        with _lock:
            _entries.pop(token_hash, None)
        return None
    return validated


def remember(token_hash: str, validated: Validated) -> None:
    seconds = settings.TOKEN_CACHE_SECONDS
    if validated.seconds_left is not None:
        seconds = min(seconds, validated.seconds_left)
    if seconds <= 0:
        return
    with _lock:
        if len(_entries) >= MAX_ENTRIES:
            now = clock()
            for key in [key for key, (deadline, _) in _entries.items() if deadline <= now]:
                del _entries[key]
            if len(_entries) >= MAX_ENTRIES:
                _entries.clear()
        _entries[token_hash] = (clock() + seconds, validated)


def forget_all(**_signal) -> None:
    """Forget every token this process remembers (a token, an agent, a person or a membership changed)."""
    with _lock:
        _entries.clear()


for _model in (Token, Agent, User, Membership):
    post_save.connect(forget_all, sender=_model, dispatch_uid=f"token-memo-save-{_model.__name__}")
    post_delete.connect(forget_all, sender=_model, dispatch_uid=f"token-memo-delete-{_model.__name__}")
