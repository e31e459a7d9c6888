"""What no database can store, named wherever it is in a request's JSON (base.storable)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from base.storable import MAX_DEPTH, unstorable

# Text with what no database stores among what it does: NUL and lone surrogates.
TEXT = st.text(alphabet=st.sampled_from(["a", "é", "𝄞", "\x00", "\ud800", "\udfff", "\u2028", " "]), max_size=4)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=12,
)


def _bad(value, depth=1) -> bool:
    if isinstance(value, str):
        return "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (dict, list)):
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            return any(_bad(key) or _bad(child, depth + 1) for key, child in value.items())
        return any(_bad(child, depth + 1) for child in value)
    return False


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_a_value_is_refused_exactly_where_it_holds_what_no_database_stores(value):
    assert bool(unstorable(value)) == _bad(value)


def test_every_place_is_named_at_once():
    value = {"a\x00": 1, "b": [1.5, float("nan"), {"c": "\ud800"}], "ok": "fine", "n": True}
    assert unstorable(value) == [
        "a\\u0000: text may not contain NUL (\\u0000) characters",
        "b[1]: not a finite number",
        "b[2].c: not valid Unicode (a lone surrogate, \\ud800)",
    ]


def test_nesting_deeper_than_the_bound_is_named():
    deep = inner = []
    for _ in range(MAX_DEPTH):
        inner.append([])
        inner = inner[0]
    assert unstorable(deep) == [f"{'[0]' * MAX_DEPTH}: nests deeper than {MAX_DEPTH} levels"]
    assert unstorable(deep[0]) == []
