"""Typed form controls built from declared fields (spec §2.3), and reading them back as JSON values.

One control per field; what each type becomes:

- `string`: a textarea that grows with its content (a string may hold several lines).
- any field with `one_of`: a select of exactly those values.
- `number`: `<input type=number step=any>`; integers stay integers, nothing is rounded.
- `boolean`: a checkbox when required (unticked is `false`); a Yes/No/blank select when optional,
  so "not given" stays possible.
- `date`: `<input type=date>`.
- `datetime`: `<input type=datetime-local>` beside a UTC-offset select, sent as RFC 3339 with offset.
- `person`: `<input type=email>`.
- `list` of strings, people, dates or numbers: a textarea, one item per line.
- `list` whose items have `one_of`: a checkbox per allowed value.
- `object`, and any other `list`: a textarea holding JSON.

Reading never refuses anything itself: a value that does not parse is sent on as the raw text, so the
tool reports it beside every other issue at once (spec §6 rule 3), and the parse problem is shown too.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from runs.acceptance import field_spec

LINE_ITEM_TYPES = ("string", "person", "date", "number")
_INTEGER = re.compile(r"^[+-]?\d+$")
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


# Words a field name spells in lower case that people write in capitals.
ACRONYMS = frozenset({"id", "url", "uri", "usd", "eur", "gbp", "api", "sku", "vat", "iban", "pdf", "po", "rfp"})


def field_label(name: str) -> str:
    """Turn a field name into words: `totalUsd` → `Total USD`, `due_date` → `Due date`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    words = spaced.split()
    if not words:
        return name
    text = " ".join(
        w.upper() if w.lower() in ACRONYMS else w if w.isupper() and len(w) > 1 else w.lower() for w in words
    )
    return text[:1].upper() + text[1:]


@dataclass
class Control:
    """One form control for one declared field, with what the person entered and what went wrong."""

    name: str
    prefix: str
    spec: dict
    widget: str
    choices: list[tuple[str, str]] = field(default_factory=list)
    value: str = ""
    values: list[str] = field(default_factory=list)
    offset: str = "+00:00"
    errors: list[str] = field(default_factory=list)

    @property
    def html_name(self) -> str:
        return f"{self.prefix}-{self.name}"

    @property
    def html_id(self) -> str:
        return f"f-{self.prefix}-{self.name}"

    @property
    def label(self) -> str:
        return field_label(self.name)

    @property
    def type_name(self) -> str:
        kind = self.spec.get("type")
        if kind == "list" and self.spec.get("items") is not None:
            return f"list of {field_spec(self.spec['items']).get('type')}"
        return kind

    @property
    def required(self) -> bool:
        return not self.spec.get("optional", False)

    @property
    def description(self) -> str:
        return self.spec.get("description") or ""

    @property
    def hint(self) -> str:
        hints = {
            "lines": "One per line.",
            "json": "JSON, for example " + ('[{"item": "…"}]' if self.spec.get("type") == "list" else '{"key": "value"}'),
            "datetime": "Date and time, and the UTC offset they are in.",
            "email": "An email address of a person in this organization.",
            "choices": "Tick every one that applies.",
        }
        return hints.get(self.widget, "")

    @property
    def offsets(self) -> list[str]:
        return UTC_OFFSETS

    def has_value(self, option: str) -> bool:
        return option in self.values


def _choice_value(value) -> str:
    # One_of values keep their JSON type through the form: 2 and "2" are different choices.
    return json.dumps(value, ensure_ascii=False)


def _choice_label(value) -> str:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    return str(value)


def widget_for(spec: dict) -> str:
    kind = spec.get("type")
    if spec.get("one_of") is not None:
        return "select"
    if kind == "list":
        items = field_spec(spec["items"]) if spec.get("items") is not None else None
        if items is not None and items.get("one_of") is not None:
            return "choices"
        if items is not None and items.get("type") in LINE_ITEM_TYPES:
            return "lines"
        return "json"
    return {
        "string": "text",
        "number": "number",
        "boolean": "checkbox" if not spec.get("optional") else "yesno",
        "date": "date",
        "datetime": "datetime",
        "person": "email",
        "object": "json",
    }.get(kind, "text")


def controls_for(declared: dict | None, prefix: str, data=None, initial: dict | None = None) -> list[Control]:
    """Build one control per declared field, filled from posted `data` or from `initial` JSON values."""
    controls = []
    for name, raw in (declared or {}).items():
        spec = field_spec(raw)
        control = Control(name=name, prefix=prefix, spec=spec, widget=widget_for(spec))
        if control.widget == "select":
            control.choices = [(_choice_value(v), _choice_label(v)) for v in spec["one_of"]]
        elif control.widget == "choices":
            control.choices = [(_choice_value(v), _choice_label(v)) for v in field_spec(spec["items"])["one_of"]]
        if data is not None:
            control.value = data.get(control.html_name, "")
            control.values = data.getlist(control.html_name) if hasattr(data, "getlist") else []
            control.offset = data.get(f"{control.html_name}-offset", "+00:00")
        elif initial and name in initial:
            _fill(control, initial[name])
        controls.append(control)
    return controls


def _fill(control: Control, value) -> None:
    """Show an existing JSON value in a control (a held submission, an earlier attempt)."""
    if control.widget in ("select", "yesno"):
        control.value = _choice_value(value)
    elif control.widget == "choices":
        control.values = [_choice_value(v) for v in value] if isinstance(value, list) else []
    elif control.widget == "checkbox":
        control.value = "on" if value is True else ""
    elif control.widget == "lines":
        control.value = "\n".join(str(v) for v in value) if isinstance(value, list) else ""
    elif control.widget == "json":
        control.value = json.dumps(value, indent=2, ensure_ascii=False)
    elif control.widget == "datetime" and isinstance(value, str) and len(value) >= 16:
        control.value = value[:19] if value[16:17] == ":" else value[:16]
        tail = value[19:].lstrip(".0123456789") if len(value) > 19 else value[16:]
        control.offset = "+00:00" if tail in ("Z", "z", "") else tail
    else:
        control.value = "" if value is None else str(value)


def parse_number(text: str):
    """Return the JSON number a person typed, exactly (no rounding), or None when it is not one."""
    text = text.strip()
    if _INTEGER.match(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _read_one(control: Control):
    """Return (present, value, problem) for one control's posted text."""
    widget, text = control.widget, control.value.strip()
    if widget == "checkbox":
        return True, bool(control.value), None
    if widget == "choices":
        chosen = []
        for raw in control.values:
            try:
                chosen.append(json.loads(raw))
            except (ValueError, RecursionError):
                chosen.append(raw)
        return bool(chosen) or control.required, chosen, None
    if widget in ("select", "yesno"):
        if not text:
            return False, None, None
        try:
            return True, json.loads(text), None
        except (ValueError, RecursionError):
            return True, text, None
    if widget == "lines":
        lines = [line.strip() for line in control.value.splitlines() if line.strip()]
        if not lines and not control.required:
            return False, None, None
        item_type = field_spec(control.spec["items"]).get("type")
        if item_type != "number":
            return True, lines, None
        values, bad = [], []
        for line in lines:
            number = parse_number(line)
            values.append(line if number is None else number)
            if number is None:
                bad.append(line)
        return True, values, (f"not a number: {', '.join(bad)}" if bad else None)
    if not text:
        return False, None, None
    if widget == "text":
        # Only the outer blank lines go: the person's own line breaks are part of the value.
        return True, control.value.strip("\r\n").replace("\r\n", "\n"), None
    if widget == "number":
        number = parse_number(text)
        return True, (text if number is None else number), (None if number is not None else "not a number")
    if widget == "json":
        try:
            return True, json.loads(text), None
        except (ValueError, RecursionError) as exc:
            return True, text, f"not valid JSON ({exc.args[0].split(':')[0]})"
    if widget == "datetime":
        stamp = text if len(text) > 16 else f"{text}:00"
        offset = control.offset if control.offset in UTC_OFFSETS else "+00:00"
        return True, f"{stamp}{'Z' if offset == '+00:00' else offset}", None
    return True, text, None


def read_values(controls: list[Control]) -> tuple[dict, dict[str, str]]:
    """Return the JSON object the controls hold, and the parse problems by field name."""
    values: dict = {}
    problems: dict[str, str] = {}
    for control in controls:
        present, value, problem = _read_one(control)
        if present:
            values[control.name] = value
        if problem:
            problems[control.name] = problem
    return values, problems


_ISSUE_FIELD = re.compile(r"^(?P<prefix>[a-z]+)\.(?P<name>[A-Za-z0-9_-]+)(?:\[\d+\])*:")


def sort_issues(issues: list[str] | None, prefix: str, names: set[str], others: tuple[str, ...]) -> dict[str, list]:
    """Place each issue beside its field: `output.x: …` under `x`, `note: …` under `note`, the rest under ``."""
    placed: dict[str, list[str]] = {}
    for issue in issues or []:
        match = _ISSUE_FIELD.match(issue)
        if match and match.group("prefix") == prefix and match.group("name") in names:
            key = match.group("name")
        else:
            head = issue.split(":", 1)[0].split(" ", 1)[0].split("[", 1)[0]
            key = head if head in others else ""
        placed.setdefault(key, []).append(issue)
    return placed
