"""The official JSON Schemas of core-2, shipped with the runner, and a ledger of every answer checked against them."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .exchanges import LOG
from .shipped import data_folder
from .validator import Registry, Validator

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
    return data_folder() / "schemas" / "core-2"


class Schemas:
    """Validators for each tool's result and for the error shape, resolving `$id`s among the shipped files."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or schema_folder()
        self.registry = Registry()
        for path in sorted(self.folder.rglob("*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            if "$id" in document:
                self.registry.add(document)
        self.validators: dict[str, Validator] = {}

    def validator(self, name: str) -> Validator:
        """Return the validator of `<tool>.result`, `<tool>.arguments` or a shared shape such as `tool-error`."""
        if name not in self.validators:
            relative = f"tools/{name}.json" if "." in name else f"{name}.json"
            document = json.loads((self.folder / relative).read_text(encoding="utf-8"))
            self.validators[name] = Validator(document, registry=self.registry)
        return self.validators[name]

    def problems(self, name: str, instance) -> list[str]:
        """Return every way instance breaks the schema, each as `path: message`."""
        errors = sorted(self.validator(name).iter_errors(instance), key=lambda error: _sortable(error.path))
        return [f"{_path(error.path)}: {error.message[:300]}" for error in errors]


def _sortable(parts) -> list[tuple]:
    return [(0, part, "") if isinstance(part, int) else (1, 0, part) for part in parts]


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
