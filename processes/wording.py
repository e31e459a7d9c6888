"""How a process's names read to a person, and how issues quote the values they are about (parsing and
validation word them alike)."""

import re

SHOWN_CHARS = 40


def show(value: object) -> str:
    """Quote a value briefly for an issue."""
    if isinstance(value, str):
        shown = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
        return f"'{shown}'"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) >= 10**SHOWN_CHARS:
        # Python refuses to print integers of thousands of digits, and nobody wants to read them.
        return f"a number of more than {SHOWN_CHARS} digits"
    if isinstance(value, int | float):
        return str(value)
    return kind(value)


def kind(value: object) -> str:
    """Name the kind of a value for an issue."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


def step_title(step_id: str) -> str:
    """Turn a step id into words a person reads: `collect_quotes` → `Collect quotes`."""
    words = step_id.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:]


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
