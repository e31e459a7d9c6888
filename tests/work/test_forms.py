"""Typed controls from declared fields, reading them back as the JSON values a submission holds, and what is
wrong with them in words beside the input that holds it."""

import pytest
from django.http import QueryDict

from runs.acceptance import check_fields
from work.cells import Problem, parse_number, phrase
from work.forms import (
    Members,
    apply_change,
    controls_for,
    field_label,
    place_problems,
    read_values,
    summary,
    widget_for,
)

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
    """A form as a browser sends it: `o-<key>`, a list for a repeated name; `__` stands for `-` in a key."""
    data = QueryDict(mutable=True)
    for key, value in values.items():
        name = "o-" + key.replace("__", "-")
        if isinstance(value, list):
            data.setlist(name, value)
        else:
            data[name] = value
    return data


def lines(field: str, *texts: str, columns: int | None = None) -> dict:
    """The inputs of a list of plain values, one line a text: `<field>-row` and `<field>-<i>-0`."""
    data = {f"{field}__row": [str(i) for i in range(len(texts))]}
    data.update({f"{field}__{i}__0": text for i, text in enumerate(texts)})
    if columns is not None:
        data[f"{field}__col"] = [str(j) for j in range(columns)]
    return data


def records(field: str, fields: list[tuple[str, str]], *rows: tuple[str, ...], single: bool = False) -> dict:
    """The inputs of a list of objects (or one object): named fields with their kinds, then the lines."""
    data = {f"{field}__col": [str(j) for j in range(len(fields))]}
    for j, (name, kind) in enumerate(fields):
        data[f"{field}__col__{j}__name"] = name
        data[f"{field}__col__{j}__kind"] = kind
    if not single:
        data[f"{field}__row"] = [str(i) for i in range(len(rows))]
    for i, row in enumerate(rows):
        data.update({f"{field}__{i}__{j}": text for j, text in enumerate(row)})
    return data


def everyone(*emails):
    """A Members check that knows these addresses, and counts its look-ups."""
    known = {e.lower() for e in emails}

    def look(asked: set[str]) -> set[str]:
        look.calls.append(asked)
        return asked & known

    look.calls = []
    return Members(organization="Acme", known=look)


def test_each_type_gets_its_control():
    widgets = {name: widget_for({"type": s} if isinstance(s, str) else s) for name, s in DECLARED.items()}
    assert widgets == {
        "name": "text", "amount": "number", "ok": "checkbox", "maybe": "yesno", "day": "date", "at": "datetime",
        "who": "person", "level": "select", "size": "select", "tags": "rows", "counts": "rows",
        "colours": "choices", "rows": "rows", "anything": "rows", "extra": "record", "note": "text",
    }


def test_a_filled_form_reads_back_as_values_that_pass_acceptance():
    data = posted(
        name="Line one\r\nline two", amount="1250.50", ok="on", maybe="false", day="2026-03-01",
        at="2026-03-01T09:30", at__offset="+05:30", who="a@example.com", level='"high"', size="2",
        colours=['"red"', '"blue"'],
        **lines("tags", "a", "", " b "), **lines("counts", "1", "2.5"),
        **records("rows", [("merchant", "text"), ("amount", "number"), ("paid", "yesno"), ("on", "date")],
                  ("Cafe", "12.50", "true", "2026-02-01"), ("", "", "", ""), ("Taxi", "30", "", "")),
        **lines("anything", "[1, [2]]", '{"k": 1}', columns=1), anything__col__0__kind="json",
        **records("extra", [("po", "text"), ("lines", "json")], ("PO-7", '["a"]'), single=True),
    )
    values, problems = read_values(controls_for(DECLARED, "o", data=data))
    assert problems == {}
    assert values == {
        "name": "Line one\nline two", "amount": 1250.5, "ok": True, "maybe": False, "day": "2026-03-01",
        "at": "2026-03-01T09:30:00+05:30", "who": "a@example.com", "level": "high", "size": 2,
        "tags": ["a", "b"], "counts": [1, 2.5], "colours": ["red", "blue"],
        "rows": [{"merchant": "Cafe", "amount": 12.5, "paid": True, "on": "2026-02-01"},
                 {"merchant": "Taxi", "amount": 30}],
        "anything": [[1, [2]], {"k": 1}], "extra": {"po": "PO-7", "lines": ["a"]},
    }
    assert check_fields(DECLARED, values, "output") == []


def test_blank_optional_fields_are_left_out_and_an_unticked_checkbox_is_false():
    values, _ = read_values(controls_for(DECLARED, "o", data=posted()))
    assert "note" not in values and "maybe" not in values and "name" not in values
    assert values["ok"] is False and values["tags"] == [] and values["colours"] == [] and values["rows"] == []
    assert values["extra"] == {}


def test_every_cell_that_does_not_parse_is_a_problem_in_words_and_its_field_goes_on_as_null():
    data = posted(amount="twelve", day="2026-02-30",
                  **lines("counts", "1", "", "lots", "2"),
                  **records("rows", [("merchant", "text"), ("amount", "number")], ("Cafe", "ten"), ("Taxi", "3")),
                  **records("extra", [("n", "json")], ("{nope",), single=True))
    controls = controls_for(DECLARED, "o", data=data)
    values, problems = read_values(controls)
    assert {name: [p.words for p in found] for name, found in problems.items()} == {
        "amount": ["must be a number"], "day": ["must be a date (year-month-day)"],
        "counts": ["must be a number"], "rows": ["must be a number"],
        "extra": ["is not valid JSON (Expecting property name enclosed in double quotes)"],
    }
    assert values["amount"] is None and values["counts"] is None and values["rows"] is None
    assert values["extra"] is None and "name" not in values
    # the engine refuses every null, so the call fails with every other field's issues too
    assert "output.counts: expected list" in check_fields(DECLARED, values, "output")
    placed = place_problems(controls, problems, check_fields(DECLARED, values, "output"), "output")
    by_name = {c.name: c for c in controls}
    assert by_name["amount"].errors == ["Amount must be a number"]
    counts = by_name["counts"].grid.rows
    assert counts[2].cells[0].errors == ["Line 3 must be a number"] and counts[2].cells[0].value == "lots"
    assert by_name["rows"].grid.rows[0].cells[1].errors == ["Line 1: amount must be a number"]
    assert by_name["extra"].grid.rows[0].cells[0].errors[0].startswith("n is not valid JSON")
    said = [line["text"] for line in summary(controls, placed)]
    assert "Counts, line 3 must be a number" in said and "Rows, line 1: amount must be a number" in said
    assert "Name is required" in said  # the engine's issue about another field, in words
    assert not [s for s in said if "expected" in s]  # the engine's words about these fields are not repeated
    assert len(said) == len(set(said))


def test_numbers_are_read_exactly():
    for text, number in [("12", 12), ("-3", -3), ("1e3", 1000.0), ("0.1", 0.1),
                         ("123456789012345678901234567890", 123456789012345678901234567890),
                         ("nan", None), ("inf", None), ("", None), ("1,5", None)]:
        assert parse_number(text) == number


def test_initial_values_fill_the_controls_and_read_back_the_same():
    initial = {
        "ok": True, "level": "low", "at": "2026-01-02T03:04:05+02:00", "tags": ["x", "y"], "counts": [3, 0.5],
        "rows": [{"merchant": "Cafe", "amount": 12.5, "paid": False}, {"merchant": "Taxi", "on": "2026-01-02"}],
        "anything": [1, 2], "extra": {"a": 1, "b": [1]},
    }
    controls = {c.name: c for c in controls_for(DECLARED, "o", initial=initial)}
    assert controls["ok"].value == "on" and controls["level"].value == '"low"'
    assert controls["at"].value == "2026-01-02T03:04:05" and controls["at"].offset == "+02:00"
    assert [r.cells[0].value for r in controls["tags"].grid.rows] == ["x", "y"]
    rows = controls["rows"].grid
    assert [(c.name, c.kind) for c in rows.columns] == [("merchant", "text"), ("amount", "number"),
                                                        ("paid", "yesno"), ("on", "date")]
    assert [c.value for c in rows.rows[1].cells] == ["Taxi", "", "", "2026-01-02"]
    assert controls["anything"].grid.columns[0].kind == "number"
    assert [(c.name, c.kind) for c in controls["extra"].grid.columns] == [("a", "number"), ("b", "json")]
    values, problems = read_values(list(controls.values()))
    assert problems == {}
    assert {k: values[k] for k in initial if k not in ("ok", "level", "at")} == {
        k: v for k, v in initial.items() if k not in ("ok", "level", "at")}


def test_adding_and_removing_lines_and_fields_keeps_what_was_typed():
    data = posted(**records("rows", [("merchant", "text"), ("amount", "number")], ("Cafe", "12"), ("Taxi", "30")))
    controls = controls_for({"rows": DECLARED["rows"]}, "o", data=data)
    assert apply_change(controls, "o-rows:add-row")
    grid = controls[0].grid
    assert [[c.value for c in r.cells] for r in grid.rows] == [["Cafe", "12"], ["Taxi", "30"], ["", ""]]
    assert grid.rows[2].cells[0].focus  # the new line is where the keyboard goes
    assert apply_change(controls, "o-rows:remove-row:0")
    assert apply_change(controls, "o-rows:add-col")
    assert [c.name for c in grid.columns] == ["merchant", "amount", ""]
    assert apply_change(controls, "o-rows:remove-col:0")
    assert [[c.value for c in r.cells] for r in grid.rows] == [["30", ""], ["", ""]]
    assert [(c.name, c.kind) for c in grid.columns] == [("amount", "number"), ("", "text")]
    # a button for another field, or for a line that was never sent, changes nothing
    assert not apply_change(controls, "o-other:add-row") and not apply_change(controls, "o-rows:remove-row:9")
    assert not apply_change(controls, "o-rows:remove-row:x") and not apply_change(controls, None)


def test_the_lines_sent_are_read_in_the_order_sent_whatever_their_numbers():
    data = posted(**{"tags__row": ["7", "2", "x"], "tags__7__0": "seven", "tags__2__0": "two", "tags__x__0": "no"})
    values, _ = read_values(controls_for({"tags": DECLARED["tags"]}, "o", data=data))
    assert values == {"tags": ["seven", "two"]}


def test_a_field_of_an_object_needs_a_name_and_a_name_is_used_once():
    data = posted(**records("rows", [("merchant", "text"), ("", "text"), ("merchant", "number"), ("", "text")],
                            ("Cafe", "x", "1", "")))
    controls = controls_for({"rows": DECLARED["rows"]}, "o", data=data)
    _values, problems = read_values(controls)
    assert [p.words for p in problems["rows"]] == ["Field 2 needs a name", "Field 3 has the same name as field 1"]
    place_problems(controls, problems, [], "o")
    assert [c.errors for c in controls[0].grid.columns] == [[], ["Field 2 needs a name"],
                                                            ["Field 3 has the same name as field 1"], []]
    assert summary(controls, {})[0] == {"text": "Rows: Field 2 needs a name", "href": "#f-o-rows-col-1-name"}


def test_an_address_that_names_no_member_is_refused_in_one_look_up():
    declared = {"who": "person", "team": {"type": "list", "items": "person"}}
    data = posted(who="Nobody@Example.com", **lines("team", "ann@example.com", "ghost@example.com", "not an address"))
    members = everyone("ann@example.com")
    controls = controls_for(declared, "o", data=data)
    values, problems = read_values(controls, members)
    assert members.known.calls == [{"nobody@example.com", "ann@example.com", "ghost@example.com"}]
    assert values == {"who": None, "team": None}
    place_problems(controls, problems, [], "o")
    assert controls[0].errors == ["Nobody@Example.com is not a member of Acme"]
    team = controls[1].grid.rows
    assert team[0].cells[0].errors == []
    assert team[1].cells[0].errors == ["Line 2: ghost@example.com is not a member of Acme"]
    assert team[2].cells[0].errors == ["Line 3 must be an email address"]
    assert [line["text"] for line in summary(controls, {})] == [
        "Who: Nobody@Example.com is not a member of Acme", "Team, line 2: ghost@example.com is not a member of Acme",
        "Team, line 3 must be an email address"]


def test_a_member_is_accepted_whatever_the_case_of_the_address():
    values, problems = read_values(controls_for({"who": "person"}, "o", data=posted(who="Ann@Example.com")),
                                   everyone("ann@example.com"))
    assert values == {"who": "Ann@Example.com"} and problems == {}


def test_engine_issues_are_placed_on_the_line_they_name_counting_only_lines_sent():
    data = posted(**lines("counts", "", "1", "", "2"), **lines("nested", "[1]", '["x"]'))
    declared = {"counts": DECLARED["counts"], "nested": {"type": "list", "items": {"type": "list", "items": "number"}}}
    controls = controls_for(declared, "o", data=data)
    values, problems = read_values(controls)
    assert values == {"counts": [1, 2], "nested": None}  # the second line's item is no number: checked here
    assert [p.words for p in problems["nested"]] == ["item 1 must be a number"]
    placed = place_problems(controls, problems, ["o.counts[1]: expected one of 1", "o.nested[1][0]: expected number",
                                                 "evidence: file required", "o: too big"], "o", ("evidence",))
    assert controls[0].grid.rows[3].cells[0].errors == ["Line 4 must be one of 1"]
    assert controls[1].grid.rows[1].cells[0].errors == ["Line 2: item 1 must be a number"]  # once, not twice
    assert placed == {"evidence": ["evidence: file required"], "": ["o: too big"]}


def test_issues_are_placed_beside_their_fields_by_the_longest_name():
    controls = controls_for({"amount": "number", "amountUsd": "number", "counts": DECLARED["counts"]}, "o",
                            data=posted(**lines("counts", "1", "2")))
    read_values(controls)
    placed = place_problems(
        controls, {},
        ["o.amountUsd: expected number", "o.amount: missing", "o.counts[1]: expected number", "o.ghost: not declared",
         "evidence f_1: not found", "evidence: file required", "next: required, one of a, b", "reason: required"],
        "o", ("evidence", "next", "reason"),
    )
    assert [c.errors for c in controls[:2]] == [["Amount is required"], ["Amount USD must be a number"]]
    assert controls[2].grid.rows[1].cells[0].errors == ["Line 2 must be a number"]
    assert placed == {"": ["o.ghost: not declared"], "evidence": ["evidence f_1: not found", "evidence: file required"],
                      "next": ["next: required, one of a, b"], "reason": ["reason: required"]}


@pytest.mark.parametrize(("message", "words"), [
    ("missing", ("is required", False)),
    ("expected number", ("must be a number", False)),
    ("expected person", ("must be an email address", False)),
    ("expected one of low, high", ("must be one of low, high", False)),
    ("[2]: expected date", ("item 3 must be a date (year-month-day)", True)),
    ("not declared", ("is not a field of this form", False)),
])
def test_acceptance_messages_read_as_words(message, words):
    assert phrase(message) == words


def test_a_problem_names_its_line_and_field_as_the_person_counts_them():
    cell = Problem("must be a number", line=2, part="Amount")
    assert cell.beside("Lines") == "Line 2: Amount must be a number"
    assert cell.summary("Lines") == "Lines, line 2: Amount must be a number"
    assert Problem("x@y.z is not a member of Acme", True).beside("Manager") == "x@y.z is not a member of Acme"
    assert Problem("x@y.z is not a member of Acme", True).summary("Manager") == "Manager: x@y.z is not a member of Acme"
    assert Problem("must be a number", part="PO").summary("Details") == "Details: PO must be a number"


def test_field_labels_are_words():
    assert field_label("totalUsd") == "Total USD"
    assert field_label("needed_by") == "Needed by"
    assert field_label("rfpId") == "RFP ID"
    assert field_label("refund_settled_and_reconciled") == "Refund settled and reconciled"
    assert field_label("idle") == "Idle"  # a word that starts like one is not one
    assert field_label("URL") == "URL"


def test_more_lines_than_a_form_takes_are_refused_in_words_not_dropped():
    from work.grids import MAX_LINES

    data = posted(**lines("tags", *[f"t{i}" for i in range(MAX_LINES + 1)]))
    controls = controls_for({"tags": DECLARED["tags"]}, "o", data=data)
    values, problems = read_values(controls)
    assert values == {"tags": None}
    assert [p.words for p in problems["tags"]] == [
        f"takes at most {MAX_LINES} lines of 50 fields each; attach a longer list as a file"]


def test_text_no_database_stores_is_placed_on_the_cell_that_holds_it():
    data = posted(**records("rows", [("merchant", "text")], ("Cafe",), ("Ta\x00xi",)),
                  **records("extra", [("po", "text")], ("P\x00O",), single=True))
    controls = controls_for({"rows": DECLARED["rows"], "extra": DECLARED["extra"]}, "o", data=data)
    read_values(controls)
    place_problems(controls, {}, ["o.rows[1].merchant: holds a NUL character", "o.extra.po: holds a NUL character"],
                   "o")
    assert controls[0].grid.rows[1].cells[0].errors == ["Line 2: merchant holds a NUL character"]
    assert controls[1].grid.rows[0].cells[0].errors == ["po holds a NUL character"]
