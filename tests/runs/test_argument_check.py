"""Tool arguments are checked against their schemas (spec §6 rule 3, tools.md "Arguments").

Arguments that fit pass a compiled validator; arguments that do not go on to jsonschema, which names
every problem. The two must agree on what fits, for every tool.
"""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from processes.capabilities import TOOLS
from runs.arguments import argument_schema, check_arguments, fits
from runs.errors import Invalid

json_scalars = (
    st.none() | st.booleans() | st.integers(-3, 300) | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)


def _near(bound: int):
    return st.integers(max(0, bound - 2), bound + 2)


@st.composite
def value_for(draw, schema: dict):
    """A value that often fits `schema` and often just misses it (lengths, bounds, enums, types)."""
    # Misses are kept rare enough that a tool of many arguments still often gets a set that fits.
    if draw(st.integers(0, 19)) == 0:
        return draw(json_values)
    kind = schema.get("type")
    if "enum" in schema:
        return draw(st.text(max_size=6) if draw(st.integers(0, 3)) == 0 else st.sampled_from(schema["enum"]))
    if kind == "string":
        bounds = [schema[k] for k in ("minLength", "maxLength") if k in schema] or [3]
        return "é" * draw(st.one_of(*[_near(b) for b in bounds], st.integers(1, 20)))
    if kind in ("integer", "number"):
        bounds = [schema[k] for k in ("minimum", "maximum", "exclusiveMinimum") if k in schema] or [0]
        number = draw(st.one_of(*[st.integers(b - 2, b + 2) for b in bounds]))
        return float(number) if draw(st.booleans()) else number
    if kind == "array":
        return draw(st.lists(value_for(schema.get("items", {})), max_size=3))
    if kind == "object":
        return draw(object_for(schema))
    return draw(json_values)


@st.composite
def object_for(draw, schema: dict):
    properties = schema.get("properties", {})
    names = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    if draw(st.integers(0, 3)):  # mostly with every required argument there
        names = sorted(set(names) | set(schema.get("required", [])))
    out = {name: draw(value_for(properties[name])) for name in names}
    if draw(st.integers(0, 5)) == 0:
        out[draw(st.text(max_size=6))] = draw(json_values)  # perhaps not an argument of the tool
    return out


def fitting(schema: dict):
    """The smallest value that fits `schema`: its required properties, each at its least."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        return "é" * max(schema.get("minLength", 1), 1)
    if kind in ("integer", "number"):
        return schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
    if kind == "array":
        return []
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: fitting(properties[name]) for name in schema.get("required", [])}
    return None


@pytest.mark.parametrize("tool", TOOLS)
def test_the_fast_check_and_jsonschema_agree_on_what_fits(tool):
    # spec §6 rule 3: an argument that breaks the contract is refused, whichever validator looks first.
    from runs.arguments import full_validator as _validator

    schema = argument_schema(tool)
    seen = {True: 0, False: 0}

    # One set that fits for certain, whatever else is drawn: a tool of many arguments seldom gets one by chance.
    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(object_for(schema) | json_values)
    @example(fitting(schema))
    def agree(arguments):
        expected = not any(_validator(tool).iter_errors(arguments))
        assert fits(tool, arguments) == expected, arguments
        seen[expected] += 1

    agree()
    assert fits(tool, fitting(schema))
    if schema.get("properties"):
        assert seen[True] and seen[False], seen  # both sides of the contract were tried


def test_arguments_that_break_the_contract_are_named_every_one():
    # spec §6 rule 3: every problem at once, not the first one found.
    with pytest.raises(Invalid) as raised:
        check_arguments("get_work", {"limit": 0, "process": 5, "colour": "red"})
    assert raised.value.issues == [
        "colour: not an argument of get_work",
        "limit: 0 is less than the minimum of 1",
        "process: 5 is not of type 'string'",
    ]


def test_a_number_too_large_for_the_fast_check_is_still_judged():
    with pytest.raises(Invalid) as raised:
        check_arguments("get_work", {"limit": 10**40})
    assert raised.value.issues == [f"limit: {10**40} is greater than the maximum of 100"]
    check_arguments("get_work", {"limit": 100})
