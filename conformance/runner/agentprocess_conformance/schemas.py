"""The official JSON Schemas of core-2, shipped with the runner, and a ledger of every answer checked against them."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from .exchanges import LOG

TOOLS = (
    "describe",
    "list_processes",
    "start_run",
    "get_run",
    "get_work",
    "claim",
    "renew",
    "upload",
    "submit",
    "escalate",
    "decide",
    "cancel",
    "send_event",
    "list_runs",
)
ERROR_SCHEMA = "tool-error"
# How many violations of one schema a report repeats; the rest are counted.
SHOWN_VIOLATIONS = 3


def schema_folder() -> Path:
    return Path(str(resources.files("agentprocess_conformance") / "data" / "schemas" / "core-2"))


class Schemas:
    """Validators for each tool's result and for the error shape, resolving `$id`s among the shipped files."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or schema_folder()
        registry = Registry()
        for path in sorted(self.folder.rglob("*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            if "$id" in document:
                registry = registry.with_resource(document["$id"], Resource.from_contents(document))
        self.registry = registry
        self.validators: dict[str, Draft202012Validator] = {}

    def validator(self, name: str) -> Draft202012Validator:
        """Return the validator of `<tool>.result`, `<tool>.arguments` or a shared shape such as `tool-error`."""
        if name not in self.validators:
            relative = f"tools/{name}.json" if "." in name else f"{name}.json"
            document = json.loads((self.folder / relative).read_text(encoding="utf-8"))
            self.validators[name] = Draft202012Validator(document, registry=self.registry)
        return self.validators[name]

    def problems(self, name: str, instance) -> list[str]:
        """Return every way instance breaks the schema, each as `path: message`."""
        errors = sorted(self.validator(name).iter_errors(instance), key=lambda error: list(error.absolute_path))
        return [f"{_path(error.absolute_path)}: {error.message[:300]}" for error in errors]


def _path(parts) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(".") or "(root)"


@dataclass
class Ledger:
    """Every answer seen during a run, by schema: how many, and what broke it."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    violations: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    # The number (exchanges.LOG) of the exchange that carried each violating answer, by schema.
    exchanges: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def record(self, schema: str, problems: list[str], where: str) -> None:
        self.counts[schema] += 1
        for problem in problems:
            self.violations[schema].append(f"{where}: {problem}")
        if problems:
            self.exchanges[schema].append(LOG.last_number)


def check_envelope(schemas: Schemas, ledger: Ledger, tool: str, envelope: object, where: str) -> None:
    """Record one answer: the envelope's shape (tools.md), then its data or error against the official schema."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("ok"), bool):
        ledger.record("envelope", ["not {ok: true, data} nor {ok: false, error}"], where)
        return
    extra = sorted(set(envelope) - ({"ok", "data"} if envelope["ok"] else {"ok", "error"}))
    ledger.record("envelope", [f"unexpected member {name!r}" for name in extra], where)
    if envelope["ok"]:
        if tool in TOOLS:
            ledger.record(f"{tool}.result", schemas.problems(f"{tool}.result", envelope.get("data")), where)
    else:
        ledger.record(ERROR_SCHEMA, schemas.problems(ERROR_SCHEMA, envelope.get("error")), where)
