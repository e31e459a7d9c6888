"""JSON read and written by orjson where it means what the standard library's would, by the standard
library otherwise.

A write serialises its run's data, its answer and its record of the answer, and reads rows back as JSON
(`base.json_rows`): orjson does each several times faster. Where the two libraries part, the standard
library's answer stands:

- orjson refuses to write an integer beyond 64 bits, a key that is not a string, a string with a lone
  surrogate, nesting deeper than 254 and types it does not know: those values are written by `json`,
  which writes them or raises as before.
- orjson reads an integer beyond 64 bits as a float: text with a run of 19 digits or more (such an
  integer, or a string or a fraction that holds such a run) is read by `json`, which keeps every
  digit. orjson refuses what `json` may accept (NaN, a lone surrogate, a number past a double's range):
  that text is read by `json` too, to accept or refuse it as it always has.
- Both write the same numbers, but for the spelling of an exponent (`1.5e-7`, `1.5e-07`), which
  every reader takes alike. orjson writes NaN and infinities as null, which `json` writes as tokens
  that are not JSON at all (PostgreSQL refuses them).
- orjson takes about fifteen times a text's size to read it, and about ten times a document's to write
  it: a text longer than `ORJSON_TEXT` is read by `json`, and what is written here is at most a run's
  answer, which runDataBytes bounds.
"""

from __future__ import annotations

import functools
import json
import re

import orjson

# orjson's reader takes about fifteen times its text's size while it reads (the standard library's about
# one): a longer text, such as a request that carries a file, is read by json.
ORJSON_TEXT = 64 * 1024
# Past 18 digits an integer may not fit in 64 bits.
_LONG_DIGITS = re.compile(r"\d{19}")
_LONG_DIGITS_BYTES = re.compile(rb"\d{19}")


def loads(text: str | bytes, *, parse_constant=None):
    """`json.loads(text, parse_constant=...)`, by orjson where it reads the same values."""
    if len(text) <= ORJSON_TEXT and (_LONG_DIGITS if isinstance(text, str) else _LONG_DIGITS_BYTES).search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, parse_constant=parse_constant)


def dumped(value) -> bytes | str:
    """`json.dumps(value)` (as Django writes a JSONField's value), by orjson where it can write it: orjson's
    bytes as they are, for a driver that takes bytes or text (psycopg's Jsonb)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value)


def dumps(value) -> str:
    """`dumped` as text."""
    text = dumped(value)
    return text if isinstance(text, str) else text.decode()


# DRF's JSONRenderer turns these into escapes, so its JSON is also a strict subset of JavaScript.
_LINE_SEPARATORS = ("\u2028".encode(), "\u2029".encode())
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


@functools.cache
def _default(encoder_class):
    """What an encoder of `encoder_class` makes of a type JSON has no place for: made once, not per answer."""
    return encoder_class().default


def rendered(value, renderer) -> bytes:
    """The bytes `renderer` (DRF's JSONRenderer: compact, UTF-8, refusing NaN) writes for `value`, by
    orjson where it writes them alike; the types JSON has no place for go to the renderer's encoder."""
    if renderer.ensure_ascii or not renderer.compact:
        return renderer.render(value)
    try:
        text = orjson.dumps(value, default=_default(renderer.encoder_class), option=_OPTIONS)
    except TypeError:
        return renderer.render(value)
    if _LINE_SEPARATORS[0] in text or _LINE_SEPARATORS[1] in text:
        text = text.replace(_LINE_SEPARATORS[0], b"\\u2028").replace(_LINE_SEPARATORS[1], b"\\u2029")
    return text
