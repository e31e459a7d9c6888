"""Spec §2.1: the frontmatter's own fields (name, description, inputs, steps, requires)."""

from processes import wording
from processes.spec import MAX_NAME_LENGTH, NAME_PATTERN, TOP_LEVEL_KEYS
from processes.validation.context import MISSING, Context, child
from processes.validation.fields import check_fields


def check_top_level(ctx: Context, frontmatter: dict, folder_name: str | None) -> None:
    """Check name, description, inputs, steps and requires, and refuse any other field."""
    for key in frontmatter:
        if isinstance(key, str) and key not in TOP_LEVEL_KEYS:
            ctx.add(
                child("", key),
                "unknown field; the frontmatter has only name, description, inputs, steps and requires",
            )

    name = frontmatter.get("name", MISSING)
    if name is MISSING:
        ctx.add("name", "required")
    elif not isinstance(name, str):
        ctx.add("name", f"must be a string, not {wording.kind(name)}")
    else:
        if len(name) > MAX_NAME_LENGTH:
            ctx.add("name", f"is longer than {MAX_NAME_LENGTH} characters")
        elif not NAME_PATTERN.match(name):
            ctx.add(
                "name",
                f"{wording.show(name)} must be lowercase letters and digits in words joined by single hyphens",
            )
        if folder_name is not None and name != folder_name:
            ctx.add(
                "name", f"{wording.show(name)} does not match the folder name {wording.show(folder_name)}"
            )

    description = frontmatter.get("description", MISSING)
    if description is MISSING:
        ctx.add("description", "required")
    elif not isinstance(description, str):
        ctx.add("description", f"must be a string, not {wording.kind(description)}")
    elif not description.strip():
        ctx.add("description", "must not be empty")

    if "inputs" in frontmatter:
        check_fields(ctx, "inputs", frontmatter["inputs"])

    steps = frontmatter.get("steps", MISSING)
    if steps is MISSING:
        ctx.add("steps", "required")
    elif not isinstance(steps, list):
        ctx.add("steps", f"must be a list of steps, not {wording.kind(steps)}")
    elif not steps:
        ctx.add("steps", "must hold at least one step")

    if "requires" in frontmatter:
        check_requires(ctx, frontmatter["requires"])


def check_requires(ctx: Context, requires: object) -> None:
    """Check that requires holds only systems, a list of distinct system names."""
    if not isinstance(requires, dict):
        ctx.add("requires", f"must be a mapping with systems, not {wording.kind(requires)}")
        return
    for key in requires:
        if isinstance(key, str) and key != "systems":
            ctx.add(child("requires", key), "unknown field; requires has only systems")
    if "systems" not in requires:
        ctx.add("requires.systems", "required")
        return
    systems = requires["systems"]
    if not isinstance(systems, list):
        ctx.add("requires.systems", f"must be a list of system names, not {wording.kind(systems)}")
        return
    if not systems:
        ctx.add("requires.systems", "must name at least one system")
    seen: set[str] = set()
    for index, system in enumerate(systems):
        place = f"requires.systems[{index}]"
        if not isinstance(system, str):
            ctx.add(place, f"must be a string, not {wording.kind(system)}")
        elif len(system) > MAX_NAME_LENGTH or not NAME_PATTERN.match(system):
            ctx.add(
                place,
                f"{wording.show(system)} must be lowercase letters and digits in words joined by single hyphens, "
                f"at most {MAX_NAME_LENGTH} characters",
            )
        elif system in seen:
            ctx.add(place, f"{wording.show(system)} is listed more than once")
        else:
            seen.add(system)
