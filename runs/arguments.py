"""Each tool's arguments checked against its schema (schemas/core-2, tools.md "Arguments"), every problem named.

Arguments that fit pass a compiled validator in about a microsecond; only arguments that break the
contract go on to jsonschema, which names each problem (spec §6 rule 3).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema_rs
from jsonschema import Draft202012Validator

from base.storable import printable, unstorable

from .errors import Invalid

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas" / "core-2" / "tools"
WRITE_TOOLS = frozenset(
    {"start_run", "claim", "renew", "upload", "submit", "escalate", "decide", "cancel", "send_event"}
)


@functools.cache
def argument_schema(tool: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{tool}.arguments.json").read_text())


@functools.cache
def full_validator(tool: str) -> Draft202012Validator:
    return Draft202012Validator(argument_schema(tool))


@functools.cache
def fast_validator(tool: str) -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(argument_schema(tool))


def fits(tool: str, arguments) -> bool:
    """Whether `arguments` fit the tool's schema, in about a microsecond (a compiled validator)."""
    try:
        return fast_validator(tool).is_valid(arguments)
    except (ValueError, TypeError, OverflowError):
        return False  # nothing it can read: let the full check below name what is wrong


def check_arguments(tool: str, arguments) -> None:
    """Refuse arguments that break the tool's contract, naming every problem (spec §6 rule 3)."""
    if not isinstance(arguments, dict):
        raise Invalid("Arguments must be a JSON object.", ["arguments: expected object"])
    issues = unstorable(arguments)
    if not issues and fits(tool, arguments):
        return
    # Only arguments that break the contract come here, where every problem is named, and every name
    # and value a message quotes is printable (base.storable), whatever the arguments held.
    for error in sorted(full_validator(tool).iter_errors(arguments), key=lambda e: [(isinstance(p, str), p)
                                                                                 for p in e.absolute_path]):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{printable(p)}" for p in error.absolute_path)
        where = where.lstrip(".")
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            issues.extend(f"{(where + '.') if where else ''}{printable(name)}: not an argument of {tool}"
                          for name in extra)
        elif error.validator == "required":
            missing = [name for name in error.validator_value if name not in error.instance]
            issues.extend(f"{(where + '.') if where else ''}{name}: required" for name in missing)
        else:
            issues.append(f"{where or 'arguments'}: {printable(error.message, 200)}")
    if issues:
        # One schema error can name what another names too (each `required` error lists every missing name).
        raise Invalid(f"The arguments do not fit the {tool} contract.", list(dict.fromkeys(issues)))
