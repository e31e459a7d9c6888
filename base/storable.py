"""What a request may carry into the database: every door checks its text here before anything is stored.

PostgreSQL's text and jsonb hold no NUL character, and no database (nor UTF-8 itself) holds a lone
surrogate, which JSON's `\\ud800` escapes and nothing else can produce. Found anywhere, such text is
named by where it is, written so that the name itself can be printed and stored.
"""

from __future__ import annotations

import itertools
import math
import re

# Deeper JSON than this is refused before anything walks it (recursion in validators and hashing).
MAX_DEPTH = 64

# NUL, and the surrogate code points that only a JSON escape can put into a Python string.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# What a message may not show as it is: controls, separators, bidirectional overrides, surrogates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, limit: int = 100) -> str:
    """Return text as a message may quote it: cut to `limit` characters, anything unprintable escaped."""
    cut = text[:limit] + ("…" if len(text) > limit else "")
    return _UNPRINTABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", cut)


def text_problem(text: str) -> str | None:
    """Say why no database can store `text`, or return None when it can."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "text may not contain NUL (\\u0000) characters"
    return f"not valid Unicode (a lone surrogate, \\u{ord(found.group()):04x})"


def unstorable(value, path: str = "") -> list[str]:
    """Name every place in a JSON value that no database can store: bad text, NaN or infinity, deep nesting."""
    if _storable(value):
        return []
    found, stack = [], [(value, path, 1)]
    while stack:
        current, where, depth = stack.pop()
        if isinstance(current, str):
            problem = text_problem(current)
            if problem:
                found.append(f"{where or 'arguments'}: {problem}")
        elif isinstance(current, float):
            if not math.isfinite(current):
                found.append(f"{where or 'arguments'}: not a finite number")
        elif isinstance(current, (dict, list)):
            if depth > MAX_DEPTH:
                found.append(f"{where or 'arguments'}: nests deeper than {MAX_DEPTH} levels")
                continue
            if isinstance(current, dict):
                for key, child in current.items():
                    name = printable(str(key))
                    child_path = f"{where}.{name}" if where else name
                    problem = text_problem(str(key))
                    if problem:
                        found.append(f"{child_path}: {problem}")
                    stack.append((child, child_path, depth + 1))
            else:
                stack.extend((child, f"{where}[{index}]", depth + 1) for index, child in enumerate(current))
    return sorted(found)


_ONLY_TEXT = frozenset({str})


def _storable(value) -> bool:
    """Whether `unstorable` would find nothing, told without naming places: every text (keys too) searched
    at once, as one string. False for anything it does not know to be storable, which `unstorable` names."""
    stack, texts = [(value, 1)], []
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is str:
            texts.append(current)
        elif kind is dict or kind is list:
            if depth > MAX_DEPTH:
                return False
            if kind is dict:
                if not _ONLY_TEXT.issuperset(map(type, current)):
                    return False  # a key that is not a string
                texts.extend(current)
                current = current.values()
            stack.extend(zip(current, itertools.repeat(depth + 1)))
        elif kind is float:
            if not math.isfinite(current):
                return False
        elif not (kind is int or kind is bool or current is None):
            return False
    # Each character is matched alone, so texts joined find what each would.
    return _UNSTORABLE.search("".join(texts)) is None


def depth_exceeds(value, limit: int = MAX_DEPTH) -> bool:
    """Tell whether a parsed JSON value nests deeper than `limit`, without recursion."""
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
