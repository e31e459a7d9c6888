"""Acceptance as pure functions: types, one_of, lists, evidence and routes (spec §2.3, §6 rule 3)."""

import pytest

from processes.definition import compile_definition
from runs.acceptance import check_fields, check_submission, check_value, parse_datetime


@pytest.mark.parametrize(
    ("spec", "value", "issues"),
    [
        ("string", "x", []),
        ("string", 1, ["v: expected string"]),
        ("string", None, ["v: expected string"]),
        ("number", 1, []),
        ("number", 1.5, []),
        ("number", True, ["v: expected number"]),
        ("number", "1", ["v: expected number"]),
        ("boolean", False, []),
        ("boolean", 0, ["v: expected boolean"]),
        ("date", "2024-02-29", []),
        ("date", "2023-02-29", ["v: expected date"]),
        ("date", "2024-2-29", ["v: expected date"]),
        ("datetime", "2026-10-06T09:00:00Z", []),
        ("datetime", "2026-10-06T09:00:00.123+02:00", []),
        ("datetime", "2026-10-06T09:00:00", ["v: expected datetime"]),
        ("datetime", "2026-10-06", ["v: expected datetime"]),
        ("datetime", "2026-13-06T09:00:00Z", ["v: expected datetime"]),
        ("list", [], []),
        ("list", {}, ["v: expected list"]),
        ("object", {}, []),
        ("object", [], ["v: expected object"]),
        ("person", "a@example.com", []),
        ("person", "a", ["v: expected person"]),
        ({"type": "number", "one_of": [1, 2]}, 2, []),
        ({"type": "number", "one_of": [1, 2]}, 2.0, []),
        ({"type": "number", "one_of": [1, 2]}, True, ["v: expected number"]),
        ({"type": "boolean", "one_of": [True]}, False, ["v: expected one of True"]),
        ({"type": "list", "items": "number"}, [1, "x", 3], ["v[1]: expected number"]),
        ({"type": "list", "items": {"type": "list", "items": "date"}}, [["2026-01-01", "no"]], ["v[0][1]: expected date"]),
    ],
)
def test_check_value(spec, value, issues):
    assert check_value(spec, value, "v") == issues


def test_check_fields_reports_missing_optional_and_undeclared():
    declared = {"a": "string", "b": {"type": "number", "optional": True}}
    assert check_fields(declared, {}, "output") == ["output.a: missing"]
    assert check_fields(declared, {"a": "x", "c": 1}, "output") == ["output.c: not declared"]
    assert check_fields(None, {"x": 1}, "inputs") == ["inputs.x: not declared"]


def test_parse_datetime_normalises_offsets():
    assert parse_datetime("2026-01-01T00:00:00+01:00") == parse_datetime("2025-12-31T23:00:00Z")
    assert parse_datetime("2026-01-01T00:00:00z") is not None
    assert parse_datetime(20260101) is None


def test_check_submission_evidence_and_routes():
    definition = compile_definition({
        "name": "p", "description": "d",
        "steps": [
            {"id": "a", "agent": "x", "evidence": ["file"], "next": ["b", {"to": "c", "when": "w"}]},
            {"id": "b", "finish": "b"}, {"id": "c", "finish": "c"},
        ],
    })
    step = definition["a"]
    issues = check_submission(step, output={}, evidence=[{"kind": "link", "ref": "l"}], summary="s", next_step=None,
                              reason=None, require_summary=True, file_problems={})
    assert issues == ["evidence: file required", "next: required, one of b, c", "reason: required"]
    ok = check_submission(step, output={}, evidence=[{"kind": "file", "ref": "f_1"}], summary=None, next_step="c",
                          reason="why", require_summary=False, file_problems={})
    assert ok == []
