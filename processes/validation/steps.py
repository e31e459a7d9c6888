"""Spec §2.2: one step, its kind, its optional keys, its routes and targets (parallel-1 entries included)."""

from processes import wording
from processes.kinds import OUTPUT_KINDS, PERSON_KINDS, StepKind
from processes.spec import (
    ALL_KINDS,
    APPLIES_TO,
    CHECK_KEYS,
    CHECK_PROFILE,
    DURATION_PATTERN,
    EVIDENCE_KINDS,
    JOIN,
    KIND_KEYS,
    PARALLEL_KIND,
    PARALLEL_PROFILE,
    ROUTE_KEYS,
    STEP_ID_PATTERN,
    STEP_KEYS,
    parse_duration,
)
from processes.validation.context import (
    MISSING,
    Context,
    and_list,
    child,
    is_text,
    list_issue,
    or_list,
    profiles_in,
    route_target,
    step_place,
    text_issue,
)
from processes.validation.fields import check_fields, type_of_field
from processes.validation.graph import written_edges
from processes.validation.questions import check_check


def check_step(ctx: Context, index: int, step: object) -> None:
    """Check one step's id, kind, keys and values."""
    place = step_place(index, step)
    if not isinstance(step, dict):
        ctx.add(place, f"must be a mapping with an id and one kind key, not {wording.kind(step)}")
        return
    check_step_id(ctx, place, index, step)
    kind = kind_key(ctx, place, step)
    for key in step:
        if isinstance(key, str) and key not in STEP_KEYS:
            ctx.add(child(place, key), "unknown field")
    check_profile_keys(ctx, place, step)
    if kind == PARALLEL_KIND and PARALLEL_PROFILE not in ctx.profiles:
        return
    if kind is not None:
        check_kind_value(ctx, place, step, kind)
    for key in APPLIES_TO:
        if key not in step or (key in CHECK_KEYS and CHECK_PROFILE not in ctx.profiles):
            continue
        if kind is not None and kind not in APPLIES_TO[key]:
            ctx.add(f"{place}.{key}", not_applicable(key, kind))
            continue
        check_optional_value(ctx, place, step, key, kind)
    if kind in PERSON_KINDS and "person" not in step:
        ctx.add(f"{place}.person", f"required on {kind} steps")


def check_step_id(ctx: Context, place: str, index: int, step: dict) -> None:
    """Check that the id is present, well formed, unique, and not reserved."""
    step_id = step.get("id", MISSING)
    if step_id is MISSING:
        ctx.add(f"{place}.id", "required")
    elif not isinstance(step_id, str):
        ctx.add(f"{place}.id", f"must be a string, not {wording.kind(step_id)}")
    elif not STEP_ID_PATTERN.match(step_id):
        ctx.add(
            f"{place}.id",
            f"{wording.show(step_id)} must start with a lowercase letter and hold only lowercase letters, digits, "
            "_ and -, at most 64 characters",
        )
    elif ctx.ids[step_id] != index:
        first = ctx.ids[step_id]
        ctx.add(
            f"{place}.id",
            f"{wording.show(step_id)} is already the id of {step_place(first, ctx.steps[first])}",
        )
    elif (
        step_id == JOIN
        and PARALLEL_PROFILE in ctx.profiles
        and PARALLEL_PROFILE in profiles_in(ctx.steps, ctx.ids)
    ):
        ctx.add(f"{place}.id", "'join' is reserved by the parallel-1 profile for the end of a branch")


def kind_key(ctx: Context, place: str, step: dict) -> str | None:
    """Return the step's one kind key, reporting none or several."""
    kinds = [key for key in ALL_KINDS if key in step]
    if len(kinds) == 1:
        return kinds[0]
    offered = KIND_KEYS + ((PARALLEL_KIND,) if PARALLEL_PROFILE in ctx.profiles else ())
    if not kinds:
        ctx.add(place, f"needs one kind key: {or_list(offered)}")
    else:
        ctx.add(place, f"has {len(kinds)} kind keys ({', '.join(kinds)}); a step has exactly one")
    return None


def check_profile_keys(ctx: Context, place: str, step: dict) -> None:
    """Report, once per process, a profile key the server does not offer."""
    if PARALLEL_PROFILE not in ctx.profiles:
        if PARALLEL_KIND in step:
            unavailable(ctx, PARALLEL_PROFILE, f"{place}.parallel", f"needs the {PARALLEL_PROFILE} profile")
        for edge in written_edges(ctx, place, step):
            if edge.target is None:
                unavailable(ctx, PARALLEL_PROFILE, edge.place, f"'join' needs the {PARALLEL_PROFILE} profile")
    if CHECK_PROFILE not in ctx.profiles:
        for key in CHECK_KEYS:
            if key in step:
                unavailable(ctx, CHECK_PROFILE, f"{place}.{key}", f"needs the {CHECK_PROFILE} profile")


def unavailable(ctx: Context, what: str, place: str, message: str) -> None:
    """Report a missing profile or tool at its first use only."""
    if what in ctx.reported:
        return
    ctx.reported.add(what)
    message = f"{message}, which this server does not offer"
    if what == CHECK_PROFILE and ctx.check_unavailable_reason:
        message = f"{message} ({ctx.check_unavailable_reason})"
    ctx.add(place, message)


def check_kind_value(ctx: Context, place: str, step: dict, kind: str) -> None:
    """Check the value of the kind key."""
    value = step[kind]
    where = f"{place}.{kind}"
    if kind in OUTPUT_KINDS:
        if not is_text(value):
            ctx.add(where, text_issue(value, "the instructions, a non-empty string"))
    elif kind == "approve":
        if not is_text(value):
            ctx.add(where, text_issue(value, "what is being approved, a non-empty string"))
    elif kind == "finish":
        if not is_text(value):
            ctx.add(where, text_issue(value, "the run's outcome, a non-empty string"))
    elif kind == "wait":
        check_duration(ctx, where, value)
    elif kind == "wait_until":
        issue = path_issue(ctx, value, "datetime")
        if issue:
            ctx.add(where, issue)
    elif kind == StepKind.WAIT_FOR:
        if not isinstance(value, str) or not STEP_ID_PATTERN.match(value):
            ctx.add(
                where,
                f"{wording.show(value)} is not an event name; event names start with a lowercase letter and hold "
                "only lowercase letters, digits, _ and -",
            )
        if "send_event" not in ctx.tools:
            unavailable(ctx, "send_event", where, "needs the send_event tool")
    else:
        check_parallel_entries(ctx, where, step)


def check_optional_value(ctx: Context, place: str, step: dict, key: str, kind: str | None) -> None:
    """Check the value of one optional key the step's kind allows."""
    value = step[key]
    where = f"{place}.{key}"
    if key == "output":
        check_fields(ctx, where, value)
    elif key == "evidence":
        check_evidence(ctx, where, value)
    elif key == "next":
        check_next(ctx, where, value, kind)
    elif key == "person":
        check_person(ctx, where, value)
    elif key == "on_reject":
        check_target(ctx, where, value, allow_join=False)
    elif key in ("due", "timeout"):
        check_duration(ctx, where, value)
    elif key == "on_timeout":
        check_target(ctx, where, value, allow_join=True)
    elif key == "check":
        check_check(ctx, where, value)
    else:
        if not isinstance(value, bool):
            ctx.add(where, f"must be true or false, not {wording.show(value)}")
        if "check" not in step:
            ctx.add(where, "allowed only beside check")


def not_applicable(key: str, kind: str) -> str:
    """Word the refusal of an optional key on a kind that does not take it."""
    if key == "next" and kind == "finish":
        return "a finish step has no next"
    if kind == PARALLEL_KIND:
        return "a parallel step takes only next"
    return f"not allowed on {kind} steps; it applies to {and_list(APPLIES_TO[key])} steps"


def check_duration(ctx: Context, place: str, value: object) -> None:
    """Check a duration: a whole number from 1 followed by m, h or d."""
    if parse_duration(value) is not None:
        return
    if isinstance(value, str) and DURATION_PATTERN.match(value):
        ctx.add(place, f"{wording.show(value)} is longer than 100 years")
    else:
        ctx.add(
            place,
            f"{wording.show(value)} is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
        )


def check_evidence(ctx: Context, place: str, value: object) -> None:
    """Check a list of evidence kinds, each at most once."""
    if not isinstance(value, list):
        ctx.add(place, f"must be a list of evidence kinds (file, link), not {wording.kind(value)}")
        return
    seen: set[str] = set()
    for index, kind in enumerate(value):
        if not isinstance(kind, str) or kind not in EVIDENCE_KINDS:
            ctx.add(f"{place}[{index}]", f"{wording.show(kind)} is not an evidence kind; use file or link")
        elif kind in seen:
            ctx.add(f"{place}[{index}]", f"{wording.show(kind)} is listed more than once")
        else:
            seen.add(kind)
    if "file" in seen and "upload" not in ctx.tools:
        unavailable(ctx, "upload", place, "file evidence needs the upload tool")


def check_next(ctx: Context, place: str, value: object, kind: str | None) -> None:
    """Check next: one step id, or a list of two or more routes on agent and task steps."""
    if isinstance(value, str):
        check_target(ctx, place, value, allow_join=True)
        return
    if not isinstance(value, list):
        ctx.add(place, f"must be a step id or a list of routes, not {wording.kind(value)}")
        return
    if kind is not None and kind not in OUTPUT_KINDS:
        ctx.add(place, f"a list of routes is allowed only on agent and task steps, not on {kind} steps")
    if len(value) < 2:
        ctx.add(place, "a list of routes needs two or more routes")
    seen: set[str] = set()
    for index, route in enumerate(value):
        where = f"{place}[{index}]"
        target = route_target(route)
        if isinstance(route, str):
            check_target(ctx, where, route, allow_join=True)
        elif isinstance(route, dict):
            check_route(ctx, where, route)
        else:
            ctx.add(where, f"must be a step id or a mapping with to and when, not {wording.kind(route)}")
        if isinstance(target, str):
            if target in seen:
                ctx.add(where, f"{wording.show(target)} is already a route of this step")
            seen.add(target)


def check_route(ctx: Context, place: str, route: dict) -> None:
    """Check a route written as a mapping with to and when."""
    for key in route:
        if isinstance(key, str) and key not in ROUTE_KEYS:
            ctx.add(child(place, key), "unknown field; a route has only to and when")
    if "to" not in route:
        ctx.add(f"{place}.to", "required")
    else:
        check_target(ctx, f"{place}.to", route["to"], allow_join=True)
    if "when" not in route:
        ctx.add(f"{place}.when", "required; write the route as a plain step id if it needs no condition")
    elif not is_text(route["when"]):
        ctx.add(f"{place}.when", text_issue(route["when"], "words saying when to take this route"))


def check_target(ctx: Context, place: str, target: object, *, allow_join: bool) -> None:
    """Check that a reference names an existing step (or join, where join is allowed)."""
    if not isinstance(target, str):
        ctx.add(place, f"must be a step id, not {wording.kind(target)}")
    elif allow_join and target == JOIN and ctx.join_is_word:
        return  # where join may appear is the parallel profile's business
    elif target not in ctx.ids:
        ctx.add(place, f"no step named {wording.show(target)}")


def check_person(ctx: Context, place: str, value: object) -> None:
    """Check person: a role name, initiator, or a path to a declared person field."""
    if not isinstance(value, str):
        ctx.add(
            place, f"must be a role name, initiator, or a path to a person field, not {wording.kind(value)}"
        )
    elif not value.strip():
        ctx.add(place, "must not be blank")
    elif "." in value:
        issue = path_issue(ctx, value, "person")
        if issue:
            ctx.add(place, issue)


def path_issue(ctx: Context, path: object, wanted: str) -> str | None:
    """Say what is wrong with a path into run data that must hold a field of the wanted type."""
    shape = f"must be a path to a {wanted} field, inputs.<field> or steps.<id>.output.<field>"
    if not isinstance(path, str):
        return f"{shape}, not {wording.kind(path)}"
    parts = path.split(".")
    if len(parts) == 2 and parts[0] == "inputs":
        name = parts[1]
        if name not in ctx.inputs:
            return f"{wording.show(path)} names no declared input field {wording.show(name)}"
        spec = ctx.inputs[name]
    elif len(parts) == 4 and parts[0] == "steps" and parts[2] == "output":
        step_id, name = parts[1], parts[3]
        if step_id not in ctx.ids:
            return f"{wording.show(path)} names no step {wording.show(step_id)}"
        output = ctx.steps[ctx.ids[step_id]].get("output")
        if not isinstance(output, dict) or name not in output:
            return f"{wording.show(path)}: step {wording.show(step_id)} declares no output field {wording.show(name)}"
        spec = output[name]
    else:
        suffix = "; role names cannot contain dots" if wanted == "person" else ""
        return f"{shape}, not {wording.show(path)}{suffix}"
    found = type_of_field(spec)
    if found is not None and found != wanted:
        return f"{wording.show(path)} is a {found} field, not a {wanted} field"
    return None


def check_parallel_entries(ctx: Context, place: str, step: dict) -> None:
    """Check a parallel step's list of two or more branch entries."""
    entries = step[PARALLEL_KIND]
    if not isinstance(entries, list) or len(entries) < 2:
        ctx.add(
            place,
            list_issue(
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
        check_target(ctx, where, entry, allow_join=False)
        if isinstance(entry, str):
            if entry in seen:
                ctx.add(where, f"{wording.show(entry)} is listed more than once")
            seen.add(entry)
