"""Compute the content hash of a published process version (spec §6 rule 5)."""

import hashlib

import rfc8785


def content_hash(frontmatter: dict, body: str) -> str:
    """Return the lowercase hex SHA-256 of the canonical frontmatter JSON, a newline, and the UTF-8 body."""
    # Validation refuses what RFC 8785 cannot write (integers beyond 2**53 - 1, non-finite floats,
    # lone surrogates), so a validated frontmatter always canonicalises here.
    digest = hashlib.sha256(rfc8785.dumps(frontmatter))
    digest.update(b"\n")
    digest.update(body.encode("utf-8"))
    return digest.hexdigest()
