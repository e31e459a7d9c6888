"""Run data and arguments as canonical JSON (runs.canonical): one spelling for each value, integral
floats as integers, however the text is reached."""

from collections import OrderedDict

import pytest

from runs import canonical

VALUES = [
    {"n": 3, "x": 2.5, "s": "plain"},
    {"n": 3.0},
    {"deep": [{"a": [1, -0.0, {"b": 1e16}]}]},
    [1.5e16, 1e300, 1e-7, 123456.789],
    {"version": "1.0", "text": "e+ and .0 in words", "exp": "1e+5"},
    {"z": float("inf"), "y": 7.25},
    OrderedDict([("b", 1.0), ("a", (2.0, "t"))]),
    {"big": 2**80, "neg": -12.0, "tiny": 5e-324},
    {"é": "ü", "𝄞": [None, True, False]},
]


@pytest.mark.parametrize("value", VALUES)
def test_a_value_is_spelled_as_its_plain_form_is(value):
    # The text written first is kept only where no integral float can be in it; otherwise the value is
    # made plain (integral floats as integers) and written again: either way, the plain form's text.
    assert canonical.canonical_json(value) == canonical._ENCODER.encode(canonical._plain(value)).encode()


def test_integral_floats_and_integers_are_one_spelling():
    assert canonical.canonical_json({"b": [1.0, -0.0, 1e16], "a": 2}) == b'{"a":2,"b":[1,0,10000000000000000]}'
    assert canonical.canonical_json({"n": 1.0}) == canonical.canonical_json({"n": 1})
    assert canonical.data_size({"s": "é"}) == len('{"s":"é"}'.encode())
