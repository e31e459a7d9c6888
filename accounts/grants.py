"""What a person granted a client: the tokens issued from one authorization, and ending all of them when
a refresh token is used twice.

Refresh tokens rotate (each exchange issues a new one and deletes the old); allauth marks every access
and refresh token descending from one authorization code with the same grant id. A refresh token that
comes back after it was exchanged has been copied, by the client's attacker or by the client itself, and
nobody can tell which: the whole grant is revoked, so both must send the person through consent again
(RFC 9700 §4.14.2, OAuth 2.1 §4.3.1).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from allauth.idp.oidc.adapter import get_adapter
from allauth.idp.oidc.models import Token
from django.utils import timezone

from accounts.models import SpentRefreshToken

log = logging.getLogger(__name__)

# How long a spent refresh token that would never have expired is remembered.
NEVER_EXPIRING_KEPT = timedelta(days=30)


def lock_refresh_token(raw: str) -> Token | None:
    """Return the stored refresh token raw is, locked until the transaction ends; None when none is stored.

    Call it inside the transaction that exchanges the token: a second exchange of the same token waits
    here until the first is committed, then finds it spent.
    """
    return (
        Token.objects.select_for_update()
        .filter(type=Token.Type.REFRESH_TOKEN, hash=get_adapter().hash_token(raw))
        .first()
    )


def mark_spent(token: Token) -> None:
    """Remember that token was exchanged, by its hash and its grant."""
    now = timezone.now()
    SpentRefreshToken.objects.create(
        hash=token.hash,
        client_id=token.client_id,
        user_id=token.user_id,
        grant_id=token.get_grant_id() or "",
        spent_at=now,
        forget_after=token.expires_at or now + NEVER_EXPIRING_KEPT,
    )


def end_replayed_grant(raw: str) -> bool:
    """If raw is a refresh token already exchanged, revoke every token of its grant and return True."""
    spent = SpentRefreshToken.objects.filter(hash=get_adapter().hash_token(raw)).first()
    if spent is None:
        return False
    revoked = revoke_grant(client_id=spent.client_id, user_id=spent.user_id, grant_id=spent.grant_id)
    log.warning(
        "a spent refresh token of client %s for user %s came back: its grant's %d tokens are revoked",
        spent.client_id, spent.user_id, revoked,
    )
    return True


def revoke_grant(*, client_id: str, user_id: int, grant_id: str) -> int:
    """Delete every access and refresh token of one grant; return how many went.

    A token that names no grant (issued before allauth recorded one) is revoked with every token the
    client holds for the person, the only lineage left to follow.
    """
    tokens = Token.objects.filter(
        client_id=client_id, user_id=user_id, type__in=[Token.Type.ACCESS_TOKEN, Token.Type.REFRESH_TOKEN]
    )
    if grant_id:
        tokens = tokens.filter(data__grant_id=grant_id)
    deleted, _ = tokens.delete()
    return deleted


def forget_spent_refresh_tokens(now=None) -> int:
    """Forget spent refresh tokens that would have expired by now (a replay is refused anyway); return how many."""
    deleted, _ = SpentRefreshToken.objects.filter(forget_after__lt=now or timezone.now()).delete()
    return deleted
