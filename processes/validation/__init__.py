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

from processes import wording
from processes.spec import ALL_TOOLS, JOIN, PARALLEL_PROFILE
from processes.validation.branches import check_branches
from processes.validation.canonical import check_canonical
from processes.validation.context import Context, has_parallel_step, is_role, profiles_in, step_ids, steps_of
from processes.validation.frontmatter import check_top_level
from processes.validation.graph import check_graph
from processes.validation.steps import check_step


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
        return [
            f"frontmatter: must be a mapping with name, description and steps, not {wording.kind(frontmatter)}"
        ]
    steps = frontmatter.get("steps")
    steps = steps if isinstance(steps, list) else []
    inputs = frontmatter.get("inputs")
    ids = step_ids(steps)
    ctx = Context(
        profiles=frozenset(profiles),
        tools=ALL_TOOLS if tools is None else frozenset(tools),
        check_unavailable_reason=check_unavailable_reason,
        steps=steps,
        inputs=inputs if isinstance(inputs, dict) else {},
        ids=ids,
        join_is_word=has_parallel_step(steps) or JOIN not in ids,
    )
    check_top_level(ctx, frontmatter, folder_name)
    for index, step in enumerate(steps):
        check_step(ctx, index, step)
    if steps:
        check_graph(ctx)
        if PARALLEL_PROFILE in ctx.profiles and PARALLEL_PROFILE in profiles_in(steps, ids):
            check_branches(ctx)
    check_canonical(ctx, frontmatter)
    return ctx.issues


def role_names(frontmatter: dict) -> list[str]:
    """List the distinct role names used in ``person:``, in step order."""
    names: list[str] = []
    for step in steps_of(frontmatter):
        person = step.get("person") if isinstance(step, dict) else None
        if is_role(person) and person not in names:
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
    steps = steps_of(frontmatter)
    return profiles_in(steps, step_ids(steps))
