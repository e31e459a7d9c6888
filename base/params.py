"""Whole numbers a page is sent (a page number, an id, a version, a line of a form): ASCII digits in range.

`str.isdigit()` and `\\d` also take other scripts' digits and superscripts (`١٢٣`, `²`), which `int()`
then reads or refuses; `int()` refuses text of over 4300 digits; and a number past a bigint overflows a
PostgreSQL query. Every page reads its numbers here: a value that is not one is a 400 page naming it
(`BadParameter`, rendered by config.middleware.RefuseBadParameters), never a 500.
"""

from __future__ import annotations

import re

from .storable import printable

# PostgreSQL's bigint (and SQLite's integer): every key and number a page may look up.
BIGINT_MAX = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")


class BadParameter(Exception):
    """Parameters a page cannot read, every problem named; the page answers 400 with them."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def read_integer(text, *, minimum: int = 0, maximum: int = BIGINT_MAX) -> int | None:
    """The whole number `text` spells in ASCII digits, within [minimum, maximum], or None."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    number = int(text)
    return number if minimum <= number <= maximum else None


def integer_problem(text, name: str, *, minimum: int = 0, maximum: int = BIGINT_MAX) -> str | None:
    """Say what is wrong with `text` as the parameter `name`, or None when read_integer reads it."""
    if read_integer(text, minimum=minimum, maximum=maximum) is not None:
        return None
    return (f"{name}: '{printable(str(text), 40)}' is not a whole number from {minimum} to {maximum} "
            "written in the digits 0-9")


def parse_integer(text, name: str, *, minimum: int = 0, maximum: int = BIGINT_MAX) -> int:
    """The whole number `text` spells, or BadParameter naming `name`."""
    problem = integer_problem(text, name, minimum=minimum, maximum=maximum)
    if problem:
        raise BadParameter([problem])
    return int(text)


def optional_integer(params, name: str, *, minimum: int = 0, maximum: int = BIGINT_MAX) -> int | None:
    """The parameter `name` of a query or form as a whole number; None when absent or empty; else BadParameter."""
    text = params.get(name, "")
    if text == "":
        return None
    return parse_integer(text, name, minimum=minimum, maximum=maximum)


def prefixed_id(value, prefix: str) -> int | None:
    """The database key an id such as `r_12` or `u_3` names with `prefix`, or None for anything else."""
    if not isinstance(value, str) or not value.startswith(f"{prefix}_"):
        return None
    return read_integer(value[len(prefix) + 1:], minimum=1)
