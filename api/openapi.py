"""The OpenAPI document describes each tool exactly: its argument schema and its result envelope."""

from __future__ import annotations

import copy
import json
from functools import cache

from accounts.connections import API_SCOPE
from processes.capabilities import TOOLS
from runs.arguments import SCHEMA_DIR

ERROR_STATUSES = {
    "400": "invalid",
    "401": "no valid credentials",
    "403": "forbidden",
    "404": "not_found",
    "405": "invalid: a tool is called with POST",
    "409": "stale or conflict",
    "413": "invalid: the body is larger than the server accepts",
    "415": "invalid: the body is not application/json",
    "422": "not_accepted",
    "503": "retry",
}
SUMMARIES = {
    "describe": "Protocol version, profiles, lease seconds, person format, tools and limits.",
    "list_processes": "Published processes: name, description, version, inputs.",
    "start_run": "Start a run of a published process; returns the run view.",
    "get_run": "The run view: run data, step states, open work items; never a token.",
    "get_work": "Ready agent steps to claim (agents) or open work items to decide (people).",
    "claim": "Claim a ready agent step: a token, its expiry, the step, the body and run data.",
    "renew": "Extend a lease; returns a new token and expiry.",
    "upload": "Store a file (base64); returns its id and sha256.",
    "submit": "Submit output, evidence, a summary and the chosen next.",
    "escalate": "Hand a claimed step to a person with a note.",
    "decide": "A person's decision on a work item, checked against its snapshot.",
    "cancel": "Cancel a run (operators).",
    "send_event": "Deliver an event to a run's wait_for step, or hold it.",
    "list_runs": "Runs filtered by process, state and input values.",
}


def _load(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def _localise(schema: dict, prefix: str, components: dict) -> dict:
    """Move a schema's $defs into components and point its $refs there."""
    schema = copy.deepcopy(schema)
    for key in ("$schema", "$id", "title"):
        schema.pop(key, None)
    defs = schema.pop("$defs", {})

    def rewrite(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node["$ref"] = f"#/components/schemas/{prefix}{ref.rsplit('/', 1)[1]}"
            for value in node.values():
                rewrite(value)
        elif isinstance(node, list):
            for value in node:
                rewrite(value)

    rewrite(schema)
    for name, definition in defs.items():
        rewrite(definition)
        components[f"{prefix}{name}"] = definition
    return schema


@cache
def tool_paths() -> tuple[dict, dict]:
    components: dict = {
        "ToolError": {
            "type": "object",
            "required": ["ok", "error"],
            "additionalProperties": False,
            "properties": {"ok": {"const": False}, "error": _localise(_load("../tool-error.json"), "Err", {})},
        }
    }
    paths = {}
    for tool in TOOLS:
        arguments = _localise(_load(f"{tool}.arguments.json"), f"{tool}_args_", components)
        result = _localise(_load(f"{tool}.result.json"), f"{tool}_result_", components)
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolError"}}}}
        paths[f"/api/tools/{tool}"] = {
            "post": {
                "operationId": tool,
                "summary": SUMMARIES[tool],
                "tags": ["tools"],
                "security": [{"oauth2": [API_SCOPE]}, {"browserSession": []}],
                # A tool whose every argument is optional takes no body at all as `{}`.
                "requestBody": {"required": bool(arguments.get("required")),
                                "content": {"application/json": {"schema": arguments}}},
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {"application/json": {"schema": {
                            "type": "object",
                            "required": ["ok", "data"],
                            "additionalProperties": False,
                            "properties": {"ok": {"const": True}, "data": result},
                        }}},
                    },
                    **{status: {"description": text, **error} for status, text in ERROR_STATUSES.items()},
                },
            }
        }
    return paths, components


def add_tool_paths(result, generator, request, public):
    """drf-spectacular postprocessing hook: replace the generic tool path with one path per tool."""
    paths, components = tool_paths()
    result["paths"] = {k: v for k, v in result.get("paths", {}).items() if not k.startswith("/api/tools/")}
    result["paths"].update(copy.deepcopy(paths))
    result.setdefault("components", {}).setdefault("schemas", {}).update(copy.deepcopy(components))
    return result
