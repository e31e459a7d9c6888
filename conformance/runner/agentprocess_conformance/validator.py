"""JSON Schema draft 2020-12 validation in plain Python, for the official schemas of core-2.

It implements the assertions and applicators of the 2020-12 vocabularies: `type`, `enum`, `const`, the
numeric, string, array and object keywords, `properties`, `patternProperties`, `additionalProperties`,
`propertyNames`, `prefixItems`, `items`, `contains`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
the `dependent*` keywords, and `$ref` to a `$id`, a JSON pointer or an `$anchor`. `format` is an
annotation, as the draft makes it by default. A schema that uses one of the few keywords it does not
implement (`$dynamicRef`, `unevaluatedProperties`, …), or that declares another draft, is refused when the
validator is made, never passed over while validating.

Errors are reported as `jsonschema` reports them: one per failing keyword, where the instance failed, and a
failing `anyOf` or `oneOf` once, at its own place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from urllib.parse import unquote, urldefrag, urljoin

DRAFT = "https://json-schema.org/draft/2020-12/schema"
UNSUPPORTED = frozenset({"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
                         "unevaluatedProperties", "unevaluatedItems"})
# Where the keywords that hold schemas hold them: one schema, a list of them, or a name → schema map.
ONE = ("additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else")
LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
MAP = ("properties", "patternProperties", "$defs", "dependentSchemas")
# The base URI of a schema that has no `$id`: a name of the reserved .invalid domain, which no `$id` can hold.
ANONYMOUS = "https://anonymous.invalid/"
TYPES = {"null", "boolean", "object", "array", "number", "integer", "string"}


class SchemaProblem(Exception):
    """The schema cannot be used: a keyword this validator does not implement, another draft, a broken $ref."""


@dataclass(frozen=True)
class Violation:
    """One way the instance breaks the schema: where (keys and indices from the root) and what."""

    path: tuple
    message: str


def subschemas(schema) -> Iterator[tuple[str, object]]:
    """Yield (keyword, subschema) for every schema directly inside schema."""
    if not isinstance(schema, dict):
        return
    for keyword in ONE:
        if keyword in schema:
            yield keyword, schema[keyword]
    for keyword in LIST:
        for item in schema.get(keyword) or []:
            yield keyword, item
    for keyword in MAP:
        for item in (schema.get(keyword) or {}).values():
            yield keyword, item


class Registry:
    """Schema resources by absolute URI, and the anchors within them."""

    def __init__(self, documents=()):
        self.resources: dict[str, object] = {}
        self.anchors: dict[tuple[str, str], object] = {}
        for document in documents:
            self.add(document)

    def add(self, document, uri: str | None = None) -> str:
        """Register document (and every resource with an `$id` inside it); return its base URI.

        A document without `$id` is known by uri, or else by a URI of its own that nothing else can name.
        """
        uri = uri or f"{ANONYMOUS}{len(self.resources)}.json"
        if isinstance(document, dict) and document.get("$schema", DRAFT).rstrip("#") != DRAFT:
            raise SchemaProblem(f"{document.get('$id', uri)}: declares {document['$schema']}, not draft 2020-12")
        base = urljoin(uri, document["$id"]) if isinstance(document, dict) and "$id" in document else uri
        self.index(document, base)
        return base

    def index(self, schema, base: str) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            raise SchemaProblem(f"{base}: a schema is an object or a boolean, not {schema!r}")
        if "$id" in schema:
            base = urljoin(base, schema["$id"])
        self.resources.setdefault(urldefrag(base)[0], schema)
        if "$anchor" in schema:
            self.anchors[(urldefrag(base)[0], schema["$anchor"])] = schema
        used = sorted(UNSUPPORTED & set(schema))
        if used:
            raise SchemaProblem(f"{base}: uses {', '.join(used)}, which this validator does not implement")
        if "type" in schema and not set(schema["type"] if isinstance(schema["type"], list) else [schema["type"]]) <= TYPES:
            raise SchemaProblem(f"{base}: unknown type {schema['type']!r}")
        for _, subschema in subschemas(schema):
            self.index(subschema, base)

    def resolve(self, base: str, reference: str) -> tuple[object, str]:
        """Return the schema a `$ref` names from base, and the base URI in force there."""
        target, fragment = urldefrag(urljoin(base, reference))
        if target not in self.resources:
            raise SchemaProblem(f"$ref {reference!r} from {base}: no schema has the $id {target}")
        if fragment and not fragment.startswith("/"):
            if (target, fragment) not in self.anchors:
                raise SchemaProblem(f"$ref {reference!r} from {base}: no $anchor {fragment!r} in {target}")
            return self.anchors[(target, fragment)], target
        schema, here = self.resources[target], target
        for token in fragment.split("/")[1:] if fragment else []:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            try:
                schema = schema[int(token)] if isinstance(schema, list) else schema[token]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SchemaProblem(f"$ref {reference!r} from {base}: nothing at #{fragment}") from None
            if isinstance(schema, dict) and "$id" in schema:
                here = urljoin(here, schema["$id"])
        return schema, here


def is_type(instance, kind: str) -> bool:
    if kind == "null":
        return instance is None
    if kind == "boolean":
        return isinstance(instance, bool)
    if kind == "object":
        return isinstance(instance, dict)
    if kind == "array":
        return isinstance(instance, list)
    if kind == "string":
        return isinstance(instance, str)
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return kind == "number" or isinstance(instance, int) or instance.is_integer()


def equal(one, other) -> bool:
    """JSON equality: 1 and 1.0 are equal, true and 1 are not."""
    if isinstance(one, bool) or isinstance(other, bool):
        return isinstance(one, bool) and isinstance(other, bool) and one == other
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(equal(a, b) for a, b in zip(one, other, strict=True))
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(equal(one[key], other[key]) for key in one)
    if isinstance(one, int | float) and isinstance(other, int | float):
        return one == other
    return type(one) is type(other) and one == other


@cache
def compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def size_message(bound: int, least: bool, too_small: str, too_large: str) -> str:
    if least:
        return "should be non-empty" if bound == 1 else too_small
    return "is expected to be empty" if bound == 0 else too_large


class Validator:
    """Validate instances against one schema, `$ref`s resolved through a registry (by default: the schema's own)."""

    def __init__(self, schema, registry: Registry | None = None):
        self.registry = registry if registry is not None else Registry()
        registered = isinstance(schema, dict) and urldefrag(schema.get("$id", ""))[0] in self.registry.resources
        self.base = urldefrag(schema["$id"])[0] if registered else self.registry.add(schema)
        self.schema = schema

    def is_valid(self, instance) -> bool:
        return next(self.iter_errors(instance), None) is None

    def iter_errors(self, instance) -> Iterator[Violation]:
        return self.descend(instance, self.schema, self.base, ())

    def descend(self, instance, schema, base: str, path: tuple) -> Iterator[Violation]:
        if schema is True:
            return
        if schema is False:
            yield Violation(path, f"False schema does not allow {instance!r}")
            return
        if "$id" in schema:
            base = urljoin(base, schema["$id"])
        for keyword, value in schema.items():
            check = KEYWORDS.get(keyword)
            if check is not None:
                yield from check(self, instance, value, schema, base, path)

    def valid(self, instance, schema, base: str) -> bool:
        return next(self.descend(instance, schema, base, ()), None) is None

    # Core and applicators on any instance.

    def ref(self, instance, reference, schema, base, path):
        target, there = self.registry.resolve(base, reference)
        yield from self.descend(instance, target, there, path)

    def all_of(self, instance, schemas, schema, base, path):
        for subschema in schemas:
            yield from self.descend(instance, subschema, base, path)

    def any_of(self, instance, schemas, schema, base, path):
        if not any(self.valid(instance, subschema, base) for subschema in schemas):
            yield Violation(path, f"{instance!r} is not valid under any of the given schemas")

    def one_of(self, instance, schemas, schema, base, path):
        matching = [subschema for subschema in schemas if self.valid(instance, subschema, base)]
        if not matching:
            yield Violation(path, f"{instance!r} is not valid under any of the given schemas")
        elif len(matching) > 1:
            listed = ", ".join(repr(subschema) for subschema in [*matching[1:], matching[0]])
            yield Violation(path, f"{instance!r} is valid under each of {listed}")

    def not_(self, instance, subschema, schema, base, path):
        if self.valid(instance, subschema, base):
            yield Violation(path, f"{instance!r} should not be valid under {subschema!r}")

    def if_(self, instance, condition, schema, base, path):
        branch = "then" if self.valid(instance, condition, base) else "else"
        if branch in schema:
            yield from self.descend(instance, schema[branch], base, path)

    def type(self, instance, kinds, schema, base, path):
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(is_type(instance, kind) for kind in kinds):
            yield Violation(path, f"{instance!r} is not of type {', '.join(repr(kind) for kind in kinds)}")

    def enum(self, instance, values, schema, base, path):
        if not any(equal(instance, value) for value in values):
            yield Violation(path, f"{instance!r} is not one of {values!r}")

    def const(self, instance, value, schema, base, path):
        if not equal(instance, value):
            yield Violation(path, f"{value!r} was expected")

    # Numbers.

    def number_bound(self, instance, bound, schema, base, path, *, keyword: str):
        if isinstance(instance, bool) or not isinstance(instance, int | float):
            return
        broken = {"minimum": instance < bound, "maximum": instance > bound,
                  "exclusiveMinimum": instance <= bound, "exclusiveMaximum": instance >= bound}[keyword]
        if broken:
            said = {"minimum": "less than the minimum of", "maximum": "greater than the maximum of",
                    "exclusiveMinimum": "less than or equal to the minimum of",
                    "exclusiveMaximum": "greater than or equal to the maximum of"}[keyword]
            yield Violation(path, f"{instance!r} is {said} {bound!r}")

    def multiple_of(self, instance, divisor, schema, base, path):
        if isinstance(instance, bool) or not isinstance(instance, int | float):
            return
        if isinstance(instance, int) and isinstance(divisor, int):
            broken = instance % divisor != 0
        else:
            quotient = instance / divisor
            broken = not math.isfinite(quotient) or quotient != int(quotient)
        if broken:
            yield Violation(path, f"{instance!r} is not a multiple of {divisor}")

    # Strings.

    def length(self, instance, bound, schema, base, path, *, least: bool):
        if isinstance(instance, str) and (len(instance) < bound if least else len(instance) > bound):
            yield Violation(path, f"{instance!r} {size_message(bound, least, 'is too short', 'is too long')}")

    def pattern(self, instance, pattern, schema, base, path):
        if isinstance(instance, str) and not compiled(pattern).search(instance):
            yield Violation(path, f"{instance!r} does not match {pattern!r}")

    # Arrays.

    def items(self, instance, subschema, schema, base, path):
        if not isinstance(instance, list):
            return
        prefix = len(schema.get("prefixItems") or [])
        extra = len(instance) - prefix
        if subschema is False and extra > 0:
            rest = instance[prefix:] if extra != 1 else instance[prefix]
            yield Violation(path, f"Expected at most {prefix} {'item' if prefix == 1 else 'items'} but found {extra} "
                                  f"extra: {rest!r}")
            return
        for index in range(prefix, len(instance)):
            yield from self.descend(instance[index], subschema, base, (*path, index))

    def prefix_items(self, instance, schemas, schema, base, path):
        if isinstance(instance, list):
            for index, (item, subschema) in enumerate(zip(instance, schemas, strict=False)):
                yield from self.descend(item, subschema, base, (*path, index))

    def contains(self, instance, subschema, schema, base, path):
        if not isinstance(instance, list):
            return
        found = sum(self.valid(item, subschema, base) for item in instance)
        least, most = schema.get("minContains", 1), schema.get("maxContains")
        if most is not None and found > most:
            yield Violation(path, f"Too many items match the given schema (expected at most {most})")
        elif found < least and not found:
            yield Violation(path, f"{instance!r} does not contain items matching the given schema")
        elif found < least:
            yield Violation(path, f"Too few items match the given schema (expected at least {least} but only "
                                  f"{found} matched)")

    def count(self, instance, bound, schema, base, path, *, kind: type, least: bool):
        if isinstance(instance, kind) and (len(instance) < bound if least else len(instance) > bound):
            said = ("is too short", "is too long") if kind is list else (
                "does not have enough properties", "has too many properties")
            yield Violation(path, f"{instance!r} {size_message(bound, least, *said)}")

    def unique_items(self, instance, unique, schema, base, path):
        repeated = unique and isinstance(instance, list) and any(
            equal(one, other) for index, one in enumerate(instance) for other in instance[index + 1:])
        if repeated:
            yield Violation(path, f"{instance!r} has non-unique elements")

    # Objects.

    def required(self, instance, names, schema, base, path):
        if isinstance(instance, dict):
            for name in names:
                if name not in instance:
                    yield Violation(path, f"{name!r} is a required property")

    def properties(self, instance, schemas, schema, base, path):
        if isinstance(instance, dict):
            for name, subschema in schemas.items():
                if name in instance:
                    yield from self.descend(instance[name], subschema, base, (*path, name))

    def pattern_properties(self, instance, schemas, schema, base, path):
        if isinstance(instance, dict):
            for pattern, subschema in schemas.items():
                for name, value in instance.items():
                    if compiled(pattern).search(name):
                        yield from self.descend(value, subschema, base, (*path, name))

    def additional_properties(self, instance, subschema, schema, base, path):
        if not isinstance(instance, dict):
            return
        patterns = [compiled(pattern) for pattern in schema.get("patternProperties") or {}]
        extra = [name for name in instance if name not in (schema.get("properties") or {})
                 and not any(pattern.search(name) for pattern in patterns)]
        if subschema is False and extra:
            listed = ", ".join(repr(name) for name in sorted(extra))
            if patterns:
                yield Violation(path, f"{listed} {'does' if len(extra) == 1 else 'do'} not match any of the regexes: "
                                      f"{', '.join(repr(each) for each in sorted(schema['patternProperties']))}")
            else:
                yield Violation(path, f"Additional properties are not allowed ({listed} "
                                      f"{'was' if len(extra) == 1 else 'were'} unexpected)")
            return
        for name in extra:
            yield from self.descend(instance[name], subschema, base, (*path, name))

    def property_names(self, instance, subschema, schema, base, path):
        if isinstance(instance, dict):
            for name in instance:
                yield from self.descend(name, subschema, base, path)

    def dependent_required(self, instance, dependencies, schema, base, path):
        if isinstance(instance, dict):
            for name, needed in dependencies.items():
                if name in instance:
                    for other in needed:
                        if other not in instance:
                            yield Violation(path, f"{other!r} is a dependency of {name!r}")

    def dependent_schemas(self, instance, schemas, schema, base, path):
        if isinstance(instance, dict):
            for name, subschema in schemas.items():
                if name in instance:
                    yield from self.descend(instance, subschema, base, path)


def bound(keyword: str):
    return lambda validator, *arguments: validator.number_bound(*arguments, keyword=keyword)


KEYWORDS = {
    "$ref": Validator.ref,
    "allOf": Validator.all_of,
    "anyOf": Validator.any_of,
    "oneOf": Validator.one_of,
    "not": Validator.not_,
    "if": Validator.if_,
    "type": Validator.type,
    "enum": Validator.enum,
    "const": Validator.const,
    "minimum": bound("minimum"),
    "maximum": bound("maximum"),
    "exclusiveMinimum": bound("exclusiveMinimum"),
    "exclusiveMaximum": bound("exclusiveMaximum"),
    "multipleOf": Validator.multiple_of,
    "minLength": lambda validator, *arguments: validator.length(*arguments, least=True),
    "maxLength": lambda validator, *arguments: validator.length(*arguments, least=False),
    "pattern": Validator.pattern,
    "items": Validator.items,
    "prefixItems": Validator.prefix_items,
    "contains": Validator.contains,
    "minItems": lambda validator, *arguments: validator.count(*arguments, kind=list, least=True),
    "maxItems": lambda validator, *arguments: validator.count(*arguments, kind=list, least=False),
    "uniqueItems": Validator.unique_items,
    "required": Validator.required,
    "properties": Validator.properties,
    "patternProperties": Validator.pattern_properties,
    "additionalProperties": Validator.additional_properties,
    "propertyNames": Validator.property_names,
    "minProperties": lambda validator, *arguments: validator.count(*arguments, kind=dict, least=True),
    "maxProperties": lambda validator, *arguments: validator.count(*arguments, kind=dict, least=False),
    "dependentRequired": Validator.dependent_required,
    "dependentSchemas": Validator.dependent_schemas,
}
