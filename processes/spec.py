"""Every name spec §2 and tools.md define, once: kinds, field types, keys, patterns, durations, tools,
profiles and `join`. The validator, the compiled definitions, the engine and describe all read them here.
"""

import re

from processes.kinds import CORE_KINDS, OUTPUT_KINDS, PERSON_KINDS, WAIT_KINDS, WORK_KINDS, StepKind

# Spec §2.1: a process name; spec §2.2: a step id; a duration (whole minutes, hours or days).
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
STEP_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}\Z")
DURATION_PATTERN = re.compile(r"^([1-9][0-9]*)([mhd])\Z")
MAX_NAME_LENGTH = 64
MAX_DURATION_SECONDS = 100 * 365 * 86_400
MAX_DURATION_DIGITS = 12
UNIT_SECONDS = {"m": 60, "h": 3_600, "d": 86_400}

# Spec §2.3: the types a field may have, and those a `one_of` may list.
FIELD_TYPES = ("string", "number", "boolean", "date", "datetime", "list", "object", "person")
ONE_OF_TYPES = ("string", "number", "boolean")

# The profiles this implementation knows (spec/profiles/).
PARALLEL_PROFILE = "parallel-1"
CHECK_PROFILE = "check-1"

# tools.md: the fourteen tools, in the order describe lists them.
TOOLS = (
    "describe",
    "list_processes",
    "start_run",
    "get_run",
    "get_work",
    "claim",
    "renew",
    "upload",
    "submit",
    "escalate",
    "decide",
    "cancel",
    "send_event",
    "list_runs",
)
ALL_TOOLS = frozenset(TOOLS)

# parallel-1: the word that ends a branch; spec §2.2: the person who started the run.
JOIN = "join"
INITIATOR = "initiator"
EVIDENCE_KINDS = ("file", "link")

# The keys each level of the frontmatter may hold.
KIND_KEYS = CORE_KINDS
PARALLEL_KIND = StepKind.PARALLEL
ALL_KINDS = (*KIND_KEYS, PARALLEL_KIND)
TOP_LEVEL_KEYS = ("name", "description", "inputs", "steps", "requires")
FIELD_KEYS = ("type", "description", "optional", "one_of", "items")
ROUTE_KEYS = ("to", "when")
QUESTION_KEYS = ("ask", "pass", "fail", "one_of", "unsure", "levels", "confidence")
CHECK_KEYS = ("check", "advisory")
STEP_KEYS = (
    "id",
    *ALL_KINDS,
    "output",
    "evidence",
    "next",
    "person",
    "on_reject",
    "due",
    "timeout",
    "on_timeout",
    "check",
    "advisory",
)

# Spec §2.2, optional keys: which kinds each key applies to.
APPLIES_TO = {
    "output": OUTPUT_KINDS,
    "evidence": OUTPUT_KINDS,
    "next": (*WORK_KINDS, *WAIT_KINDS, StepKind.PARALLEL),
    "person": PERSON_KINDS,
    "on_reject": (StepKind.APPROVE,),
    "due": WORK_KINDS,
    "timeout": (StepKind.WAIT_FOR,),
    "on_timeout": (StepKind.WAIT_FOR,),
    "check": OUTPUT_KINDS,
    "advisory": OUTPUT_KINDS,
}


def parse_duration(text: str) -> int | None:
    """Return a duration's length in seconds, or None when it is not a valid duration."""
    if not isinstance(text, str):
        return None
    match = DURATION_PATTERN.match(text)
    if match is None or len(match.group(1)) > MAX_DURATION_DIGITS:
        return None
    seconds = int(match.group(1)) * UNIT_SECONDS[match.group(2)]
    return seconds if seconds <= MAX_DURATION_SECONDS else None
