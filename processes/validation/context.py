"""What every check reads: the options, the steps by id, the issues so far, and small readers of the frontmatter."""

import re
from dataclasses import dataclass, field

from processes import wording
from processes.spec import (
    ALL_KINDS,
    CHECK_KEYS,
    CHECK_PROFILE,
    INITIATOR,
    JOIN,
    PARALLEL_KIND,
    PARALLEL_PROFILE,
)

# Bounds of ours on what a frontmatter may hold (numbers JSON carries exactly, nesting, values).
SAFE_INTEGER = 2**53 - 1
MAX_NESTING = 100
MAX_VALUES = 1_000_000
PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
MISSING = object()


@dataclass
class Context:
    """What every check needs: the options, what is known about the steps, and the issues so far."""

    profiles: frozenset[str]
    tools: frozenset[str]
    check_unavailable_reason: str | None
    steps: list
    inputs: dict
    ids: dict[str, int]
    join_is_word: bool
    issues: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)  # profiles and tools already reported missing
    recorded: set[str] = field(default_factory=set)

    def add(self, place: str, message: str) -> None:
        """Record one issue at its place, once, however many paths lead to it."""
        issue = f"{place}: {message}"
        if issue not in self.recorded:
            self.recorded.add(issue)
            self.issues.append(issue)


@dataclass(frozen=True)
class Edge:
    """One move from a step to another, with where it is written."""

    target: int | None  # None means join
    place: str
    key: str  # next, on_timeout, on_reject, parallel, or default for the following step


def steps_of(frontmatter: object) -> list:
    """Return the steps list of a frontmatter of any shape."""
    steps = frontmatter.get("steps") if isinstance(frontmatter, dict) else None
    return steps if isinstance(steps, list) else []


def step_ids(steps: list) -> dict[str, int]:
    """Map each string step id to the index of its first step."""
    ids: dict[str, int] = {}
    for index, step in enumerate(steps):
        step_id = step.get("id") if isinstance(step, dict) else None
        if isinstance(step_id, str) and step_id not in ids:
            ids[step_id] = index
    return ids


def single_kind(step: dict) -> str | None:
    """Return the step's kind key when it has exactly one."""
    kinds = [key for key in ALL_KINDS if key in step]
    return kinds[0] if len(kinds) == 1 else None


def has_parallel_step(steps: list) -> bool:
    """Say whether any step uses the parallel key."""
    return any(isinstance(step, dict) and PARALLEL_KIND in step for step in steps)


def profiles_in(steps: list, ids: dict[str, int]) -> set[str]:
    """Name the profiles whose keys these steps use: parallel or join, check or advisory."""
    used: set[str] = set()
    join_is_word = has_parallel_step(steps) or JOIN not in ids
    for step in steps:
        if not isinstance(step, dict):
            continue
        if PARALLEL_KIND in step or (join_is_word and JOIN in join_candidates(step)):
            used.add(PARALLEL_PROFILE)
        if any(key in step for key in CHECK_KEYS):
            used.add(CHECK_PROFILE)
    return used


def join_candidates(step: dict) -> list[str]:
    """List the string targets of next and on_timeout, where join may stand."""
    nxt = step.get("next")
    routes = [nxt] if isinstance(nxt, str) else nxt if isinstance(nxt, list) else []
    targets = [target for target in map(route_target, routes) if isinstance(target, str)]
    on_timeout = step.get("on_timeout")
    return [*targets, on_timeout] if isinstance(on_timeout, str) else targets


def route_target(route: object) -> object:
    """Return the step a route goes to, whichever way the route is written."""
    return route.get("to") if isinstance(route, dict) else route


def is_role(person: object) -> bool:
    """Say whether a person value is a role name rather than initiator or a path."""
    return isinstance(person, str) and bool(person.strip()) and "." not in person and person != INITIATOR


def text_issue(value: object, what: str) -> str:
    """Word the refusal of a value that should be non-blank text."""
    if isinstance(value, str):
        return "must not be blank"
    return f"must be {what}, not {wording.kind(value)}"


def list_issue(value: object, what: str, too_short: str) -> str:
    """Word the refusal of a value that should be a list of some length."""
    return too_short if isinstance(value, list) else f"must be {what}, not {wording.kind(value)}"


def size_of(value: object) -> int:
    """Return the length of a list, or 0 for anything else."""
    return len(value) if isinstance(value, list) else 0


def is_text(value: object) -> bool:
    """Say whether a value is a string with something in it."""
    return isinstance(value, str) and bool(value.strip())


def is_probability(value: object) -> bool:
    """Say whether a value is a number from 0 to 1."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def is_unicode(text: str) -> bool:
    """Say whether a string can be encoded as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def step_place(index: int, step: object) -> str:
    """Name a step by position and, when it has a string id, by id."""
    step_id = step.get("id") if isinstance(step, dict) else None
    if isinstance(step_id, str):
        shown = step_id if len(step_id) <= 64 else step_id[:64] + "…"
        return f"steps[{index}] ({shown})"
    return f"steps[{index}]"


def step_name(steps: list, index: int) -> str:
    """Name a step briefly inside an issue: its quoted id, or its position when it has none."""
    step = steps[index]
    step_id = step.get("id") if isinstance(step, dict) else None
    return wording.show(step_id) if isinstance(step_id, str) else f"steps[{index}]"


def child(parent: str, key: object) -> str:
    """Name a key inside a place, quoting keys that would not read plainly."""
    text = key if isinstance(key, str) and PLAIN_KEY.fullmatch(key) else wording.show(key)
    return f"{parent}.{text}" if parent else text


def and_list(words: tuple[str, ...] | list[str]) -> str:
    """Join words as 'a, b and c'."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def or_list(words: tuple[str, ...] | list[str]) -> str:
    """Join words as 'a, b or c'."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
