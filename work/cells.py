"""One typed value as a person types it: the input each type gets, the text read back as JSON, and a JSON
value shown in that input again. Single fields and the cells of list rows share these.

The kinds of input:

- `text`: a textarea that grows with its content (a string may hold several lines).
- `number`: `<input type=number step=any>`; integers stay integers, nothing is rounded.
- `date`: `<input type=date>`.
- `datetime`: `<input type=datetime-local>` beside a UTC-offset select, read as RFC 3339 with the offset.
- `person`: an email input whose suggestions are the organization's members.
- `select`: exactly the `one_of` values, each keeping its JSON type (2 and "2" are different choices).
- `yesno`: Yes, No, or not given.
- `json`: a list or an object inside a cell, written as JSON (spec §2.3 declares no shape for it).
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass

from runs.acceptance import field_spec, is_date, is_person, parse_datetime

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
# Every offset in use somewhere; UTC first because it is the default.
UTC_OFFSETS = ["+00:00"] + [
    f"{sign}{h:02d}:{m:02d}"
    for sign, h, m in sorted(
        {("-", h, 0) for h in range(1, 13)}
        | {("+", h, 0) for h in range(1, 15)}
        | {("-", 3, 30), ("-", 9, 30), ("+", 3, 30), ("+", 4, 30), ("+", 5, 30), ("+", 5, 45),
           ("+", 6, 30), ("+", 9, 30), ("+", 10, 30), ("+", 12, 45)},
        key=lambda o: (-1 if o[0] == "-" else 1) * (o[1] * 60 + o[2]),
    )
]

# The kinds a person may give a field of an object, whose shape the process does not declare.
CHOSEN_KINDS = {"text": "Text", "number": "Number", "date": "Date", "yesno": "Yes or no",
                "json": "List or object (JSON)"}
JSON_EXAMPLE = 'JSON, for example ["a", "b"] or {"key": "value"}'

# What acceptance says of a value (runs.acceptance.check_value), as a person would say it.
EXPECTED = {
    "string": "must be text",
    "number": "must be a number",
    "boolean": "must be yes or no",
    "date": "must be a date (year-month-day)",
    "datetime": "must be a date and time",
    "list": "must be a list",
    "object": "must be an object",
    "person": "must be an email address",
}
_ITEM = re.compile(r"^\[([0-9]+)\]")
# Words a field name spells in lower case that people write in capitals.
def _say(subject: str, words: str, sentence: bool) -> str:
    return f"{subject}: {words}" if sentence else f"{subject} {words}"


@dataclass(frozen=True)
class Problem:
    """What is wrong with one field of a form, in words, and where: a line of a list, a field of an object.

    `words` completes a subject (`must be a number`) unless `sentence`, when it stands alone
    (`nobody@example.com is not a member of Acme`).
    """

    words: str
    sentence: bool = False
    line: int | None = None  # 1-based, as the person counts
    part: str | None = None  # the label of an object's field
    row: int | None = None
    column: int | None = None
    about_column: bool = False  # the field's name, not its value
    target: str = ""  # the id of the input to fix

    def beside(self, label: str) -> str:
        """The words shown beside the input itself, where the field's label is already in view."""
        if self.about_column:
            return self.words
        if self.line is None and self.part is None:
            return self.words if self.sentence else f"{label} {self.words}"
        if self.part is None:
            return _say(f"Line {self.line}", self.words, self.sentence)
        inside = _say(self.part, self.words, self.sentence)
        return inside if self.line is None else f"Line {self.line}: {inside}"

    def summary(self, label: str) -> str:
        """The words in the list of everything to fix at the top of the form."""
        if self.about_column:
            return f"{label}: {self.words}"
        if self.line is None and self.part is None:
            return _say(label, self.words, self.sentence)
        where = label if self.line is None else f"{label}, line {self.line}"
        if self.part is None:
            return _say(where, self.words, self.sentence)
        return f"{where}: {_say(self.part, self.words, self.sentence)}"


def kind_for(raw_spec) -> str:
    """Return the kind of input for one declared scalar type (a list or object becomes `json`)."""
    spec = field_spec(raw_spec)
    if spec.get("one_of") is not None:
        return "select"
    return {"string": "text", "number": "number", "boolean": "yesno", "date": "date", "datetime": "datetime",
            "person": "person"}.get(spec.get("type"), "json")


def choice_value(value) -> str:
    """The option value of one `one_of` value: its JSON text, so its type survives the form."""
    return json.dumps(value, ensure_ascii=False)


def choice_label(value) -> str:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    return str(value)


def parse_number(text: str):
    """Return the JSON number a person typed, exactly (no rounding), or None when it is not one."""
    text = text.strip()
    if not text.isascii() or "_" in text:  # float() also reads other scripts' digits and 1_000
        return None
    if _INTEGER.match(text):
        # int() refuses more digits than this (a ValueError); such a number is no amount anyone means.
        return int(text) if len(text) <= sys.get_int_max_str_digits() else None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _datetime(text: str, offset: str) -> str:
    stamp = text if len(text) > 16 else f"{text}:00"
    offset = offset if offset in UTC_OFFSETS else "+00:00"
    return f"{stamp}{'Z' if offset == '+00:00' else offset}"


def _json(text: str):
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        return text, f"is not valid JSON ({exc.args[0].split(':')[0]})"


def read(kind: str, text: str, offset: str = "+00:00") -> tuple[bool, object, str | None]:
    """Return (given, value, problem) for the text of one input; a blank input gives nothing."""
    stripped = text.strip()
    if not stripped:
        return False, None, None
    if kind == "text":
        # Only the outer blank lines go: the person's own line breaks are part of the value.
        return True, text.strip("\r\n").replace("\r\n", "\n"), None
    if kind == "number":
        number = parse_number(stripped)
        return True, (stripped if number is None else number), (None if number is not None else "must be a number")
    if kind == "date":
        return True, stripped, (None if is_date(stripped) else EXPECTED["date"])
    if kind == "datetime":
        value = _datetime(stripped, offset)
        return True, value, (None if parse_datetime(value) else EXPECTED["datetime"])
    if kind == "person":
        return True, stripped, (None if is_person(stripped) else EXPECTED["person"])
    if kind in ("select", "yesno", "json"):
        return (True, *_json(stripped))
    return True, stripped, None


def shown(kind: str, value) -> tuple[str, str]:
    """Return (text, offset): a JSON value as its input shows it again (a held submission, an earlier attempt)."""
    if value is None:
        return "", "+00:00"
    if kind in ("select", "yesno", "json"):
        return json.dumps(value, ensure_ascii=False), "+00:00"
    if kind == "datetime" and isinstance(value, str) and len(value) >= 16:
        text = value[:19] if value[16:17] == ":" else value[:16]
        tail = value[19:].lstrip(".0123456789") if len(value) > 19 else value[16:]
        return text, ("+00:00" if tail in ("Z", "z", "") else tail)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value), "+00:00"
    return str(value), "+00:00"


def kind_of_value(value) -> str:
    """The kind of input a value someone already gave fits best, for an object field with no declared type."""
    if isinstance(value, bool):
        return "yesno"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "date" if is_date(value) else "text"
    return "json"


def kind_of_values(values) -> str:
    """One kind for a column of values: theirs when they agree; text for text and dates; JSON otherwise."""
    kinds = {kind_of_value(v) for v in values}
    if len(kinds) <= 1:
        return kinds.pop() if kinds else "text"
    return "text" if kinds <= {"text", "date"} else "json"


def phrase(message: str) -> tuple[str, bool]:
    """Word one acceptance message for a person: (`must be a number`, False), or a whole sentence (…, True).

    `message` is what follows a field's path, such as `expected number`, `missing` or, for an item deeper in
    a value, `[2]: expected number`.
    """
    depth = []
    while match := _ITEM.match(message):
        depth.append(f"item {int(match.group(1)) + 1}")
        message = message[match.end():].removeprefix(": ")
    words = _words(message)
    if depth:
        return f"{' '.join(depth)} {words}", True
    return words, False


def _words(message: str) -> str:
    if message == "missing":
        return "is required"
    if message.startswith("expected one of "):
        return "must be one of " + message.removeprefix("expected one of ")
    if message.startswith("expected "):
        return EXPECTED.get(message.removeprefix("expected "), message.replace("expected", "must be", 1))
    if message == "not declared":
        return "is not a field of this form"
    return message
