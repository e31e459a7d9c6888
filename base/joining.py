"""Several statements of a write as one: its batch (`one_statement`), or its batch past a guard
(`guarded_statement`). Text only: base.sql builds the statements and sends what these return."""

from __future__ import annotations

import functools
import itertools
import operator


class NotGuardable(ValueError):
    """A statement with no guarded form: it is not among those base.sql registered below."""


# An INSERT's row of placeholders with each value cast to its column's type, by the INSERT's text
# (base.sql registers each INSERT it builds that returns nothing).
CAST_ROWS: dict[str, str] = {}
# The UPDATEs whose WHERE a guard's condition can be appended to as it is: base.sql's UPDATEs by key,
# and those its callers send marked `guardable`.
GUARDABLE_UPDATES: set[str] = set()


def only_reads(text: str) -> bool:
    """Whether a statement reads without locking: a SELECT without FOR UPDATE or FOR SHARE, or a
    savepoint of a transaction a caller opened (which writes nothing of its own)."""
    head = text.lstrip()[:9].upper()
    if head.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")):
        return True
    return head.startswith("SELECT") and not any(
        lock in text for lock in (" FOR UPDATE", " FOR NO KEY UPDATE", " FOR SHARE", " FOR KEY SHARE")
    )


def one_statement(statements: list) -> tuple[str, list]:
    """Several UPDATEs and INSERTs (no RETURNING), (text, params) each, as one statement.

    Each becomes a data-modifying `WITH` query, so the batch is one round trip, bound on the server and
    prepared like any statement sent alone once its text repeats (a write's shape does). PostgreSQL
    runs every part to completion with one snapshot, in an order of its own, and checks foreign keys at
    the end of the statement: the parts must not read or change the same rows (a write's batch never
    does: each row it writes, it writes once, and it reads nothing back). Rows inserted into one table
    with the same columns go as one INSERT of several rows, so their keys follow the order they were
    written in.
    """
    text, order = _joined(None, tuple(map(_TEXT, statements)))
    return text, _values([], statements, order)


def _joined(guard_text: str | None, texts: tuple) -> tuple[str, tuple]:
    """The one statement of a batch of `texts` (past `guard_text`, when given), and the order of the
    statements whose parameters it takes, after the guard's: kept for a write of a few statements,
    whose shape repeats."""
    if len(texts) > KEPT_SHAPE_STATEMENTS:
        return _made(guard_text, texts)
    return _kept(guard_text, texts)


def _values(first: list, statements: list, order: tuple) -> list:
    """`first`, then the parameters of each of `statements` in `order` (told in C)."""
    return [*first, *itertools.chain.from_iterable(map(_PARAMS, map(statements.__getitem__, order)))]


def value_count(statements: list) -> int:
    """How many values `statements`, (text, params) each, bind in all (told in C)."""
    return sum(map(len, map(_PARAMS, statements)))


_TEXT, _PARAMS = operator.itemgetter(0), operator.itemgetter(1)  # of a statement, (text, params)


# The shapes of write kept (`_joined`), a few per tool and path through it, each of at most so many
# statements: a larger batch (a notice to each of a large group) is joined anew.
KEPT_SHAPES = 512
KEPT_SHAPE_STATEMENTS = 32


@functools.lru_cache(maxsize=KEPT_SHAPES)
def _kept(guard_text: str | None, texts: tuple) -> tuple[str, tuple]:
    return _made(guard_text, texts)


def _made(guard_text: str | None, texts: tuple) -> tuple[str, tuple]:
    return _one(texts) if guard_text is None else _guarded(guard_text, texts)


def _one(texts: tuple) -> tuple[str, tuple]:
    merged: dict[str, list] = {}  # statement text: [text, statement indices]
    for i, text in enumerate(texts):
        if text.startswith("INSERT ") and text.endswith(")") and " RETURNING " not in text:
            found = merged.get(text)
            if found is not None:
                found[1].append(i)
                continue
        merged[text if text.startswith("INSERT ") else f"{len(merged)}:{text}"] = [text, [i]]
    parts, order = [], []
    for text, indices in merged.values():
        if len(indices) > 1:
            head, _sep, row = text.rpartition(" VALUES ")
            text = f"{head} VALUES {', '.join([row] * len(indices))}"
        parts.append(f"w{len(parts)} AS ({text})")
        order.extend(indices)
    return f"WITH {', '.join(parts)} SELECT 1", tuple(order)


def guarded_statement(guard_text: str, guard_params: list, statements: list) -> tuple[str, list]:
    """The guard and the batch's UPDATEs and INSERTs as one statement, each part applied only past the guard.

    `WITH g AS (<guard> RETURNING 1), w1 AS (UPDATE ... AND EXISTS (SELECT FROM g)), ... SELECT count(*) FROM g`:
    PostgreSQL runs the guard first (every part waits on its one-time filter), so the guarded row is
    locked before any other, as a transaction that locks it first would. INSERTs go as
    `INSERT ... SELECT * FROM (VALUES ...) WHERE EXISTS (...)`, each value cast to its column's type
    (a VALUES list has no target column to take it from); rows of one table with the same columns
    are one INSERT, in the order written.
    """
    text, order = _joined(guard_text, tuple(map(_TEXT, statements)))
    return text, _values(guard_params, statements, order)


def _guarded(guard_text: str, texts: tuple) -> tuple[str, tuple]:
    parts: list = [f"g AS ({guard_text})"]
    merged: dict[str, list] = {}
    for i, text in enumerate(texts):
        if text.startswith("INSERT "):
            row = CAST_ROWS.get(text)
            if row is None:
                raise NotGuardable(f"no guarded form of {text[:60]!r}")
            found = merged.get(text)
            if found is None:
                merged[text] = found = [text, row, []]
                parts.append(found)
            found[2].append(i)
        elif text in GUARDABLE_UPDATES:
            parts.append((f"{text} AND EXISTS (SELECT FROM g)", [i]))
        else:
            raise NotGuardable(f"no guarded form of {text[:60]!r}")
    out, order = [parts[0]], []
    for part in parts[1:]:
        if isinstance(part, list):
            text, row, indices = part
            head = text.rpartition(" VALUES ")[0]
            part = (f"{head} SELECT * FROM (VALUES {', '.join([row] * len(indices))}) v WHERE EXISTS (SELECT FROM g)", indices)
        text, indices = part
        out.append(f"w{len(out)} AS ({text})")
        order.extend(indices)
    return f"WITH {', '.join(out)} SELECT count(*) FROM g", tuple(order)
