"""Acceptance of inputs and submissions against declared fields (spec §2.3, §6 rule 3); pure functions."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping

from processes.definition import StepDef

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

FILE_NOT_FOUND = "not found"
FILE_CHANGED = "stored bytes no longer match the hash recorded at upload"


def field_spec(raw) -> dict:
    """Return a field declaration in its object form."""
    return {"type": raw} if isinstance(raw, str) else dict(raw)


def is_date(value) -> bool:
    if not isinstance(value, str) or not _DATE.match(value):
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def parse_datetime(value) -> dt.datetime | None:
    """Return the instant an RFC 3339 date-time with an offset names, or None."""
    if not isinstance(value, str):
        return None
    match = _DATETIME.match(value)
    if not match:
        return None
    date, hour, minute, second, fraction, offset = match.groups()
    if int(second) == 60:
        second = "59"
    offset = "+00:00" if offset in ("Z", "z") else offset
    fraction = (fraction or "")[:7]
    try:
        return dt.datetime.fromisoformat(f"{date}T{hour}:{minute}:{second}{fraction}{offset}")
    except ValueError:
        return None


def is_person(value) -> bool:
    return isinstance(value, str) and len(value) <= 254 and bool(_EMAIL.match(value))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "date": is_date,
    "datetime": lambda v: parse_datetime(v) is not None,
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "person": is_person,
}


def _same_value(a, b) -> bool:
    return type(a) is bool if type(b) is bool else (type(a) is not bool and a == b)


def check_value(raw_spec, value, path: str) -> list[str]:
    """Check one value against its declaration; return the issues, each prefixed with its path."""
    spec = field_spec(raw_spec)
    kind = spec.get("type")
    if value is None or not _TYPE_CHECKS[kind](value):
        return [f"{path}: expected {kind}"]
    one_of = spec.get("one_of")
    if one_of is not None and not any(_same_value(value, allowed) and value == allowed for allowed in one_of):
        return [f"{path}: expected one of {', '.join(str(v) for v in one_of)}"]
    issues: list[str] = []
    if kind == "list" and spec.get("items") is not None:
        for index, item in enumerate(value):
            issues.extend(check_value(spec["items"], item, f"{path}[{index}]"))
    return issues


def check_fields(declared: Mapping | None, values: Mapping, prefix: str) -> list[str]:
    """Check a whole object against declared fields: types, one_of, required and undeclared."""
    declared = declared or {}
    issues: list[str] = []
    for name, raw_spec in declared.items():
        path = f"{prefix}.{name}"
        if name not in values:
            if not field_spec(raw_spec).get("optional", False):
                issues.append(f"{path}: missing")
            continue
        issues.extend(check_value(raw_spec, values[name], path))
    issues.extend(f"{prefix}.{name}: not declared" for name in values if name not in declared)
    return issues


def check_submission(
    step: StepDef,
    *,
    output: Mapping,
    evidence: list[dict],
    summary: str | None,
    next_step: str | None,
    reason: str | None,
    require_summary: bool,
    file_problems: Mapping[str, str],
) -> list[str]:
    """Return every reason a submission cannot complete `step`; `file_problems` maps a file ref to its fault."""
    issues: list[str] = []
    if require_summary and (summary is None or not summary.strip()):
        issues.append("summary: missing")
    issues.extend(check_fields(step.output, output, "output"))
    attached = {item["kind"] for item in evidence if item["kind"] != "file" or item["ref"] not in file_problems}
    for kind in step.evidence or ():
        if kind not in attached:
            issues.append(f"evidence: {kind} required")
    issues.extend(
        f"evidence {item['ref']}: {file_problems[item['ref']]}"
        for item in evidence
        if item["kind"] == "file" and item["ref"] in file_problems
    )
    if step.routes:
        targets = step.route_targets
        if next_step is None:
            issues.append(f"next: required, one of {', '.join(targets)}")
        elif next_step not in targets:
            issues.append(f"next: '{next_step}' is not one of {', '.join(targets)}")
        if reason is None or not reason.strip():
            issues.append("reason: required")
    else:
        if next_step is not None:
            issues.append("next: not allowed, this step has a single next")
        if reason is not None:
            issues.append("reason: not allowed, this step has a single next")
    return issues
