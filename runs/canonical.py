"""Run data as canonical JSON: the bytes a decision's snapshot hashes and the run-data limit measures.

A published version's content hash is RFC 8785 (processes.hashing), as the spec requires; these bytes
are the server's own and only ever compared with themselves.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re

# Values that serialise as they are: most of a document's leaves, passed over without a call.
_AS_THEY_ARE = frozenset({str, int, bool, type(None)})


def _plain(value):
    # A database may hand an integral float back as an integer (jsonb: 1e21); spell both alike.
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _AS_THEY_ARE else _plain(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _AS_THEY_ARE else _plain(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e300:
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# json.dumps with these arguments makes an encoder at every call; one kept does the same work once.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# How `repr` spells an integral float: `.0` before no further digit (3.0, -0.0), or with an exponent
# (1e+16, 1.5e+16). A text with neither holds no integral float, so `_plain` would change nothing in it.
_INTEGRAL_FLOAT = re.compile(r"\.0(?![0-9])|e\+")


def canonical_json(value) -> bytes:
    """Serialise JSON deterministically (sorted keys, no spaces); integers of any size are allowed.

    The value is written as it is first (in C) and walked for integral floats (`_plain`) only where the
    text may hold one: most documents hold none, and a walk costs more than writing them twice."""
    text = _ENCODER.encode(value)
    if _INTEGRAL_FLOAT.search(text) is not None:
        text = _ENCODER.encode(_plain(value))
    return text.encode()


def snapshot_of(data: dict) -> str:
    """Hash run data as a decision's snapshot (spec §3.4)."""
    return hashlib.sha256(canonical_json(data)).hexdigest()


def data_size(data: dict) -> int:
    """The size of run data as limits.runDataBytes counts it."""
    return len(canonical_json(data))


def iso(moment: dt.datetime | None) -> str | None:
    """A time as run data writes it: UTC, milliseconds, `Z`."""
    if moment is None:
        return None
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
