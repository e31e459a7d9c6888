"""File evidence: every file named is one of the organization's uploads, hashed again as it is now (spec §5)."""

from __future__ import annotations

import hashlib

from accounts.identity import Identity

from .acceptance import FILE_CHANGED, FILE_NOT_FOUND
from .models import Upload


def verify_files(identity: Identity, evidence: list[dict]) -> tuple[dict[str, str], dict[str, str]]:
    """Verify file evidence in one query: it exists in the organization and its bytes still match (spec §5).

    Return the problem of each bad ref, and the recorded sha256 of each good one.
    """
    refs = {item["ref"] for item in evidence if item["kind"] == "file"}
    if not refs:
        return {}, {}
    found = {u.public_id: u for u in Upload.objects.filter(organization=identity.organization, public_id__in=refs)}
    problems, hashes = {}, {}
    for ref in refs:
        upload = found.get(ref)
        if upload is None:
            problems[ref] = FILE_NOT_FOUND
        elif hashlib.sha256(bytes(upload.content)).hexdigest() != upload.sha256:
            problems[ref] = FILE_CHANGED
        else:
            hashes[ref] = upload.sha256
    return problems, hashes


def recorded_evidence(evidence: list[dict], hashes: dict[str, str]) -> list[dict]:
    """Evidence as run data keeps it: file items carry the hash recorded at upload."""
    return [
        {"kind": "file", "ref": item["ref"], "sha256": hashes[item["ref"]]}
        if item["kind"] == "file"
        else {"kind": item["kind"], "ref": item["ref"]}
        for item in evidence
    ]
