"""Opaque page cursors: what a listing hands out as `nextCursor` and takes back as `cursor` (tools.md)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json

from base.storable import text_problem

from .errors import Invalid


def make_cursor(values: list) -> str:
    """Names, ISO times and ids as an opaque cursor."""
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def read_cursor(cursor: str | None, size: int) -> list | None:
    """The `size` values of a cursor made by make_cursor, None for none, or `invalid`."""
    if cursor is None:
        return None
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        values = None
    if not isinstance(values, list) or len(values) != size or not _cursor_values_fit(values):
        raise Invalid("The cursor is not one this server gave out.", ["cursor: not recognised"])
    return values


def _cursor_values_fit(values: list) -> bool:
    """A cursor holds names, ISO times and ids; anything else did not come from this server."""
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return False
        if isinstance(value, str) and text_problem(value):
            return False
        if isinstance(value, int) and not 0 <= value < 2**62:
            return False
    return True


def _parse_time(value) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise Invalid("The cursor is not one this server gave out.", ["cursor: not recognised"]) from exc


def encode_cursor(moment: dt.datetime, pk: int) -> str:
    """A page's end as an opaque cursor: the ordering time and the id that breaks ties."""
    return make_cursor([moment.isoformat(), pk])


def cursor_after(cursor: str | None) -> tuple[dt.datetime, int] | None:
    """Read a cursor made by encode_cursor, or refuse it as `invalid`."""
    values = read_cursor(cursor, 2)
    if values is None:
        return None
    if not isinstance(values[0], str) or not isinstance(values[1], int):
        raise Invalid("The cursor is not one this server gave out.", ["cursor: not recognised"])
    return _parse_time(values[0]), values[1]
