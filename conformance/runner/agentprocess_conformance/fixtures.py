"""The conformance fixtures as the runner knows them: parsed frontmatter, body and content hash (spec §2, §6 rule 5)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import rfc8785
import yaml

from .shipped import data_folder

PROCESS_FILE = "PROCESS.md"
DELIMITER = "---"

# The ten fixtures that use the core only, and the two that need a profile (conformance/README.md).
CORE_FIXTURES = (
    "blog-publication",
    "contract-review",
    "customer-offboarding",
    "employee-onboarding",
    "expense-reimbursement",
    "incident-postmortem",
    "invoice-approval",
    "major-incident-response",
    "supplier-rfp",
    "support-escalation",
)
PROFILE_FIXTURES = {"major-incident": "parallel-1", "vendor-check": "check-1"}
# Processes of the runner's own that need a timer shorter than any fixture's.
PROBES = ("conformance-timeout",)


class CoreSchemaLoader(yaml.SafeLoader):
    """A YAML loader that resolves plain scalars by the YAML 1.2 core schema only (spec §2.1).

    PyYAML's safe loader follows YAML 1.1, where `yes`, `on` and unquoted dates are not strings; the
    spec says they are. Only null, booleans, integers and floats are resolved; everything else is a string.
    """

    yaml_implicit_resolvers: dict = {}


def _add_core_resolvers() -> None:
    core = "tag:yaml.org,2002:"
    CoreSchemaLoader.add_implicit_resolver(core + "null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
    CoreSchemaLoader.add_implicit_resolver(
        core + "bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    CoreSchemaLoader.add_implicit_resolver(
        core + "int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
    )
    CoreSchemaLoader.add_implicit_resolver(
        core + "float",
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+.0123456789"),
    )
    CoreSchemaLoader.add_constructor(core + "bool", lambda loader, node: loader.construct_scalar(node) in ("true", "True", "TRUE"))
    CoreSchemaLoader.add_constructor(core + "int", _construct_int)
    CoreSchemaLoader.add_constructor(core + "float", _construct_float)


def _construct_int(loader: CoreSchemaLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _construct_float(loader: CoreSchemaLoader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


_add_core_resolvers()


@dataclass(frozen=True)
class Fixture:
    """One PROCESS.md: its name, parsed frontmatter, body exactly as written, and content hash."""

    name: str
    text: str
    frontmatter: dict
    body: str
    path: Path | None = None
    steps: dict[str, dict] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return content_hash(self.frontmatter, self.body)

    def roles(self) -> list[str]:
        """Return the role names of this process's person steps (not `initiator`, not a path)."""
        found = []
        for step in self.frontmatter["steps"]:
            person = step.get("person")
            if person and person != "initiator" and "." not in person and person not in found:
                found.append(person)
        return found


def split(text: str) -> tuple[str, str]:
    """Return (frontmatter YAML, body) of a PROCESS.md: the body is everything after the closing line."""
    lines = text.split("\n")
    if lines[0].removesuffix("\r") != DELIMITER:
        raise ValueError("a PROCESS.md starts with a line '---'")
    for index in range(1, len(lines)):
        if lines[index].removesuffix("\r") == DELIMITER:
            return "\n".join(lines[1:index]) + "\n", "\n".join(lines[index + 1 :])
    raise ValueError("the frontmatter is never closed by a line '---'")


def content_hash(frontmatter: dict, body: str) -> str:
    """SHA-256 over the RFC 8785 canonical JSON of the frontmatter, one newline, then the body (spec §6 rule 5)."""
    digest = hashlib.sha256(rfc8785.dumps(frontmatter))
    digest.update(b"\n")
    digest.update(body.encode("utf-8"))
    return digest.hexdigest()


def parse(text: str, *, path: Path | None = None) -> Fixture:
    yaml_text, body = split(text)
    frontmatter = yaml.load(yaml_text, Loader=CoreSchemaLoader)
    steps = {step["id"]: step for step in frontmatter["steps"]}
    return Fixture(name=frontmatter["name"], text=text, frontmatter=frontmatter, body=body, path=path, steps=steps)


def bundled_folder(kind: str = "fixtures") -> Path:
    """Return the folder of the fixtures (or probes) shipped with the runner."""
    return data_folder() / kind


def load(names, folder: Path | None = None) -> dict[str, Fixture]:
    """Read the named fixtures from folder (default: the bundled copies of the protocol's fixtures)."""
    found = {}
    for name in names:
        base = folder or bundled_folder("probes" if name in PROBES else "fixtures")
        path = base / name / PROCESS_FILE
        found[name] = parse(path.read_text(encoding="utf-8"), path=path)
    return found


def all_names() -> list[str]:
    return [*CORE_FIXTURES, *PROFILE_FIXTURES, *PROBES]
