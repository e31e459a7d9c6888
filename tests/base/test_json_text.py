"""base.json_text reads and writes JSON by orjson only where it means what the standard library's would."""

import datetime as dt
import decimal
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from base import adapting, json_text

# Every JSON value, with integers far past 64 bits, floats that print with an exponent and any text.
LEAVES = st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63 - 5, max_value=2**80) \
    | st.floats(allow_nan=False, allow_infinity=False) | st.text()
DOCUMENTS = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_text_reads_as_the_standard_library_reads_it(document):
    text = json.dumps(document, ensure_ascii=False)
    read = json_text.loads(text)
    assert read == json.loads(text)
    assert json.dumps(read) == json.dumps(json.loads(text))  # ints stay ints, every digit kept
    assert json_text.loads(text.encode()) == read


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_a_document_written_reads_back_as_it_was(document):
    assert json.loads(json_text.dumps(document)) == document
    assert json.loads(json_text.dumped(document)) == document
    rendered = json_text.rendered({"ok": True, "data": document}, JSONRenderer())
    assert json.loads(rendered) == json.loads(JSONRenderer().render({"ok": True, "data": document}))


@pytest.mark.parametrize("text", ["12345678901234567890123", '{"n": -98765432109876543210}', '["1234567890123456789"]'])
def test_an_integer_past_64_bits_keeps_every_digit(text):
    assert json_text.loads(text) == json.loads(text)
    assert json.dumps(json_text.loads(text)) == json.dumps(json.loads(text))


def test_a_long_text_is_read_without_orjsons_working_memory():
    import tracemalloc

    text = json.dumps({"contentBase64": "QUFB" * (json_text.ORJSON_TEXT // 2)})
    tracemalloc.start()
    try:
        assert json_text.loads(text)["contentBase64"].startswith("QUFB")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(text)


def test_what_orjson_refuses_is_read_and_refused_as_before():
    def refuse(name):
        raise ValueError(f"{name} is not a JSON number")

    assert json_text.loads('"\\ud800"') == "\ud800"  # a lone surrogate, as json reads it
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        json_text.loads('{"a": NaN}', parse_constant=refuse)
    with pytest.raises(json.JSONDecodeError):
        json_text.loads('{"a": ')


def test_values_orjson_does_not_write_are_written_by_json():
    assert json_text.dumps({1: 2**70}) == json.dumps({1: 2**70})
    assert json_text.dumps(["\ud800"]) == json.dumps(["\ud800"])
    assert json.loads(json_text.dumps([1.5e-7, 1e300])) == [1.5e-7, 1e300]


def test_the_answer_is_rendered_as_drfs_renderer_renders_it():
    renderer = JSONRenderer()
    value = {
        "at": dt.datetime(2026, 12, 7, 14, 0, 0, 123456, tzinfo=dt.UTC),
        "day": dt.date(2026, 12, 7),
        "amount": decimal.Decimal("1.10"),
        "id": uuid.UUID(int=7),
        "text": "line\u2028and paragraph\u2029end, é",
        "big": 2**70,
    }
    assert json_text.rendered(value, renderer) == renderer.render(value)
    del value["big"]  # now orjson writes it, the datetime and Decimal by DRF's encoder
    assert json_text.rendered(value, renderer) == renderer.render(value)
    assert b"\\u2028" in json_text.rendered(value, renderer)  # still a strict subset of JavaScript


@pytest.mark.postgres
def test_a_document_reaches_postgresql_as_the_orm_sends_it(db):
    from django.apps import apps
    from django.db import connection
    from django.db.models import JSONField

    if connection.vendor != "postgresql":
        pytest.skip("the JSON fast path is PostgreSQL's")
    documents = [{"n": 2**70, "f": 1.5e-7, "s": "é\u2028", "l": [None, True, {"k": -0.0}]}, [], {}, [1, "2"]]
    fields = [f for model in apps.get_models() for f in model._meta.concrete_fields if type(f) is JSONField]
    assert fields
    with connection.cursor() as cursor:
        for field in fields:
            for document in documents:
                fast = adapting.db_value(field, document, connection)
                orm = field.get_db_prep_save(document, connection)
                cursor.execute("SELECT %s::jsonb = %s::jsonb, %s::jsonb::text", [fast, orm, fast])
                same, text = cursor.fetchone()
                assert same, (field, document)
                assert json.loads(text) == document
