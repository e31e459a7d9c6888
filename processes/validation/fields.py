"""Spec §2.3: typed fields, for inputs and outputs alike."""

from processes import wording
from processes.spec import FIELD_KEYS, FIELD_TYPES, ONE_OF_TYPES
from processes.validation.context import MAX_NESTING, MISSING, Context, and_list, child, list_issue


def check_fields(ctx: Context, place: str, fields: object) -> None:
    """Check a mapping of field names to field types."""
    if not isinstance(fields, dict):
        ctx.add(place, f"must be a mapping of field names to types, not {wording.kind(fields)}")
        return
    for name, spec in fields.items():
        if not isinstance(name, str):
            continue  # reported by the canonical JSON check, which covers every key
        if not name.strip():
            ctx.add(place, "field names must not be empty")
        check_field(ctx, child(place, name), spec, 0)


def check_field(ctx: Context, place: str, spec: object, depth: int) -> None:
    """Check one field: a type name, or a field object with type and its optional keys."""
    if isinstance(spec, str):
        if spec not in FIELD_TYPES:
            ctx.add(place, unknown_type(spec))
        return
    if not isinstance(spec, dict):
        ctx.add(place, f"must be a type name or a field object with type, not {wording.kind(spec)}")
        return
    for key in spec:
        if isinstance(key, str) and key not in FIELD_KEYS:
            ctx.add(
                child(place, key),
                "unknown field; a field has only type, description, optional, one_of and items",
            )
    field_type = spec.get("type", MISSING)
    if field_type is MISSING:
        ctx.add(f"{place}.type", "required")
        field_type = None
    elif not isinstance(field_type, str) or field_type not in FIELD_TYPES:
        ctx.add(f"{place}.type", unknown_type(field_type))
        field_type = None
    if "description" in spec and not isinstance(spec["description"], str):
        ctx.add(f"{place}.description", f"must be a string, not {wording.kind(spec['description'])}")
    if "optional" in spec and not isinstance(spec["optional"], bool):
        ctx.add(f"{place}.optional", f"must be true or false, not {wording.show(spec['optional'])}")
    if "one_of" in spec:
        check_one_of(ctx, f"{place}.one_of", spec["one_of"], field_type)
    if "items" in spec:
        if field_type is not None and field_type != "list":
            ctx.add(f"{place}.items", f"allowed only on list fields, not on a {field_type} field")
        elif depth >= MAX_NESTING:
            ctx.add(f"{place}.items", f"is nested more than {MAX_NESTING} levels deep")
        else:
            check_field(ctx, f"{place}.items", spec["items"], depth + 1)


def check_one_of(ctx: Context, place: str, values: object, field_type: str | None) -> None:
    """Check that one_of is a non-empty list of values of the field's type."""
    if field_type is not None and field_type not in ONE_OF_TYPES:
        ctx.add(place, f"allowed only on string, number and boolean fields, not on a {field_type} field")
        return
    if not isinstance(values, list) or not values:
        ctx.add(
            place, list_issue(values, "a non-empty list of allowed values", "must hold at least one value")
        )
        return
    if field_type is None:
        return
    for index, value in enumerate(values):
        if not has_type(value, field_type):
            ctx.add(f"{place}[{index}]", f"{wording.show(value)} is not a {field_type}")


def has_type(value: object, field_type: str) -> bool:
    """Say whether a one_of value has the field's type."""
    if field_type == "string":
        return isinstance(value, str)
    if field_type == "boolean":
        return isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def unknown_type(value: object) -> str:
    """Word the refusal of a type that is not one of the eight."""
    return f"{wording.show(value)} is not a type; the types are {and_list(FIELD_TYPES)}"


def type_of_field(spec: object) -> str | None:
    """Return a field's declared type, or None when the field itself is malformed."""
    if isinstance(spec, dict):
        spec = spec.get("type")
    return spec if isinstance(spec, str) and spec in FIELD_TYPES else None
