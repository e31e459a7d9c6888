"""Check a parsed PROCESS.md frontmatter against spec §2 and the profiles, reporting every issue at once.

Every issue is one sentence that starts with its place: a top-level key (``name``), a dotted path
(``inputs.amount.type``), or a step (``steps[3] (approve).on_reject``, steps counted from 0, the
parenthesised part being the step id when it is a string).

Decisions on points the specification leaves open:

- A duration is a whole number from 1 followed by ``m``, ``h`` or ``d``: ``0m``, ``05m`` and
  anything longer than 100 years are refused, so every accepted duration is a real, representable
  wait.
- A route written as a mapping needs a non-blank ``when``; a route without a condition is written
  as a plain step id.
- When a profile or tool the process needs is missing, it is reported once, at its first use, and
  the profile's own rules are not checked, so the author sees one clear reason.
"""

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from processes.kinds import CORE_KINDS, OUTPUT_KINDS, PERSON_KINDS, WAIT_KINDS, WORK_KINDS, StepKind
from processes.wording import kind as _kind
from processes.wording import show as _show

NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
STEP_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,63}\Z")
DURATION_PATTERN = re.compile(r"^([1-9][0-9]*)([mhd])\Z")

KIND_KEYS = CORE_KINDS
FIELD_TYPES = ("string", "number", "boolean", "date", "datetime", "list", "object", "person")

PARALLEL_PROFILE = "parallel-1"
CHECK_PROFILE = "check-1"
ALL_TOOLS = frozenset(
    {
        "describe",
        "list_processes",
        "start_run",
        "get_run",
        "get_work",
        "claim",
        "submit",
        "escalate",
        "decide",
        "cancel",
        "renew",
        "upload",
        "send_event",
        "list_runs",
    }
)

MAX_NAME_LENGTH = 64
MAX_DURATION_SECONDS = 100 * 365 * 86_400
JOIN = "join"
INITIATOR = "initiator"
EVIDENCE_KINDS = ("file", "link")

TOP_LEVEL_KEYS = ("name", "description", "inputs", "steps", "requires")
FIELD_KEYS = ("type", "description", "optional", "one_of", "items")
ROUTE_KEYS = ("to", "when")
QUESTION_KEYS = ("ask", "pass", "fail", "one_of", "unsure", "levels", "confidence")
PARALLEL_KIND = StepKind.PARALLEL
_ALL_KINDS = (*KIND_KEYS, PARALLEL_KIND)
STEP_KEYS = (
    "id",
    *_ALL_KINDS,
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
_APPLIES_TO = {
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
_CHECK_KEYS = ("check", "advisory")
_ONE_OF_TYPES = ("string", "number", "boolean")
_UNIT_SECONDS = {"m": 60, "h": 3_600, "d": 86_400}
_MAX_DURATION_DIGITS = 12
_SAFE_INTEGER = 2**53 - 1
_MAX_NESTING = 100
_MAX_VALUES = 1_000_000
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MISSING = object()


@dataclass
class _Context:
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
class _Edge:
    """One move from a step to another, with where it is written."""

    target: int | None  # None means join
    place: str
    key: str  # next, on_timeout, on_reject, parallel, or default for the following step


def validate_process(
    frontmatter: dict,
    *,
    folder_name: str | None = None,
    profiles: frozenset[str] = frozenset(),
    tools: frozenset[str] | None = None,
    check_unavailable_reason: str | None = None,
) -> list[str]:
    """Return every issue that keeps this frontmatter from being published; an empty list means valid."""
    if not isinstance(frontmatter, dict):
        return [f"frontmatter: must be a mapping with name, description and steps, not {_kind(frontmatter)}"]
    steps = frontmatter.get("steps")
    steps = steps if isinstance(steps, list) else []
    inputs = frontmatter.get("inputs")
    ids = _step_ids(steps)
    ctx = _Context(
        profiles=frozenset(profiles),
        tools=ALL_TOOLS if tools is None else frozenset(tools),
        check_unavailable_reason=check_unavailable_reason,
        steps=steps,
        inputs=inputs if isinstance(inputs, dict) else {},
        ids=ids,
        join_is_word=_has_parallel_step(steps) or JOIN not in ids,
    )
    _check_top_level(ctx, frontmatter, folder_name)
    for index, step in enumerate(steps):
        _check_step(ctx, index, step)
    if steps:
        _check_graph(ctx)
        if PARALLEL_PROFILE in ctx.profiles and PARALLEL_PROFILE in _profiles_used(steps, ids):
            _check_branches(ctx)
    _check_canonical(ctx, frontmatter)
    return ctx.issues


def role_names(frontmatter: dict) -> list[str]:
    """List the distinct role names used in ``person:``, in step order."""
    names: list[str] = []
    for step in _steps_of(frontmatter):
        person = step.get("person") if isinstance(step, dict) else None
        if _is_role(person) and person not in names:
            names.append(person)
    return names


def required_systems(frontmatter: dict) -> list[str]:
    """List the distinct system names in ``requires.systems``, in the order written."""
    requires = frontmatter.get("requires") if isinstance(frontmatter, dict) else None
    systems = requires.get("systems") if isinstance(requires, dict) else None
    if not isinstance(systems, list):
        return []
    names: list[str] = []
    for system in systems:
        if isinstance(system, str) and system not in names:
            names.append(system)
    return names


def profiles_used(frontmatter: dict) -> set[str]:
    """Name the profiles whose keys this frontmatter uses."""
    steps = _steps_of(frontmatter)
    return _profiles_used(steps, _step_ids(steps))


def parse_duration(text: str) -> int | None:
    """Return a duration's length in seconds, or None when it is not a valid duration."""
    if not isinstance(text, str):
        return None
    match = DURATION_PATTERN.match(text)
    if match is None or len(match.group(1)) > _MAX_DURATION_DIGITS:
        return None
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return seconds if seconds <= MAX_DURATION_SECONDS else None


# Spec §2.1: the frontmatter's own fields.


def _check_top_level(ctx: _Context, frontmatter: dict, folder_name: str | None) -> None:
    """Check name, description, inputs, steps and requires, and refuse any other field."""
    for key in frontmatter:
        if isinstance(key, str) and key not in TOP_LEVEL_KEYS:
            ctx.add(
                _child("", key),
                "unknown field; the frontmatter has only name, description, inputs, steps and requires",
            )

    name = frontmatter.get("name", _MISSING)
    if name is _MISSING:
        ctx.add("name", "required")
    elif not isinstance(name, str):
        ctx.add("name", f"must be a string, not {_kind(name)}")
    else:
        if len(name) > MAX_NAME_LENGTH:
            ctx.add("name", f"is longer than {MAX_NAME_LENGTH} characters")
        elif not NAME_PATTERN.match(name):
            ctx.add(
                "name",
                f"{_show(name)} must be lowercase letters and digits in words joined by single hyphens",
            )
        if folder_name is not None and name != folder_name:
            ctx.add("name", f"{_show(name)} does not match the folder name {_show(folder_name)}")

    description = frontmatter.get("description", _MISSING)
    if description is _MISSING:
        ctx.add("description", "required")
    elif not isinstance(description, str):
        ctx.add("description", f"must be a string, not {_kind(description)}")
    elif not description.strip():
        ctx.add("description", "must not be empty")

    if "inputs" in frontmatter:
        _check_fields(ctx, "inputs", frontmatter["inputs"])

    steps = frontmatter.get("steps", _MISSING)
    if steps is _MISSING:
        ctx.add("steps", "required")
    elif not isinstance(steps, list):
        ctx.add("steps", f"must be a list of steps, not {_kind(steps)}")
    elif not steps:
        ctx.add("steps", "must hold at least one step")

    if "requires" in frontmatter:
        _check_requires(ctx, frontmatter["requires"])


def _check_requires(ctx: _Context, requires: object) -> None:
    """Check that requires holds only systems, a list of distinct system names."""
    if not isinstance(requires, dict):
        ctx.add("requires", f"must be a mapping with systems, not {_kind(requires)}")
        return
    for key in requires:
        if isinstance(key, str) and key != "systems":
            ctx.add(_child("requires", key), "unknown field; requires has only systems")
    if "systems" not in requires:
        ctx.add("requires.systems", "required")
        return
    systems = requires["systems"]
    if not isinstance(systems, list):
        ctx.add("requires.systems", f"must be a list of system names, not {_kind(systems)}")
        return
    if not systems:
        ctx.add("requires.systems", "must name at least one system")
    seen: set[str] = set()
    for index, system in enumerate(systems):
        place = f"requires.systems[{index}]"
        if not isinstance(system, str):
            ctx.add(place, f"must be a string, not {_kind(system)}")
        elif len(system) > MAX_NAME_LENGTH or not NAME_PATTERN.match(system):
            ctx.add(
                place,
                f"{_show(system)} must be lowercase letters and digits in words joined by single hyphens, "
                f"at most {MAX_NAME_LENGTH} characters",
            )
        elif system in seen:
            ctx.add(place, f"{_show(system)} is listed more than once")
        else:
            seen.add(system)


# Spec §2.3: fields of inputs and output.


def _check_fields(ctx: _Context, place: str, fields: object) -> None:
    """Check a mapping of field names to field types."""
    if not isinstance(fields, dict):
        ctx.add(place, f"must be a mapping of field names to types, not {_kind(fields)}")
        return
    for name, spec in fields.items():
        if not isinstance(name, str):
            continue  # reported by the canonical JSON check, which covers every key
        if not name.strip():
            ctx.add(place, "field names must not be empty")
        _check_field(ctx, _child(place, name), spec, 0)


def _check_field(ctx: _Context, place: str, spec: object, depth: int) -> None:
    """Check one field: a type name, or a field object with type and its optional keys."""
    if isinstance(spec, str):
        if spec not in FIELD_TYPES:
            ctx.add(place, _unknown_type(spec))
        return
    if not isinstance(spec, dict):
        ctx.add(place, f"must be a type name or a field object with type, not {_kind(spec)}")
        return
    for key in spec:
        if isinstance(key, str) and key not in FIELD_KEYS:
            ctx.add(
                _child(place, key),
                "unknown field; a field has only type, description, optional, one_of and items",
            )
    field_type = spec.get("type", _MISSING)
    if field_type is _MISSING:
        ctx.add(f"{place}.type", "required")
        field_type = None
    elif not isinstance(field_type, str) or field_type not in FIELD_TYPES:
        ctx.add(f"{place}.type", _unknown_type(field_type))
        field_type = None
    if "description" in spec and not isinstance(spec["description"], str):
        ctx.add(f"{place}.description", f"must be a string, not {_kind(spec['description'])}")
    if "optional" in spec and not isinstance(spec["optional"], bool):
        ctx.add(f"{place}.optional", f"must be true or false, not {_show(spec['optional'])}")
    if "one_of" in spec:
        _check_one_of(ctx, f"{place}.one_of", spec["one_of"], field_type)
    if "items" in spec:
        if field_type is not None and field_type != "list":
            ctx.add(f"{place}.items", f"allowed only on list fields, not on a {field_type} field")
        elif depth >= _MAX_NESTING:
            ctx.add(f"{place}.items", f"is nested more than {_MAX_NESTING} levels deep")
        else:
            _check_field(ctx, f"{place}.items", spec["items"], depth + 1)


def _check_one_of(ctx: _Context, place: str, values: object, field_type: str | None) -> None:
    """Check that one_of is a non-empty list of values of the field's type."""
    if field_type is not None and field_type not in _ONE_OF_TYPES:
        ctx.add(place, f"allowed only on string, number and boolean fields, not on a {field_type} field")
        return
    if not isinstance(values, list) or not values:
        ctx.add(
            place, _list_issue(values, "a non-empty list of allowed values", "must hold at least one value")
        )
        return
    if field_type is None:
        return
    for index, value in enumerate(values):
        if not _has_type(value, field_type):
            ctx.add(f"{place}[{index}]", f"{_show(value)} is not a {field_type}")


def _has_type(value: object, field_type: str) -> bool:
    """Say whether a one_of value has the field's type."""
    if field_type == "string":
        return isinstance(value, str)
    if field_type == "boolean":
        return isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unknown_type(value: object) -> str:
    """Word the refusal of a type that is not one of the eight."""
    return f"{_show(value)} is not a type; the types are {_and(FIELD_TYPES)}"


def _field_type(spec: object) -> str | None:
    """Return a field's declared type, or None when the field itself is malformed."""
    if isinstance(spec, dict):
        spec = spec.get("type")
    return spec if isinstance(spec, str) and spec in FIELD_TYPES else None


# Spec §2.2: one step at a time.


def _check_step(ctx: _Context, index: int, step: object) -> None:
    """Check one step's id, kind, keys and values."""
    place = _step_place(index, step)
    if not isinstance(step, dict):
        ctx.add(place, f"must be a mapping with an id and one kind key, not {_kind(step)}")
        return
    _check_step_id(ctx, place, index, step)
    kind = _kind_key(ctx, place, step)
    for key in step:
        if isinstance(key, str) and key not in STEP_KEYS:
            ctx.add(_child(place, key), "unknown field")
    _check_profile_keys(ctx, place, step)
    if kind == PARALLEL_KIND and PARALLEL_PROFILE not in ctx.profiles:
        return
    if kind is not None:
        _check_kind_value(ctx, place, step, kind)
    for key in _APPLIES_TO:
        if key not in step or (key in _CHECK_KEYS and CHECK_PROFILE not in ctx.profiles):
            continue
        if kind is not None and kind not in _APPLIES_TO[key]:
            ctx.add(f"{place}.{key}", _not_applicable(key, kind))
            continue
        _check_optional_value(ctx, place, step, key, kind)
    if kind in PERSON_KINDS and "person" not in step:
        ctx.add(f"{place}.person", f"required on {kind} steps")


def _check_step_id(ctx: _Context, place: str, index: int, step: dict) -> None:
    """Check that the id is present, well formed, unique, and not reserved."""
    step_id = step.get("id", _MISSING)
    if step_id is _MISSING:
        ctx.add(f"{place}.id", "required")
    elif not isinstance(step_id, str):
        ctx.add(f"{place}.id", f"must be a string, not {_kind(step_id)}")
    elif not STEP_ID_PATTERN.match(step_id):
        ctx.add(
            f"{place}.id",
            f"{_show(step_id)} must start with a lowercase letter and hold only lowercase letters, digits, "
            "_ and -, at most 64 characters",
        )
    elif ctx.ids[step_id] != index:
        first = ctx.ids[step_id]
        ctx.add(
            f"{place}.id", f"{_show(step_id)} is already the id of {_step_place(first, ctx.steps[first])}"
        )
    elif (
        step_id == JOIN
        and PARALLEL_PROFILE in ctx.profiles
        and PARALLEL_PROFILE in _profiles_used(ctx.steps, ctx.ids)
    ):
        ctx.add(f"{place}.id", "'join' is reserved by the parallel-1 profile for the end of a branch")


def _kind_key(ctx: _Context, place: str, step: dict) -> str | None:
    """Return the step's one kind key, reporting none or several."""
    kinds = [key for key in _ALL_KINDS if key in step]
    if len(kinds) == 1:
        return kinds[0]
    offered = KIND_KEYS + ((PARALLEL_KIND,) if PARALLEL_PROFILE in ctx.profiles else ())
    if not kinds:
        ctx.add(place, f"needs one kind key: {_or(offered)}")
    else:
        ctx.add(place, f"has {len(kinds)} kind keys ({', '.join(kinds)}); a step has exactly one")
    return None


def _check_profile_keys(ctx: _Context, place: str, step: dict) -> None:
    """Report, once per process, a profile key the server does not offer."""
    if PARALLEL_PROFILE not in ctx.profiles:
        if PARALLEL_KIND in step:
            _unavailable(ctx, PARALLEL_PROFILE, f"{place}.parallel", f"needs the {PARALLEL_PROFILE} profile")
        for edge in _written_edges(ctx, place, step):
            if edge.target is None:
                _unavailable(
                    ctx, PARALLEL_PROFILE, edge.place, f"'join' needs the {PARALLEL_PROFILE} profile"
                )
    if CHECK_PROFILE not in ctx.profiles:
        for key in _CHECK_KEYS:
            if key in step:
                _unavailable(ctx, CHECK_PROFILE, f"{place}.{key}", f"needs the {CHECK_PROFILE} profile")


def _unavailable(ctx: _Context, what: str, place: str, message: str) -> None:
    """Report a missing profile or tool at its first use only."""
    if what in ctx.reported:
        return
    ctx.reported.add(what)
    message = f"{message}, which this server does not offer"
    if what == CHECK_PROFILE and ctx.check_unavailable_reason:
        message = f"{message} ({ctx.check_unavailable_reason})"
    ctx.add(place, message)


def _check_kind_value(ctx: _Context, place: str, step: dict, kind: str) -> None:
    """Check the value of the kind key."""
    value = step[kind]
    where = f"{place}.{kind}"
    if kind in OUTPUT_KINDS:
        if not _is_text(value):
            ctx.add(where, _text_issue(value, "the instructions, a non-empty string"))
    elif kind == "approve":
        if not _is_text(value):
            ctx.add(where, _text_issue(value, "what is being approved, a non-empty string"))
    elif kind == "finish":
        if not _is_text(value):
            ctx.add(where, _text_issue(value, "the run's outcome, a non-empty string"))
    elif kind == "wait":
        _check_duration(ctx, where, value)
    elif kind == "wait_until":
        issue = _path_issue(ctx, value, "datetime")
        if issue:
            ctx.add(where, issue)
    elif kind == StepKind.WAIT_FOR:
        if not isinstance(value, str) or not STEP_ID_PATTERN.match(value):
            ctx.add(
                where,
                f"{_show(value)} is not an event name; event names start with a lowercase letter and hold "
                "only lowercase letters, digits, _ and -",
            )
        if "send_event" not in ctx.tools:
            _unavailable(ctx, "send_event", where, "needs the send_event tool")
    else:
        _check_parallel_entries(ctx, where, step)


def _check_optional_value(ctx: _Context, place: str, step: dict, key: str, kind: str | None) -> None:
    """Check the value of one optional key the step's kind allows."""
    value = step[key]
    where = f"{place}.{key}"
    if key == "output":
        _check_fields(ctx, where, value)
    elif key == "evidence":
        _check_evidence(ctx, where, value)
    elif key == "next":
        _check_next(ctx, where, value, kind)
    elif key == "person":
        _check_person(ctx, where, value)
    elif key == "on_reject":
        _check_target(ctx, where, value, allow_join=False)
    elif key in ("due", "timeout"):
        _check_duration(ctx, where, value)
    elif key == "on_timeout":
        _check_target(ctx, where, value, allow_join=True)
    elif key == "check":
        _check_check(ctx, where, value)
    else:
        if not isinstance(value, bool):
            ctx.add(where, f"must be true or false, not {_show(value)}")
        if "check" not in step:
            ctx.add(where, "allowed only beside check")


def _not_applicable(key: str, kind: str) -> str:
    """Word the refusal of an optional key on a kind that does not take it."""
    if key == "next" and kind == "finish":
        return "a finish step has no next"
    if kind == PARALLEL_KIND:
        return "a parallel step takes only next"
    return f"not allowed on {kind} steps; it applies to {_and(_APPLIES_TO[key])} steps"


def _check_duration(ctx: _Context, place: str, value: object) -> None:
    """Check a duration: a whole number from 1 followed by m, h or d."""
    if parse_duration(value) is not None:
        return
    if isinstance(value, str) and DURATION_PATTERN.match(value):
        ctx.add(place, f"{_show(value)} is longer than 100 years")
    else:
        ctx.add(
            place,
            f"{_show(value)} is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
        )


def _check_evidence(ctx: _Context, place: str, value: object) -> None:
    """Check a list of evidence kinds, each at most once."""
    if not isinstance(value, list):
        ctx.add(place, f"must be a list of evidence kinds (file, link), not {_kind(value)}")
        return
    seen: set[str] = set()
    for index, kind in enumerate(value):
        if not isinstance(kind, str) or kind not in EVIDENCE_KINDS:
            ctx.add(f"{place}[{index}]", f"{_show(kind)} is not an evidence kind; use file or link")
        elif kind in seen:
            ctx.add(f"{place}[{index}]", f"{_show(kind)} is listed more than once")
        else:
            seen.add(kind)
    if "file" in seen and "upload" not in ctx.tools:
        _unavailable(ctx, "upload", place, "file evidence needs the upload tool")


def _check_next(ctx: _Context, place: str, value: object, kind: str | None) -> None:
    """Check next: one step id, or a list of two or more routes on agent and task steps."""
    if isinstance(value, str):
        _check_target(ctx, place, value, allow_join=True)
        return
    if not isinstance(value, list):
        ctx.add(place, f"must be a step id or a list of routes, not {_kind(value)}")
        return
    if kind is not None and kind not in OUTPUT_KINDS:
        ctx.add(place, f"a list of routes is allowed only on agent and task steps, not on {kind} steps")
    if len(value) < 2:
        ctx.add(place, "a list of routes needs two or more routes")
    seen: set[str] = set()
    for index, route in enumerate(value):
        where = f"{place}[{index}]"
        target = _route_target(route)
        if isinstance(route, str):
            _check_target(ctx, where, route, allow_join=True)
        elif isinstance(route, dict):
            _check_route(ctx, where, route)
        else:
            ctx.add(where, f"must be a step id or a mapping with to and when, not {_kind(route)}")
        if isinstance(target, str):
            if target in seen:
                ctx.add(where, f"{_show(target)} is already a route of this step")
            seen.add(target)


def _check_route(ctx: _Context, place: str, route: dict) -> None:
    """Check a route written as a mapping with to and when."""
    for key in route:
        if isinstance(key, str) and key not in ROUTE_KEYS:
            ctx.add(_child(place, key), "unknown field; a route has only to and when")
    if "to" not in route:
        ctx.add(f"{place}.to", "required")
    else:
        _check_target(ctx, f"{place}.to", route["to"], allow_join=True)
    if "when" not in route:
        ctx.add(f"{place}.when", "required; write the route as a plain step id if it needs no condition")
    elif not _is_text(route["when"]):
        ctx.add(f"{place}.when", _text_issue(route["when"], "words saying when to take this route"))


def _check_target(ctx: _Context, place: str, target: object, *, allow_join: bool) -> None:
    """Check that a reference names an existing step (or join, where join is allowed)."""
    if not isinstance(target, str):
        ctx.add(place, f"must be a step id, not {_kind(target)}")
    elif allow_join and target == JOIN and ctx.join_is_word:
        return  # where join may appear is the parallel profile's business
    elif target not in ctx.ids:
        ctx.add(place, f"no step named {_show(target)}")


def _check_person(ctx: _Context, place: str, value: object) -> None:
    """Check person: a role name, initiator, or a path to a declared person field."""
    if not isinstance(value, str):
        ctx.add(place, f"must be a role name, initiator, or a path to a person field, not {_kind(value)}")
    elif not value.strip():
        ctx.add(place, "must not be blank")
    elif "." in value:
        issue = _path_issue(ctx, value, "person")
        if issue:
            ctx.add(place, issue)


def _path_issue(ctx: _Context, path: object, wanted: str) -> str | None:
    """Say what is wrong with a path into run data that must hold a field of the wanted type."""
    shape = f"must be a path to a {wanted} field, inputs.<field> or steps.<id>.output.<field>"
    if not isinstance(path, str):
        return f"{shape}, not {_kind(path)}"
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "inputs":
        name = parts[1]
        if name not in ctx.inputs:
            return f"{_show(path)} names no declared input field {_show(name)}"
        spec = ctx.inputs[name]
    elif len(parts) == 4 and parts[0] == "steps" and parts[2] == "output":
        step_id, name = parts[1], parts[3]
        if step_id not in ctx.ids:
            return f"{_show(path)} names no step {_show(step_id)}"
        output = ctx.steps[ctx.ids[step_id]].get("output")
        if not isinstance(output, dict) or name not in output:
            return f"{_show(path)}: step {_show(step_id)} declares no output field {_show(name)}"
        spec = output[name]
    else:
        suffix = "; role names cannot contain dots" if wanted == "person" else ""
        return f"{shape}, not {_show(path)}{suffix}"
    found = _field_type(spec)
    if found is not None and found != wanted:
        return f"{_show(path)} is a {found} field, not a {wanted} field"
    return None


# Profile check-1 §2: the check key.


def _check_check(ctx: _Context, place: str, value: object) -> None:
    """Check a check: one yes/no question as a string, or a list of questions."""
    if isinstance(value, str):
        if not value.strip():
            ctx.add(place, "must not be blank")
        return
    if not isinstance(value, list):
        ctx.add(place, f"must be a yes/no question (a string) or a list of questions, not {_kind(value)}")
        return
    if not value:
        ctx.add(place, "must hold at least one question")
    for index, question in enumerate(value):
        _check_question(ctx, f"{place}[{index}]", question)


def _check_question(ctx: _Context, place: str, question: object) -> None:
    """Check one question of a check: yes/no, choice or rubric."""
    if not isinstance(question, dict):
        ctx.add(place, f"must be a mapping with ask, not {_kind(question)}")
        return
    for key in question:
        if isinstance(key, str) and key not in QUESTION_KEYS:
            ctx.add(_child(place, key), "unknown field")
    if "ask" not in question:
        ctx.add(f"{place}.ask", "required")
    elif not _is_text(question["ask"]):
        ctx.add(f"{place}.ask", _text_issue(question["ask"], "the question, a non-empty string"))
    if "one_of" in question and "levels" in question:
        ctx.add(place, "has both one_of and levels; a question is yes/no, a choice or a rubric")
    elif "one_of" in question:
        _check_choice(ctx, place, question)
    elif "levels" in question:
        _check_rubric(ctx, place, question)
    else:
        _check_yes_no(ctx, place, question)


def _check_yes_no(ctx: _Context, place: str, question: dict) -> None:
    """Check the thresholds of a yes/no question."""
    for key in ("pass", "fail"):
        if key in question and not _is_probability(question[key]):
            ctx.add(
                f"{place}.{key}",
                f"must be a number from 0 to 1 on a yes/no question, not {_show(question[key])}",
            )
    passes, fails = question.get("pass"), question.get("fail")
    if _is_probability(passes) and _is_probability(fails) and fails >= passes:
        ctx.add(f"{place}.fail", f"must be below pass ({_show(passes)})")
    _refuse_keys(ctx, place, question, "yes/no")


def _check_choice(ctx: _Context, place: str, question: dict) -> None:
    """Check a choice question: one_of answers, the answers that pass, and the unsure ones."""
    answers = question["one_of"]
    names: set[str] | None = None
    if not isinstance(answers, dict) or len(answers) < 2:
        if isinstance(answers, dict):
            ctx.add(f"{place}.one_of", "must have two or more answers")
        else:
            ctx.add(
                f"{place}.one_of", f"must map two or more answer names to descriptions, not {_kind(answers)}"
            )
    if isinstance(answers, dict):
        names = {name for name in answers if isinstance(name, str)}
        for name, description in answers.items():
            if isinstance(name, str) and not name.strip():
                ctx.add(f"{place}.one_of", "answer names must not be empty")
            elif isinstance(name, str) and not _is_text(description):
                ctx.add(
                    _child(f"{place}.one_of", name),
                    _text_issue(description, "a description of the answer"),
                )
    if "pass" not in question:
        ctx.add(f"{place}.pass", "required on a choice question: the list of answer names that pass")
        passing: set[str] = set()
    else:
        passing = _check_answer_names(ctx, f"{place}.pass", question["pass"], names, required=True)
    if "unsure" in question:
        unsure = _check_answer_names(ctx, f"{place}.unsure", question["unsure"], names, required=False)
        for name in sorted(unsure & passing):
            ctx.add(f"{place}.unsure", f"{_show(name)} is also in pass")
    _check_confidence(ctx, place, question)
    _refuse_keys(ctx, place, question, "choice")


def _check_answer_names(
    ctx: _Context, place: str, value: object, names: set[str] | None, *, required: bool
) -> set[str]:
    """Check a list of answer names from one_of, returning the valid ones."""
    if not isinstance(value, list):
        ctx.add(place, f"must be a list of answer names from one_of, not {_show(value)}")
        return set()
    if required and not value:
        ctx.add(place, "must name at least one answer")
    found: set[str] = set()
    for index, name in enumerate(value):
        where = f"{place}[{index}]"
        if not isinstance(name, str) or (names is not None and name not in names):
            ctx.add(where, f"{_show(name)} is not an answer in one_of")
        elif name in found:
            ctx.add(where, f"{_show(name)} is listed more than once")
        else:
            found.add(name)
    return found


def _check_rubric(ctx: _Context, place: str, question: dict) -> None:
    """Check a rubric question: 2 to 10 levels and the level index that passes."""
    levels = question["levels"]
    count: int | None = None
    if not isinstance(levels, list) or not 2 <= len(levels) <= 10:
        ctx.add(
            f"{place}.levels",
            _list_issue(
                levels,
                "a list of 2 to 10 level descriptions, worst first",
                f"has {_len(levels)} levels; a rubric has 2 to 10",
            ),
        )
    else:
        count = len(levels)
        for index, level in enumerate(levels):
            if not _is_text(level):
                ctx.add(f"{place}.levels[{index}]", _text_issue(level, "a description of the level"))
    if "pass" not in question:
        ctx.add(
            f"{place}.pass", "required on a rubric question: the level, from 0, at or above which it passes"
        )
    else:
        level = question["pass"]
        if not isinstance(level, int) or isinstance(level, bool):
            ctx.add(f"{place}.pass", f"must be a level number (0, 1, …), not {_show(level)}")
        elif count is not None and not 0 <= level < count:
            ctx.add(f"{place}.pass", f"{_show(level)} is not a level; the levels are 0 to {count - 1}")
    _check_confidence(ctx, place, question)
    _refuse_keys(ctx, place, question, "rubric")


def _check_confidence(ctx: _Context, place: str, question: dict) -> None:
    """Check an optional confidence threshold."""
    if "confidence" in question and not _is_probability(question["confidence"]):
        ctx.add(f"{place}.confidence", f"must be a number from 0 to 1, not {_show(question['confidence'])}")


def _refuse_keys(ctx: _Context, place: str, question: dict, kind: str) -> None:
    """Refuse the question keys that belong to other question kinds."""
    if "fail" in question and kind != "yes/no":
        ctx.add(f"{place}.fail", "allowed only on yes/no questions (without one_of or levels)")
    if "unsure" in question and kind != "choice":
        ctx.add(f"{place}.unsure", "allowed only on choice questions (with one_of)")
    if "confidence" in question and kind == "yes/no":
        ctx.add(f"{place}.confidence", "allowed only on choice and rubric questions")


# Spec §2.2 (the step graph) and profile parallel-1 §2.


def _check_parallel_entries(ctx: _Context, place: str, step: dict) -> None:
    """Check a parallel step's list of two or more branch entries."""
    entries = step[PARALLEL_KIND]
    if not isinstance(entries, list) or len(entries) < 2:
        ctx.add(
            place,
            _list_issue(
                entries,
                "a list of two or more step ids, the branch entries",
                "must list two or more branch entries",
            ),
        )
        if not isinstance(entries, list):
            return
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{place}[{index}]"
        if isinstance(entry, str) and entry == step.get("id"):
            ctx.add(where, "a parallel step cannot list itself")
            continue
        _check_target(ctx, where, entry, allow_join=False)
        if isinstance(entry, str):
            if entry in seen:
                ctx.add(where, f"{_show(entry)} is listed more than once")
            seen.add(entry)


def _check_graph(ctx: _Context) -> None:
    """Check reachability, the last step, and that next and on_timeout never loop."""
    steps = ctx.steps
    edges = [_edges(ctx, index) for index in range(len(steps))]

    reached = {0}
    pending = [0]
    while pending:
        for edge in edges[pending.pop()]:
            if edge.target is not None and edge.target not in reached:
                reached.add(edge.target)
                pending.append(edge.target)
    for index, step in enumerate(steps):
        if isinstance(step, dict) and index not in reached:
            ctx.add(_step_place(index, step), "is not reachable from the first step")

    last = len(steps) - 1
    if isinstance(steps[last], dict) and "next" not in steps[last]:
        kind = _single_kind(steps[last])
        if kind is not None and kind != "finish":
            ctx.add(_step_place(last, steps[last]), "is the last step and not a finish, so it must name next")

    # Only on_reject goes back; parallel-1 §2 also exempts parallel and join edges.
    forward = [
        [edge for edge in step_edges if edge.key in ("next", "default", "on_timeout")] for step_edges in edges
    ]
    for edge in _loop_edges(forward):
        target = _step_name(ctx.steps, edge.target)
        if edge.key == "default":
            ctx.add(
                edge.place,
                f"continuing to the following step {target} makes a loop; only on_reject may go back",
            )
        else:
            ctx.add(edge.place, f"going to {target} makes a loop; only on_reject may go back")


def _loop_edges(forward: list[list[_Edge]]) -> Iterator[_Edge]:
    """Yield each edge that closes a loop, found by an iterative depth-first search."""
    state = [0] * len(forward)  # 0 unseen, 1 on the current path, 2 finished
    for start in range(len(forward)):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(forward[start]))]
        while stack:
            node, remaining = stack[-1]
            edge = next(remaining, None)
            if edge is None:
                state[node] = 2
                stack.pop()
            elif edge.target is None:
                continue
            elif state[edge.target] == 1:
                yield edge
            elif state[edge.target] == 0:
                state[edge.target] = 1
                stack.append((edge.target, iter(forward[edge.target])))


def _edges(ctx: _Context, index: int) -> list[_Edge]:
    """List every move out of a step, including the default move to the following step."""
    step = ctx.steps[index]
    place = _step_place(index, step)
    if not isinstance(step, dict):
        return [_Edge(index + 1, place, "default")] if index + 1 < len(ctx.steps) else []
    kind = _single_kind(step)
    if kind == "finish":
        return []
    edges = _written_edges(ctx, place, step)
    if not _has_valid_next(step) and index + 1 < len(ctx.steps):
        edges.append(_Edge(index + 1, place, "default"))
    if kind == PARALLEL_KIND and isinstance(step[PARALLEL_KIND], list):
        for position, entry in enumerate(step[PARALLEL_KIND]):
            if isinstance(entry, str) and entry in ctx.ids:
                edges.append(_Edge(ctx.ids[entry], f"{place}.parallel[{position}]", "parallel"))
    return edges


def _written_edges(ctx: _Context, place: str, step: dict) -> list[_Edge]:
    """List the moves a step writes out in next, on_timeout and on_reject, resolved to step indexes."""
    edges: list[_Edge] = []
    nxt = step.get("next")
    if isinstance(nxt, str):
        edges.extend(_edge(ctx, nxt, f"{place}.next", "next"))
    elif isinstance(nxt, list):
        for position, route in enumerate(nxt):
            edges.extend(_edge(ctx, _route_target(route), f"{place}.next[{position}]", "next"))
    for key in ("on_timeout", "on_reject"):
        edges.extend(_edge(ctx, step.get(key), f"{place}.{key}", key))
    return edges


def _edge(ctx: _Context, target: object, place: str, key: str) -> list[_Edge]:
    """Resolve one written reference to an edge, or to nothing when it names no step."""
    if not isinstance(target, str):
        return []
    if target == JOIN and ctx.join_is_word and key != "on_reject":
        return [_Edge(None, place, key)]
    if target in ctx.ids:
        return [_Edge(ctx.ids[target], place, key)]
    return []


def _has_valid_next(step: dict) -> bool:
    """Say whether next is written in a form that replaces the default following step."""
    return isinstance(step.get("next"), str | list)


def _check_branches(ctx: _Context) -> None:
    """Enforce the parallel-1 publication rules on every branch."""
    steps = ctx.steps
    edges = [_edges(ctx, index) for index in range(len(steps))]
    parallels = {
        i for i, step in enumerate(steps) if isinstance(step, dict) and _single_kind(step) == PARALLEL_KIND
    }
    branches_of: dict[int, list[tuple[int, int]]] = {}  # step -> (parallel step, entry) of its branches
    brought_by: dict[int, str] = {}  # step -> the place of the edge that first brought it into a branch

    for parallel in sorted(parallels):
        for edge in edges[parallel]:
            if edge.key != "parallel" or edge.target == parallel:
                continue
            _walk_branch(ctx, edges, parallel, edge, parallels, branches_of, brought_by)

    in_branch = set(branches_of)
    for index, branches in branches_of.items():
        if len(branches) > 1:
            names = [_step_name(steps, entry) for _, entry in branches]
            if len(set(names)) < len(names):
                names = [
                    f"{name} of {_step_name(steps, fork)}"
                    for name, (fork, _) in zip(names, branches, strict=True)
                ]
            ctx.add(_step_place(index, steps[index]), f"is in more than one branch (from {_and(names)})")

    for index in range(len(steps)):
        for edge in edges[index]:
            if edge.key == "parallel":
                continue
            if index not in in_branch:
                _check_edge_from_outside(ctx, edge, in_branch, brought_by)
            elif (
                edge.key == "on_reject"
                and edge.target is not None
                and not set(branches_of.get(edge.target, ())) & set(branches_of[index])
            ):
                ctx.add(edge.place, "inside a branch, on_reject must return to a step in the same branch")


def _walk_branch(
    ctx: _Context,
    edges: list[list[_Edge]],
    parallel: int,
    entry_edge: _Edge,
    parallels: set[int],
    branches_of: dict[int, list[tuple[int, int]]],
    brought_by: dict[int, str],
) -> None:
    """Follow one branch from its entry along next and on_timeout, checking each step on the way."""
    steps = ctx.steps
    entry = entry_edge.target
    assert entry is not None
    if not _branch_target_ok(ctx, entry_edge, parallel, parallels):
        return
    members = [entry]
    seen = {entry}
    brought_by.setdefault(entry, entry_edge.place)
    reaches_join: set[int] = set()
    comes_from: dict[int, list[int]] = {}
    for member in members:
        branches_of.setdefault(member, [])
        if (parallel, entry) not in branches_of[member]:
            branches_of[member].append((parallel, entry))
        step = steps[member]
        if not _has_valid_next(step):
            ctx.add(
                _step_place(member, step),
                "is in a branch, so it must name next: a step of the branch or join",
            )
            reaches_join.add(member)  # already reported; do not also say it never reaches join
        for edge in edges[member]:
            if edge.key not in ("next", "on_timeout"):
                continue
            if edge.target is None:
                reaches_join.add(member)
            elif _branch_target_ok(ctx, edge, parallel, parallels):
                comes_from.setdefault(edge.target, []).append(member)
                if edge.target not in seen:
                    seen.add(edge.target)
                    brought_by.setdefault(edge.target, edge.place)
                    members.append(edge.target)
    pending = list(reaches_join)
    while pending:
        for source in comes_from.get(pending.pop(), ()):
            if source not in reaches_join:
                reaches_join.add(source)
                pending.append(source)
    for member in members:
        if member not in reaches_join:
            ctx.add(
                _step_place(member, steps[member]),
                "never reaches join; every step in a branch must lead to join",
            )


def _branch_target_ok(ctx: _Context, edge: _Edge, parallel: int, parallels: set[int]) -> bool:
    """Refuse a branch that goes to a parallel step or a finish."""
    target = edge.target
    assert target is not None
    step = ctx.steps[target]
    name = _step_name(ctx.steps, target)
    if target == parallel:
        ctx.add(edge.place, f"a branch cannot go back to its parallel step {name}")
    elif target in parallels:
        ctx.add(edge.place, f"a branch cannot contain the parallel step {name}; parallel-1 does not nest")
    elif isinstance(step, dict) and _single_kind(step) == "finish":
        ctx.add(edge.place, f"a branch cannot contain the finish {name}; end the branch with join")
    else:
        return True
    return False


def _check_edge_from_outside(
    ctx: _Context, edge: _Edge, in_branch: set[int], brought_by: dict[int, str]
) -> None:
    """Refuse join outside a branch, and any move from outside into a branch step."""
    if edge.target is None:
        ctx.add(edge.place, "join is allowed only inside a branch")
        return
    if edge.target not in in_branch:
        return
    name = _step_name(ctx.steps, edge.target)
    if edge.key == "on_reject":
        ctx.add(
            edge.place, f"cannot return into the branch step {name}; return to the parallel step or before it"
        )
    elif edge.key == "default":
        ctx.add(edge.place, f"continues by default into the branch step {name}; name next")
    else:
        ctx.add(
            edge.place,
            f"goes into the branch step {name} (in the branch through {brought_by[edge.target]}); "
            "only the parallel step starts a branch",
        )


# Spec §6 rule 5: the content hash needs canonical JSON.


def _check_canonical(ctx: _Context, frontmatter: dict) -> None:
    """Refuse what RFC 8785 cannot write: huge integers, non-finite floats, bad strings, other types."""
    pending: list[tuple[object, str, int]] = [(frontmatter, "frontmatter", 0)]
    budget = _MAX_VALUES
    while pending:
        value, place, depth = pending.pop()
        budget -= 1
        if budget < 0:
            # Only a mapping built in Python, sharing itself many times over, gets here; YAML cannot.
            ctx.add("frontmatter", f"holds more than {_MAX_VALUES} values")
            return
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            if not -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
                ctx.add(
                    place,
                    f"{_show(value)} is beyond ±{_SAFE_INTEGER}, the largest integers canonical JSON holds exactly; "
                    "quote it if it is text",
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                ctx.add(place, f"{_show(value)} is not a finite number, which canonical JSON cannot hold")
        elif isinstance(value, str):
            if not _is_unicode(value):
                ctx.add(place, "holds a lone surrogate, which is not valid Unicode")
        elif isinstance(value, dict | list | tuple):
            if depth >= _MAX_NESTING:
                ctx.add(place, f"is nested more than {_MAX_NESTING} levels deep")
                continue
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        ctx.add(place, f"key {_show(key)} is not a string")
                    elif not _is_unicode(key):
                        ctx.add(place, "has a key holding a lone surrogate, which is not valid Unicode")
                    else:
                        pending.append(
                            (item, _child("" if place == "frontmatter" else place, key), depth + 1)
                        )
            elif place == "steps":
                pending.extend((item, _step_place(i, item), depth + 1) for i, item in enumerate(value))
            else:
                pending.extend((item, f"{place}[{i}]", depth + 1) for i, item in enumerate(value))
        else:
            ctx.add(place, f"holds a {type(value).__name__}, which is not a JSON value")


# Small readers shared by the checks above.


def _steps_of(frontmatter: object) -> list:
    """Return the steps list of a frontmatter of any shape."""
    steps = frontmatter.get("steps") if isinstance(frontmatter, dict) else None
    return steps if isinstance(steps, list) else []


def _step_ids(steps: list) -> dict[str, int]:
    """Map each string step id to the index of its first step."""
    ids: dict[str, int] = {}
    for index, step in enumerate(steps):
        step_id = step.get("id") if isinstance(step, dict) else None
        if isinstance(step_id, str) and step_id not in ids:
            ids[step_id] = index
    return ids


def _single_kind(step: dict) -> str | None:
    """Return the step's kind key when it has exactly one."""
    kinds = [key for key in _ALL_KINDS if key in step]
    return kinds[0] if len(kinds) == 1 else None


def _has_parallel_step(steps: list) -> bool:
    """Say whether any step uses the parallel key."""
    return any(isinstance(step, dict) and PARALLEL_KIND in step for step in steps)


def _profiles_used(steps: list, ids: dict[str, int]) -> set[str]:
    """Name the profiles whose keys these steps use: parallel or join, check or advisory."""
    used: set[str] = set()
    join_is_word = _has_parallel_step(steps) or JOIN not in ids
    for step in steps:
        if not isinstance(step, dict):
            continue
        if PARALLEL_KIND in step or (join_is_word and JOIN in _join_candidates(step)):
            used.add(PARALLEL_PROFILE)
        if any(key in step for key in _CHECK_KEYS):
            used.add(CHECK_PROFILE)
    return used


def _join_candidates(step: dict) -> list[str]:
    """List the string targets of next and on_timeout, where join may stand."""
    nxt = step.get("next")
    routes = [nxt] if isinstance(nxt, str) else nxt if isinstance(nxt, list) else []
    targets = [target for target in map(_route_target, routes) if isinstance(target, str)]
    on_timeout = step.get("on_timeout")
    return [*targets, on_timeout] if isinstance(on_timeout, str) else targets


def _route_target(route: object) -> object:
    """Return the step a route goes to, whichever way the route is written."""
    return route.get("to") if isinstance(route, dict) else route


def _is_role(person: object) -> bool:
    """Say whether a person value is a role name rather than initiator or a path."""
    return isinstance(person, str) and bool(person.strip()) and "." not in person and person != INITIATOR


def _text_issue(value: object, what: str) -> str:
    """Word the refusal of a value that should be non-blank text."""
    if isinstance(value, str):
        return "must not be blank"
    return f"must be {what}, not {_kind(value)}"


def _list_issue(value: object, what: str, too_short: str) -> str:
    """Word the refusal of a value that should be a list of some length."""
    return too_short if isinstance(value, list) else f"must be {what}, not {_kind(value)}"


def _len(value: object) -> int:
    """Return the length of a list, or 0 for anything else."""
    return len(value) if isinstance(value, list) else 0


def _is_text(value: object) -> bool:
    """Say whether a value is a string with something in it."""
    return isinstance(value, str) and bool(value.strip())


def _is_probability(value: object) -> bool:
    """Say whether a value is a number from 0 to 1."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _is_unicode(text: str) -> bool:
    """Say whether a string can be encoded as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _step_place(index: int, step: object) -> str:
    """Name a step by position and, when it has a string id, by id."""
    step_id = step.get("id") if isinstance(step, dict) else None
    if isinstance(step_id, str):
        shown = step_id if len(step_id) <= 64 else step_id[:64] + "…"
        return f"steps[{index}] ({shown})"
    return f"steps[{index}]"


def _step_name(steps: list, index: int) -> str:
    """Name a step briefly inside an issue: its quoted id, or its position when it has none."""
    step = steps[index]
    step_id = step.get("id") if isinstance(step, dict) else None
    return _show(step_id) if isinstance(step_id, str) else f"steps[{index}]"


def _child(parent: str, key: object) -> str:
    """Name a key inside a place, quoting keys that would not read plainly."""
    text = key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else _show(key)
    return f"{parent}.{text}" if parent else text



def _and(words: tuple[str, ...] | list[str]) -> str:
    """Join words as 'a, b and c'."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _or(words: tuple[str, ...] | list[str]) -> str:
    """Join words as 'a, b or c'."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
