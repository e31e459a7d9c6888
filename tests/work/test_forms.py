"""Typed controls from declared fields, and reading them back as the JSON values a submission holds."""

import pytest
from django.http import QueryDict

from runs.acceptance import check_fields
from work.forms import controls_for, field_label, parse_number, read_values, sort_issues, widget_for

DECLARED = {
    "name": "string",
    "amount": "number",
    "ok": "boolean",
    "maybe": {"type": "boolean", "optional": True},
    "day": "date",
    "at": "datetime",
    "who": "person",
    "level": {"type": "string", "one_of": ["low", "high"]},
    "size": {"type": "number", "one_of": [1, 2]},
    "tags": {"type": "list", "items": "string"},
    "counts": {"type": "list", "items": "number"},
    "colours": {"type": "list", "items": {"type": "string", "one_of": ["red", "blue"]}},
    "rows": {"type": "list", "items": "object"},
    "anything": "list",
    "extra": "object",
    "note": {"type": "string", "optional": True},
}


def posted(**values) -> QueryDict:
    data = QueryDict(mutable=True)
    for key, value in values.items():
        if isinstance(value, list):
            data.setlist(f"o-{key}", value)
        else:
            data[f"o-{key}" if not key.endswith("_offset") else f"o-{key[:-7]}-offset"] = value
    return data


def test_each_type_gets_its_control():
    widgets = {name: widget_for({"type": s} if isinstance(s, str) else s) for name, s in DECLARED.items()}
    assert widgets == {
        "name": "text", "amount": "number", "ok": "checkbox", "maybe": "yesno", "day": "date", "at": "datetime",
        "who": "email", "level": "select", "size": "select", "tags": "lines", "counts": "lines",
        "colours": "choices", "rows": "json", "anything": "json", "extra": "json", "note": "text",
    }


def test_a_filled_form_reads_back_as_values_that_pass_acceptance():
    data = posted(name="Line one\r\nline two", amount="1250.50", ok="on", maybe="false", day="2026-03-01",
                  at="2026-03-01T09:30", at_offset="+05:30", who="a@example.com", level='"high"', size="2",
                  tags="a\n\n b \n", counts="1\n2.5", colours=['"red"', '"blue"'], rows='[{"x": 1}]',
                  anything="[1, [2]]", extra='{"k": "v"}')
    values, problems = read_values(controls_for(DECLARED, "o", data=data))
    assert problems == {}
    assert values == {
        "name": "Line one\nline two", "amount": 1250.5, "ok": True, "maybe": False, "day": "2026-03-01",
        "at": "2026-03-01T09:30:00+05:30", "who": "a@example.com", "level": "high", "size": 2,
        "tags": ["a", "b"], "counts": [1, 2.5], "colours": ["red", "blue"], "rows": [{"x": 1}],
        "anything": [1, [2]], "extra": {"k": "v"},
    }
    assert check_fields(DECLARED, values, "output") == []


def test_blank_optional_fields_are_left_out_and_an_unticked_checkbox_is_false():
    values, _ = read_values(controls_for(DECLARED, "o", data=posted()))
    assert "note" not in values and "maybe" not in values and "name" not in values
    assert values["ok"] is False and values["tags"] == [] and values["colours"] == []


def test_what_does_not_parse_goes_on_as_text_so_acceptance_reports_it():
    data = posted(amount="twelve", counts="1\nlots", extra="{nope", at="2026-03-01T09:30:15")
    values, problems = read_values(controls_for(DECLARED, "o", data=data))
    assert problems == {"amount": "not a number", "counts": "not a number: lots",
                        "extra": "not valid JSON (Expecting property name enclosed in double quotes)"}
    assert values["amount"] == "twelve" and values["counts"] == [1, "lots"] and values["extra"] == "{nope"
    assert values["at"] == "2026-03-01T09:30:15Z"
    issues = check_fields(DECLARED, values, "output")
    assert "output.amount: expected number" in issues and "output.counts[1]: expected number" in issues
    assert "output.extra: expected object" in issues


@pytest.mark.parametrize("text, number", [("12", 12), ("-3", -3), ("1e3", 1000.0), ("0.1", 0.1),
                                          ("123456789012345678901234567890", 123456789012345678901234567890),
                                          ("nan", None), ("inf", None), ("", None), ("1,5", None)])
def test_numbers_are_read_exactly(text, number):
    assert parse_number(text) == number


def test_initial_values_fill_the_controls():
    controls = {c.name: c for c in controls_for(DECLARED, "o", initial={
        "ok": True, "level": "low", "tags": ["x", "y"], "extra": {"a": 1}, "at": "2026-01-02T03:04:05+02:00"})}
    assert controls["ok"].value == "on" and controls["level"].value == '"low"'
    assert controls["tags"].value == "x\ny" and '"a": 1' in controls["extra"].value
    assert controls["at"].value == "2026-01-02T03:04:05" and controls["at"].offset == "+02:00"


def test_issues_are_placed_beside_their_fields():
    placed = sort_issues(
        ["output.amount: expected number", "output.counts[1]: expected number", "output.ghost: not declared",
         "evidence f_1: not found", "evidence: file required", "next: required, one of a, b", "reason: required",
         "run data: too big"],
        "output", {"amount", "counts"}, ("evidence", "next", "reason"),
    )
    assert placed == {
        "amount": ["output.amount: expected number"], "counts": ["output.counts[1]: expected number"],
        "": ["output.ghost: not declared", "run data: too big"],
        "evidence": ["evidence f_1: not found", "evidence: file required"],
        "next": ["next: required, one of a, b"], "reason": ["reason: required"],
    }


def test_field_labels_are_words():
    assert field_label("totalUsd") == "Total USD"
    assert field_label("needed_by") == "Needed by"
    assert field_label("rfpId") == "RFP ID"
    assert field_label("refund_settled_and_reconciled") == "Refund settled and reconciled"
    assert field_label("idle") == "Idle"  # a word that starts like one is not one
    assert field_label("URL") == "URL"
