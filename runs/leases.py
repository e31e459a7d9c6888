"""Claim tokens: opaque, unforgeable, and never stored (spec §6 rule 2).

A token is the lease's random id and an HMAC of it under a key derived from SECRET_KEY, so the
database holds no token, a replayed claim can give back the very same token, and a forged or
altered token fails verification without a lookup.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets

from django.conf import settings

_SALT = "agentprocess.lease-token"
_PREFIX = "apt1"


def new_lease_id() -> str:
    return secrets.token_hex(16)


def token_for(lease_id: str) -> str:
    # Django's salted_hmac(_SALT, lease_id, algorithm="sha256"), with its key derived once per secret.
    signature = hmac.new(_key(settings.SECRET_KEY), lease_id.encode(), hashlib.sha256).hexdigest()
    return f"{_PREFIX}.{lease_id}.{signature}"


@functools.lru_cache(maxsize=4)
def _key(secret: str) -> bytes:
    return hashlib.sha256((_SALT + secret).encode()).digest()


def lease_id_from(token: str) -> str | None:
    """Return the lease id a token names when its signature verifies, else None."""
    # compare_digest takes ASCII text only: any other token is simply one that does not verify.
    if not isinstance(token, str) or len(token) > 200 or not token.isascii():
        return None
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != _PREFIX:
        return None
    expected = token_for(parts[1])
    return parts[1] if hmac.compare_digest(expected, token) else None
