"""Splitting PROCESS.md and reading its frontmatter as YAML 1.2 with the core schema (spec §2.1)."""

import dataclasses
import time

import pytest

from processes.management.commands.demo_data import find_fixtures
from processes.parsing import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NODES, ParseResult, parse_process

FIXTURES = find_fixtures()  # the repository's copy, or $AGENTPROCESS_FIXTURES


def value(yaml_value: str) -> object:
    """Parse `v: <yaml_value>` and return what v became, failing on any issue."""
    result = parse_process(f"---\nv: {yaml_value}\n---\n")
    assert result.issues == []
    return result.frontmatter["v"]


def issues(text: str | bytes) -> list[str]:
    """Parse a document that must be refused, and return its issues."""
    result = parse_process(text)
    assert result.frontmatter is None
    assert result.issues
    return result.issues


# Splitting: the delimiter lines and the body, byte for byte.


def test_split_frontmatter_and_body():
    result = parse_process("---\nname: x\n---\n# Title\n\nText.\n")
    assert result == ParseResult(frontmatter={"name": "x"}, body="# Title\n\nText.\n", issues=[])


def test_body_keeps_crlf_and_the_delimiters_accept_crlf():
    result = parse_process(b"---\r\nname: x\r\n---\r\n# Title\r\n\r\nText.\r\n")
    assert result.issues == []
    assert result.frontmatter == {"name": "x"}
    assert result.body == "# Title\r\n\r\nText.\r\n"


def test_body_without_trailing_newline():
    assert parse_process("---\nname: x\n---\nlast line").body == "last line"


def test_closing_delimiter_at_end_of_file_gives_empty_body():
    result = parse_process("---\nname: x\n---")
    assert result.issues == []
    assert result.body == ""


def test_body_starts_after_the_newline_of_the_closing_line():
    assert parse_process("---\nname: x\n---\n\n\n  indented\n").body == "\n\n  indented\n"


def test_later_delimiter_lines_belong_to_the_body():
    assert parse_process("---\nname: x\n---\nA\n---\nB: c\n").body == "A\n---\nB: c\n"


def test_body_keeps_trailing_spaces_tabs_and_unicode():
    body = "Café \t \n\u2028 ✓  \n"
    assert parse_process("---\nname: x\n---\n" + body).body == body


def test_delimiter_must_be_exact():
    assert issues("--- \nname: x\n---\n") == [
        "document: line 1: must be exactly '---', which opens the frontmatter"
    ]
    assert issues("----\nname: x\n---\n") == [
        "document: line 1: must be exactly '---', which opens the frontmatter"
    ]
    assert issues("\n---\nname: x\n---\n") == [
        "document: line 1: must be exactly '---', which opens the frontmatter"
    ]
    assert issues("# Title\n") == ["document: line 1: must be exactly '---', which opens the frontmatter"]


def test_closing_delimiter_must_be_exact():
    # '--- ' and '...' do not close the frontmatter, so this one is never closed.
    assert issues("---\nname: x\n--- \n...\n") == [
        "document: the frontmatter opened on line 1 is never closed by a line '---'"
    ]
    assert issues("---") == ["document: the frontmatter opened on line 1 is never closed by a line '---'"]


def test_empty_document():
    assert issues("") == ["document: is empty; a PROCESS.md starts with a line '---'"]
    assert issues(b"") == ["document: is empty; a PROCESS.md starts with a line '---'"]


def test_empty_frontmatter():
    assert issues("---\n---\nBody\n") == [
        "frontmatter: is empty; it must be a mapping with name, description and steps"
    ]
    assert issues("---\n# only a comment\n---\n") == [
        "frontmatter: is empty; it must be a mapping with name, description and steps"
    ]


def test_body_is_returned_even_when_the_frontmatter_is_refused():
    result = parse_process("---\na: 1\na: 2\n---\nBody\n")
    assert result.frontmatter is None
    assert result.body == "Body\n"


@pytest.mark.parametrize(
    ("text", "kind"),
    [("- a\n- b", "a list"), ("just text", "a string"), ("5", "a number"), ("true", "a boolean")],
)
def test_frontmatter_must_be_a_mapping(text, kind):
    assert issues(f"---\n{text}\n---\n") == [
        f"frontmatter: must be a mapping with name, description and steps, not {kind}"
    ]


def test_byte_order_mark_is_refused():
    expected = [
        "document: starts with a byte order mark; save it as UTF-8 without one so it starts with '---'"
    ]
    assert issues(b"\xef\xbb\xbf---\nname: x\n---\n") == expected
    assert issues("\ufeff---\nname: x\n---\n") == expected


def test_non_utf8_bytes_are_refused():
    assert issues(b"---\nname: caf\xe9\n---\n") == [
        "document: byte 13 is not valid UTF-8; save the file as UTF-8"
    ]
    assert issues(b"\xff\xfe-\x00-\x00-\x00") == [
        "document: byte 0 is not valid UTF-8; save the file as UTF-8"
    ]


def test_lone_surrogate_in_text_is_refused():
    assert issues("---\nname: \ud800\n---\n") == [
        "document: character 10 is a lone surrogate, which is not valid Unicode"
    ]


def test_bytes_and_text_give_the_same_result():
    text = (FIXTURES / "vendor-check" / "PROCESS.md").read_text(encoding="utf-8")
    assert parse_process(text) == parse_process(text.encode("utf-8"))


def test_other_input_types_are_issues_not_exceptions():
    assert parse_process(None).issues == ["document: must be text or bytes, not NoneType"]  # type: ignore[arg-type]
    assert parse_process(5).issues == ["document: must be text or bytes, not int"]  # type: ignore[arg-type]
    assert parse_process(bytearray(b"---\na: 1\n---\n")).frontmatter == {"a": 1}


def test_result_is_frozen():
    result = parse_process("---\na: 1\n---\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.body = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.iterdir()))
def test_every_fixture_parses(name):
    result = parse_process((FIXTURES / name / "PROCESS.md").read_bytes())
    assert result.issues == []
    assert result.frontmatter["name"] == name
    assert result.body.startswith("\n# ")


# The YAML 1.2 core schema (YAML 1.2.2 §10.3): what stays a string.


@pytest.mark.parametrize(
    "text", ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "On", "OFF", "Y", "N", "TrUe", "nULL"]
)
def test_yaml_11_booleans_and_nulls_stay_strings(text):
    assert value(text) == text


@pytest.mark.parametrize("text", ["2026-10-06", "2026-10-06T09:00:00Z", "2026-10-06 09:00:00", "2002-12-14"])
def test_dates_and_timestamps_stay_strings(text):
    assert value(text) == text


@pytest.mark.parametrize("text", ["1:30", "190:20:30", "-1:30", "1:30.5"])
def test_sexagesimal_numbers_stay_strings(text):
    assert value(text) == text


@pytest.mark.parametrize(
    "text", ["1_000", "0b101", "0o", "0x", "+0x1F", "0O17", "0X1F", "1e", "1.2.3", "=", "~x"]
)
def test_yaml_11_number_forms_stay_strings(text):
    assert value(text) == text


@pytest.mark.parametrize("text", ["'yes'", '"true"', "'17'", "'.inf'", '"null"', "'0o17'"])
def test_quoted_scalars_are_strings(text):
    assert value(text) == text[1:-1]


def test_block_scalars_are_strings():
    assert value("|-\n  true\n  17") == "true\n17"
    assert value(">\n  a\n  b") == "a b\n"


# The core schema: what becomes a number, a boolean or null.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0o17", 15),
        ("0x1F", 31),
        ("0x1f", 31),
        ("017", 17),
        ("0", 0),
        ("-5", -5),
        ("+12", 12),
        ("9007199254740993", 9007199254740993),
    ],
)
def test_integers(text, expected):
    result = value(text)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.5", 1.5), (".5", 0.5), ("-.5", -0.5), ("1e3", 1000.0), ("1.", 1.0), ("2.5E-3", 0.0025)],
)
def test_floats(text, expected):
    result = value(text)
    assert result == expected
    assert type(result) is float


@pytest.mark.parametrize(
    ("text", "expected"),
    [(t, True) for t in ("true", "True", "TRUE")] + [(t, False) for t in ("false", "False", "FALSE")],
)
def test_booleans(text, expected):
    assert value(text) is expected


@pytest.mark.parametrize("text", ["null", "Null", "NULL", "~", ""])
def test_nulls(text):
    assert value(text) is None


@pytest.mark.parametrize("text", [".inf", "-.inf", "+.INF", ".Inf", ".nan", ".NaN", ".NAN"])
def test_infinity_and_nan_are_refused(text):
    assert issues(f"---\nv: {text}\n---\n") == [
        f"frontmatter: line 2: '{text}' is not a finite number and cannot be hashed; quote it for text"
    ]


def test_float_overflow_is_refused():
    assert issues("---\nv: 1e999\n---\n") == [
        "frontmatter: line 2: '1e999' is too large to be a finite number; quote it for text"
    ]


def test_integer_with_too_many_digits_is_refused():
    assert issues("---\nv: " + "9" * 5000 + "\n---\n") == [
        "frontmatter: line 2: the number '" + "9" * 40 + "…' has too many digits"
    ]
    assert issues("---\nv: 0x" + "f" * 5000 + "\n---\n")[0].endswith("has too many digits")


# Tags: only the core ones.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!!str 17", "17"),
        ("!!str true", "true"),
        ('!!int "17"', 17),
        ("!!int 0x1F", 31),
        ("!!float 1", 1.0),
        ("!!float 2.5", 2.5),
        ("!!bool true", True),
        ("!!null null", None),
        ("!!null", None),
        ("! 12", "12"),
        ("!!map {a: 1}", {"a": 1}),
        ("!!seq [1]", [1]),
    ],
)
def test_core_tags_are_allowed(text, expected):
    result = value(text)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("!!python/object:os.system x", "!!python/object:os.system"),
        ("!!timestamp 2026-01-01", "!!timestamp"),
        ("!!binary aGk=", "!!binary"),
        ("!custom x", "!custom"),
        ("!<tag:example.com,2026:x> y", "tag:example.com,2026:x"),
    ],
)
def test_other_scalar_tags_are_refused(text, tag):
    assert issues(f"---\nv: {text}\n---\n") == [
        f"frontmatter: line 2: tag {tag} is not allowed; only !!str, !!int, !!float, !!bool, !!null, !!map and "
        "!!seq are"
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!!set {a: null}", "tag !!set is not allowed on a mapping"),
        ("!!omap [a: 1]", "tag !!omap is not allowed on a sequence"),
        ("!!seq {a: 1}", "tag !!seq is not allowed on a mapping"),
        ("!!map [a]", "tag !!map is not allowed on a sequence"),
        ("!!bool yes", "'yes' is not a valid !!bool value"),
        ("!!int 1.5", "'1.5' is not a valid !!int value"),
        ("!!null x", "'x' is not a valid !!null value"),
    ],
)
def test_misapplied_tags_are_refused(text, message):
    assert issues(f"---\nv: {text}\n---\n") == [f"frontmatter: line 2: {message}"]


# Keys: strings only, each once; merge keys do not exist.


def test_duplicate_keys_are_refused_naming_key_and_line():
    assert issues("---\nname: x\ndescription: d\nname: y\n---\n") == [
        "frontmatter: line 4: duplicate key 'name'"
    ]


def test_every_duplicate_key_is_reported_including_nested_ones():
    text = "---\nname: x\nname: y\nsteps:\n  - {id: a, id: b}\n  - id: c\n    agent: x\n    agent: y\n---\n"
    assert issues(text) == [
        "frontmatter: line 3: duplicate key 'name'",
        "frontmatter: line 5: duplicate key 'id'",
        "frontmatter: line 8: duplicate key 'agent'",
    ]


def test_keys_that_differ_only_by_quoting_are_duplicates():
    assert issues("---\nname: x\n'name': y\n---\n") == ["frontmatter: line 3: duplicate key 'name'"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1: a", "mapping key 1 is not a string; quote it"),
        ("true: a", "mapping key true is not a string; quote it"),
        ("null: a", "mapping key null is not a string; quote it"),
        ("1.5: a", "mapping key 1.5 is not a string; quote it"),
        ("[a, b]: c", "a mapping key must be a string, not a list"),
        ("{a: b}: c", "a mapping key must be a string, not a mapping"),
        ("? [a]\n: c", "a mapping key must be a string, not a list"),
    ],
)
def test_non_string_keys_are_refused(text, message):
    assert issues(f"---\n{text}\n---\n") == [f"frontmatter: line 2: {message}"]


def test_quoted_number_keys_are_strings():
    assert parse_process("---\n'1': a\n---\n").frontmatter == {"1": "a"}


def test_merge_key_is_a_plain_string_key():
    # The core schema has no merge keys; '<<' is kept as an ordinary key for validation to refuse.
    result = parse_process("---\n<<: {name: x}\nname: y\n---\n")
    assert result.issues == []
    assert result.frontmatter == {"<<": {"name": "x"}, "name": "y"}


# Anchors and aliases are refused, so no alias bomb can expand.


def test_anchor_is_refused():
    assert issues("---\na: &base 1\n---\n") == ["frontmatter: line 2: anchors (&base) are not allowed"]


def test_alias_is_refused():
    assert issues("---\na: *base\n---\n") == ["frontmatter: line 2: aliases (*base) are not allowed"]


def test_anchor_and_alias_used_for_a_merge_are_refused():
    text = "---\nbase: &b {type: string}\nfield:\n  <<: *b\n---\n"
    assert issues(text) == ["frontmatter: line 2: anchors (&b) are not allowed"]


def test_billion_laughs_is_refused_quickly():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 10):
        prev, cur = chr(ord("a") + n - 1), chr(ord("a") + n)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    started = time.process_time()
    assert issues("---\n" + "\n".join(lines) + "\n---\n") == [
        "frontmatter: line 2: anchors (&a) are not allowed"
    ]
    assert time.process_time() - started < 1


# Bounds: size, depth and node count, each refused before it costs much.


def test_size_cap_is_checked_before_yaml_parsing():
    huge = b"---\na: [" + b"[" * (MAX_DOCUMENT_BYTES) + b"\n---\n"
    started = time.process_time()
    assert issues(huge) == [
        f"document: is larger than the limit of {MAX_DOCUMENT_BYTES} bytes (at least {len(huge)})"
    ]
    assert time.process_time() - started < 0.5


def test_size_cap_counts_bytes_not_characters():
    text = "---\na: " + "é" * 600_000 + "\n---\n"  # 1.2 MB as UTF-8, 0.6 M characters
    assert issues(text)[0].startswith(f"document: is larger than the limit of {MAX_DOCUMENT_BYTES} bytes")


def test_max_bytes_can_be_lowered_or_raised():
    text = "---\nname: x\n---\nbody\n"
    assert parse_process(text, max_bytes=len(text)).issues == []
    assert parse_process(text, max_bytes=len(text) - 1).issues == [
        f"document: is larger than the limit of {len(text) - 1} bytes (at least {len(text)})"
    ]
    big = "---\na: '" + "x" * MAX_DOCUMENT_BYTES + "'\n---\n"
    assert parse_process(big, max_bytes=2 * MAX_DOCUMENT_BYTES).issues == []


def test_depth_bomb_in_flow_style_is_refused_quickly():
    started = time.process_time()
    assert issues("---\na: " + "[" * 500_000 + "\n---\n") == [
        f"frontmatter: line 2: nested deeper than {MAX_DEPTH} levels"
    ]
    assert time.process_time() - started < 1


def test_depth_bomb_in_block_style_is_refused():
    text = "---\n" + "".join(" " * level + "a:\n" for level in range(200)) + "---\n"
    assert issues(text) == [f"frontmatter: line {MAX_DEPTH + 2}: nested deeper than {MAX_DEPTH} levels"]


def test_nesting_up_to_the_limit_is_accepted():
    # The frontmatter mapping is level 1, so MAX_DEPTH - 1 lists fit inside it.
    depth = MAX_DEPTH - 1
    result = parse_process("---\na: " + "[" * depth + "]" * depth + "\n---\n")
    assert result.issues == []
    assert issues("---\na: " + "[" * (depth + 1) + "]" * (depth + 1) + "\n---\n") == [
        f"frontmatter: line 2: nested deeper than {MAX_DEPTH} levels"
    ]


def test_node_count_is_bounded():
    text = "---\na: [" + "1," * (MAX_NODES + 10) + "]\n---\n"
    started = time.process_time()
    assert issues(text) == [f"frontmatter: line 2: the frontmatter has more than {MAX_NODES} values"]
    assert time.process_time() - started < 3


# Everything else YAML can go wrong with becomes an issue with a line.


def test_syntax_error_names_the_line():
    assert issues("---\nname: x\nsteps: [a\nb: c\n---\n")[0].startswith("frontmatter: line ")
    assert issues("---\na: b: c\n---\n") == ["frontmatter: line 2: mapping values are not allowed here"]


def test_tab_indentation_is_an_issue():
    assert issues("---\na:\n\tb: 1\n---\n")[0].startswith("frontmatter: line 3: ")


def test_control_character_is_refused():
    assert issues("---\na: b\x00c\n---\n") == [
        "frontmatter: line 2: the character U+0000 is not allowed in YAML"
    ]
    assert issues("---\na: b\x07\n---\n") == [
        "frontmatter: line 2: the character U+0007 is not allowed in YAML"
    ]


def test_second_yaml_document_is_refused():
    assert issues("---\na: 1\n--- b\n---\n") == ["frontmatter: line 3: holds a second YAML document"]


def test_yaml_11_directive_is_refused():
    assert issues("---\n%YAML 1.1\n--- \na: 1\n---\n") == [
        "frontmatter: line 2: declares YAML 1.1; only 1.2 is read"
    ]


def test_yaml_12_directive_is_accepted():
    assert parse_process("---\n%YAML 1.2\n--- \na: yes\n---\n").frontmatter == {"a": "yes"}


def test_every_issue_starts_with_its_place():
    documents = ["", "x", "---\n", "---\na: &x 1\n---\n", "---\n[\n---\n", b"\xc3", "---\n1: a\n---\n"]
    for document in documents:
        for issue in parse_process(document).issues:
            assert issue.startswith(("document: ", "frontmatter: ")), issue
