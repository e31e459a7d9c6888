"""The runner's own JSON Schema 2020-12 validator says what `jsonschema` says, on the official schemas and beyond."""

import json
import random
import re

import pytest
from agentprocess_conformance.schemas import Schemas, schema_folder
from agentprocess_conformance.validator import Registry, SchemaProblem, Validator
from jsonschema import Draft202012Validator
from referencing import Registry as ReferenceRegistry
from referencing import Resource

SCHEMA_FILES = sorted(path.relative_to(schema_folder()).as_posix() for path in schema_folder().rglob("*.json")
                      if "$id" in json.loads(path.read_text()))
EXAMPLES_PER_SCHEMA = 150


def oracle_registry() -> ReferenceRegistry:
    registry = ReferenceRegistry()
    for path in schema_folder().rglob("*.json"):
        document = json.loads(path.read_text())
        if "$id" in document:
            registry = registry.with_resource(document["$id"], Resource.from_contents(document))
    return registry


def verdicts(ours: Validator, theirs: Draft202012Validator, instance) -> tuple[list, list]:
    mine = sorted((tuple(map(str, error.path)), error.message) for error in ours.iter_errors(instance))
    found = sorted((tuple(map(str, error.absolute_path)), error.message) for error in theirs.iter_errors(instance))
    return mine, found


def any_value(rng: random.Random, depth: int = 0):
    kinds = ["null", "bool", "int", "float", "string"] + (["list", "dict"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "list":
        return [any_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if kind == "dict":
        return {rng.choice(["a", "id", "x", ""]): any_value(rng, depth + 1) for _ in range(rng.randint(0, 2))}
    return {"null": None, "bool": rng.random() < 0.5, "int": rng.randint(-3, 3), "float": rng.choice([0.5, 1.0, -2.0]),
            "string": rng.choice(["", "a", "live", "file", "pass", "2026-01-01"])}[kind]


def example(schema, root: dict, rng: random.Random, breaks: float, depth: int = 0):
    """An instance shaped by schema; each part broken, in one of the ways a server might, with chance `breaks`."""
    broken = rng.random() < breaks
    if schema is True or schema == {} or depth > 6 or (broken and rng.random() < 0.3):
        return any_value(rng)
    if schema is False:
        return any_value(rng)
    if "$ref" in schema:
        target = root
        for token in schema["$ref"].split("/")[1:]:
            target = target[token]
        return example(target, root, rng, breaks, depth + 1)
    if "anyOf" in schema:
        return example(rng.choice(schema["anyOf"]), root, rng, breaks, depth + 1)
    if "enum" in schema:
        return "not-listed" if broken else rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kinds = schema.get("type", "object")
    kind = rng.choice(kinds) if isinstance(kinds, list) else kinds
    if kind == "object":
        found = {}
        for name, subschema in (schema.get("properties") or {}).items():
            needed = name in (schema.get("required") or [])
            if (needed and not (broken and rng.random() < 0.3)) or rng.random() < 0.5:
                found[name] = example(subschema, root, rng, breaks, depth + 1)
        extra = schema.get("additionalProperties", True)
        for _ in range(rng.randint(0, 2) if extra is not False else int(broken)):
            found[rng.choice(["extra", "", "note"])] = example(extra, root, rng, breaks, depth + 1)
        return found
    if kind == "array":
        low = 0 if broken else schema.get("minItems", 0)
        return [example(schema.get("items", True), root, rng, breaks, depth + 1) for _ in range(rng.randint(low, low + 2))]
    if kind == "string":
        low = 0 if broken else schema.get("minLength", 0)
        return "x" * rng.randint(low, low + 3)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -3) + 1)
        value = rng.randint(int(low) - (2 if broken else 0), int(schema.get("maximum", low + 5)))
        return float(value) if kind == "number" and rng.random() < 0.3 else value
    if kind == "boolean":
        return rng.random() < 0.5
    return None


@pytest.mark.parametrize("relative", SCHEMA_FILES)
def test_every_official_schema_gives_jsonschemas_errors(relative):
    # Answers shaped by each schema, about half of them broken somewhere: the same errors at the same places.
    document = json.loads((schema_folder() / relative).read_text())
    ours = Schemas().validator(relative.removeprefix("tools/").removesuffix(".json"))
    theirs = Draft202012Validator(document, registry=oracle_registry())
    rng = random.Random(relative)
    valid = 0
    for _ in range(EXAMPLES_PER_SCHEMA):
        instance = example(document, document, rng, breaks=rng.choice([0, 0, 0.02, 0.1]))
        mine, found = verdicts(ours, theirs, instance)
        assert mine == found, json.dumps(instance)
        valid += not found
    assert 0 < valid < EXAMPLES_PER_SCHEMA, f"{valid} valid of {EXAMPLES_PER_SCHEMA}: the examples test too little"


KEYWORD_CASES = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": ["number", "null"]}, [0, 2.5, None, False, "x"]),
    ({"enum": [1, "a", None, [1]]}, [1, 1.0, True, "a", None, [1], [True], 2]),
    ({"const": {"a": [1, False]}}, [{"a": [1, False]}, {"a": [1, 0]}, {"a": [1.0, False]}]),
    ({"minimum": 1, "maximum": 3, "exclusiveMaximum": 3}, [0, 1, 2.5, 3, 4, "9"]),
    ({"exclusiveMinimum": 0, "multipleOf": 0.5}, [0, 0.5, 0.75, 2, -1]),
    ({"multipleOf": 3}, [9, 10, 0, 3.0]),
    ({"minLength": 1, "maxLength": 2, "pattern": "^a"}, ["", "a", "ab", "abc", "b", "ä", 5]),
    ({"maxLength": 0}, ["", "x"]),
    ({"minItems": 2, "maxItems": 3, "uniqueItems": True}, [[1], [1, 2], [1, 1.0], [1, True], [1, 2, 3, 4]]),
    ({"prefixItems": [{"type": "string"}], "items": False}, [["a"], ["a", 1], ["a", 1, 2], [1]]),
    ({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, [["a", 1, "b"], []]),
    ({"contains": {"type": "string"}, "minContains": 2, "maxContains": 3}, [[1], ["a"], ["a", "b"], ["a"] * 4]),
    ({"contains": {"type": "string"}}, [[1, 2], [1, "a"], "not an array"]),
    ({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}},
      "additionalProperties": False}, [{"a": "x", "b": 1}, {"a": 1}, {"c": 1, "d": 2}, {"b": 1, "e": 0}, []]),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
     [{"x-a": 1}, {"x-a": "1"}, {"y": 1}, {"y": 1, "z": 2}]),
    ({"properties": {"a": True}, "additionalProperties": {"type": "boolean"}}, [{"a": 1, "b": True, "c": 0}]),
    ({"propertyNames": {"minLength": 2, "pattern": "^[a-z]+$"}}, [{"ab": 1}, {"a": 1, "B2": 2}]),
    ({"minProperties": 1, "maxProperties": 2}, [{}, {"a": 1}, {"a": 1, "b": 2, "c": 3}]),
    ({"dependentRequired": {"a": ["b", "c"]}, "dependentSchemas": {"b": {"required": ["d"]}}},
     [{"a": 1}, {"a": 1, "b": 2, "c": 3, "d": 4}, {"b": 1}]),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2, 2.5]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 3, 2.5, "x"]),
    ({"anyOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2.5, 0.5]),
    ({"not": {"type": "string"}}, ["a", 1]),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, [-1, 1, "a", 1.5]),
    ({"then": {"type": "string"}}, [1]),
    ({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}},
                         "required": ["v"]}}, "$ref": "#/$defs/node"},
     [{"v": 1, "next": {"v": 2, "next": {}}}, {"v": 1}]),
    ({"$defs": {"a~b/c": {"type": "string"}}, "items": {"$ref": "#/$defs/a~0b~1c"}}, [["x", 1]]),
    ({"$defs": {"n": {"$anchor": "name", "type": "string"}}, "properties": {"a": {"$ref": "#name"}}}, [{"a": 1}]),
    ({"type": "array", "items": {"format": "date-time", "title": "t", "x-unknown": 1}}, [["not a date"], 5]),
    (False, [1]),
    (True, [1]),
]


@pytest.mark.parametrize(("schema", "instances"), KEYWORD_CASES)
def test_each_keyword_gives_jsonschemas_errors(schema, instances):
    ours, theirs = Validator(schema), Draft202012Validator(schema)
    for instance in instances:
        mine, found = verdicts(ours, theirs, instance)
        assert mine == found, instance


def test_a_ref_into_another_resource_resolves_against_its_id():
    item = {"$id": "https://example.org/s/item.json", "$defs": {"id": {"type": "string", "minLength": 1}},
            "type": "object", "properties": {"id": {"$ref": "#/$defs/id"}}, "required": ["id"]}
    listing = {"$id": "https://example.org/s/list.json", "type": "array", "items": {"$ref": "item.json"}}
    registry = Registry([item, listing])
    errors = list(Validator(listing, registry=registry).iter_errors([{"id": "a"}, {"id": ""}, {}]))
    assert [(error.path, error.message) for error in errors] == [
        ((1, "id"), "'' should be non-empty"), ((2,), "'id' is a required property")]


def test_a_schema_it_cannot_honour_is_refused_when_made_never_passed_over():
    for schema, said in [
        ({"unevaluatedProperties": False}, "uses unevaluatedProperties"),
        ({"properties": {"a": {"$dynamicRef": "#x"}}}, "uses $dynamicRef"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "not draft 2020-12"),
        ({"items": [{"type": "string"}]}, "a schema is an object or a boolean"),
        ({"type": "text"}, "unknown type"),
    ]:
        with pytest.raises(SchemaProblem, match=re.escape(said)):
            Validator(schema)
    with pytest.raises(SchemaProblem, match="no schema has the \\$id"):
        list(Validator({"$ref": "https://example.org/elsewhere.json"}).iter_errors(1))
    with pytest.raises(SchemaProblem, match="nothing at #/\\$defs/missing"):
        list(Validator({"$ref": "#/$defs/missing"}).iter_errors(1))


def test_two_schemas_without_id_in_one_registry_keep_their_own_definitions():
    registry = Registry()
    first = Validator({"$defs": {"x": {"type": "string"}}, "$ref": "#/$defs/x"}, registry=registry)
    second = Validator({"$defs": {"x": {"type": "integer"}}, "$ref": "#/$defs/x"}, registry=registry)
    assert first.is_valid("a") and not first.is_valid(1)
    assert second.is_valid(1) and not second.is_valid("a")
