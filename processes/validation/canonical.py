"""Spec §2.4: the canonical order of keys a published version keeps."""

import math

from processes import wording
from processes.validation.context import (
    MAX_NESTING,
    MAX_VALUES,
    SAFE_INTEGER,
    Context,
    child,
    is_unicode,
    step_place,
)


def check_canonical(ctx: Context, frontmatter: dict) -> None:
    """Refuse what RFC 8785 cannot write: huge integers, non-finite floats, bad strings, other types."""
    pending: list[tuple[object, str, int]] = [(frontmatter, "frontmatter", 0)]
    budget = MAX_VALUES
    while pending:
        value, place, depth = pending.pop()
        budget -= 1
        if budget < 0:
            # Only a mapping built in Python, sharing itself many times over, gets here; YAML cannot.
            ctx.add("frontmatter", f"holds more than {MAX_VALUES} values")
            return
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            if not -SAFE_INTEGER <= value <= SAFE_INTEGER:
                ctx.add(
                    place,
                    f"{wording.show(value)} is beyond ±{SAFE_INTEGER}, the largest integers canonical JSON holds exactly; "
                    "quote it if it is text",
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                ctx.add(
                    place, f"{wording.show(value)} is not a finite number, which canonical JSON cannot hold"
                )
        elif isinstance(value, str):
            if not is_unicode(value):
                ctx.add(place, "holds a lone surrogate, which is not valid Unicode")
        elif isinstance(value, dict | list | tuple):
            if depth >= MAX_NESTING:
                ctx.add(place, f"is nested more than {MAX_NESTING} levels deep")
                continue
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        ctx.add(place, f"key {wording.show(key)} is not a string")
                    elif not is_unicode(key):
                        ctx.add(place, "has a key holding a lone surrogate, which is not valid Unicode")
                    else:
                        pending.append((item, child("" if place == "frontmatter" else place, key), depth + 1))
            elif place == "steps":
                pending.extend((item, step_place(i, item), depth + 1) for i, item in enumerate(value))
            else:
                pending.extend((item, f"{place}[{i}]", depth + 1) for i, item in enumerate(value))
        else:
            ctx.add(place, f"holds a {type(value).__name__}, which is not a JSON value")
