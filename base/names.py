"""The one rule for a name that people read: an agent's, a client's, an uploaded file's.

A name is shown in pages, run records and messages beside text someone else wrote. A control character
(C0, DEL, C1) or a line or paragraph separator breaks the line it is shown on; a bidirectional mark,
embedding, override or isolate makes the text around it read in another order than it is stored in
(Unicode TR #9), so `exe.txt` can be shown for `txt.exe`. No name holds any of them.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL; the line and paragraph separators; the Arabic letter mark (U+061C), the
# left-to-right and right-to-left marks (U+200E, U+200F), the embeddings and overrides (U+202A-U+202E)
# and the isolates (U+2066-U+2069).
_NOT_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def name_problem(name: str) -> str | None:
    """Say why `name` cannot be a name people read, or return None when it can."""
    found = _NOT_IN_NAMES.search(name)
    if found is None:
        return None
    return (
        f"may not contain control characters, line breaks or bidirectional marks "
        f"(found U+{ord(found.group()):04X} at position {found.start() + 1})"
    )
