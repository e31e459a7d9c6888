"""What the runner is told about a server: its URL, agents, people, organizations and published fixtures.

The file is JSON or YAML (docs/conformance.md shows a whole one). Every problem in it is reported at
once, before anything is sent to the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

import yaml

from .oauth import BearerToken, ClientCredentials
from .transport import AUTO, VERSIONS

ALL_ROLES = "*"
DEFAULT_MAX_WAIT = 30.0
ADAPTERS = ("sign-in-form", "headers", "command", "python")
MCP_VERSIONS = (AUTO, *VERSIONS)


class ConfigError(Exception):
    """The configuration cannot be used; the message names every problem."""


@dataclass
class Person:
    """A human identity the runner may act as, and what the server's bindings make of them."""

    name: str
    value: str
    roles: list[str]
    operator: bool = False
    login: str | None = None
    password: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def holds(self, role: str) -> bool:
        return ALL_ROLES in self.roles or role in self.roles


@dataclass
class Organization:
    agents: list[ClientCredentials | BearerToken] = field(default_factory=list)
    people: list[Person] = field(default_factory=list)


@dataclass
class Config:
    mcp_url: str
    base_url: str
    rest_url: str | None
    home: Organization
    other: Organization | None
    people_adapter: dict
    published: dict[str, dict] | None
    publisher: dict | None
    max_wait: float = DEFAULT_MAX_WAIT
    scope: str | None = None
    protocol_version: str | None = None
    check_evaluator: str | None = None


def read_file(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top")
    return data


def origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def mcp_endpoint(url: str) -> str:
    """The MCP endpoint of a URL: the URL itself, or `<origin>/mcp` when it names only the server."""
    parts = urlsplit(url)
    return url if parts.path not in ("", "/") else origin(url) + "/mcp"


def _credential(value, where: str, problems: list[str], scope: str | None):
    if not isinstance(value, dict):
        problems.append(f"{where}: expected {{client_id, client_secret}} or {{token}}")
        return None
    if value.get("token"):
        return BearerToken(str(value["token"]))
    if value.get("client_id") and value.get("client_secret"):
        return ClientCredentials(str(value["client_id"]), str(value["client_secret"]), value.get("scope") or scope)
    problems.append(f"{where}: needs client_id and client_secret, or token")
    return None


def _person(value, where: str, problems: list[str]) -> Person | None:
    if not isinstance(value, dict) or not value.get("name"):
        problems.append(f"{where}: a person needs at least a name")
        return None
    roles = value.get("roles", [])
    if roles == ALL_ROLES:
        roles = [ALL_ROLES]
    if not isinstance(roles, list):
        problems.append(f"{where}.roles: a list of role names, or \"*\" for every role")
        roles = []
    login = value.get("login")
    return Person(
        name=str(value["name"]),
        value=str(value.get("person") or login or value["name"]),
        roles=[str(role) for role in roles],
        operator=bool(value.get("operator", False)),
        login=login,
        password=value.get("password"),
        headers={str(k): str(v) for k, v in (value.get("headers") or {}).items()},
    )


def _organization(value, where: str, problems: list[str], scope: str | None) -> Organization:
    organization = Organization()
    agents = value.get("agents") or ([value["agent"]] if value.get("agent") else [])
    for index, agent in enumerate(agents):
        credential = _credential(agent, f"{where}.agents[{index}]", problems, scope)
        if credential:
            organization.agents.append(credential)
    people = value.get("people") or ([value["person"]] if value.get("person") else [])
    for index, person in enumerate(people):
        found = _person(person, f"{where}.people[{index}]", problems)
        if found:
            organization.people.append(found)
    names = [person.name for person in organization.people]
    problems += [f"{where}.people: the name {name!r} is used twice" for name in sorted({n for n in names if names.count(n) > 1})]
    return organization


def build(data: dict, *, overrides: dict | None = None) -> Config:
    """Turn the file's data (and command-line overrides) into a Config, or raise ConfigError naming every problem."""
    data = {**data, **{key: value for key, value in (overrides or {}).items() if value is not None}}
    problems: list[str] = []
    url = data.get("url")
    if not url:
        problems.append("url: the server's MCP endpoint (or its base URL) is required")
        url = "http://invalid"
    scope = data.get("scope")
    mcp_url = mcp_endpoint(str(url))
    base_url = str(data.get("base_url") or origin(mcp_url))
    rest = data.get("rest")
    rest_url = urljoin(base_url + "/", rest) if rest else None
    home = _organization(data, "", problems, scope)
    if not home.agents:
        problems.append("agents: at least one agent is required ({client_id, client_secret} or {token})")
    other = None
    if data.get("other_organization"):
        other = _organization(data["other_organization"], "other_organization", problems, scope)
    fixtures = data.get("fixtures") or {}
    published, publisher = fixtures.get("published"), fixtures.get("publish")
    if published is not None and not isinstance(published, dict):
        problems.append("fixtures.published: a mapping of process name to {version, sha256}")
    if publisher is not None and not (isinstance(publisher, dict) and publisher.get("command")):
        problems.append("fixtures.publish: needs a command (see docs/conformance.md)")
    adapter = data.get("people_adapter") or {"kind": "sign-in-form"}
    if adapter.get("kind") not in ADAPTERS:
        problems.append(f"people_adapter.kind: one of {', '.join(ADAPTERS)}")
    if adapter.get("kind") == "command" and not (isinstance(adapter.get("command"), list) and adapter["command"]):
        problems.append("people_adapter.command: a list, the program and its arguments ({name}, {login}, {person})")
    version = data.get("mcp_protocol_version")
    if version is not None and version not in MCP_VERSIONS:
        problems.append(f"mcp_protocol_version: one of {', '.join(MCP_VERSIONS)}")
    try:
        max_wait = float(data.get("max_wait", DEFAULT_MAX_WAIT))
    except (TypeError, ValueError):
        problems.append("max_wait: a number of seconds")
        max_wait = DEFAULT_MAX_WAIT
    evaluator = data.get("check_evaluator")
    if evaluator is not None and not (isinstance(evaluator, dict) and isinstance(evaluator.get("url"), str)):
        problems.append("check_evaluator: {url: <the evaluator's base URL, as the server's CHECK_EVALUATOR_URL>}")
    if problems:
        raise ConfigError("\n".join(problems))
    return Config(
        mcp_url=mcp_url,
        base_url=base_url,
        rest_url=rest_url,
        home=home,
        other=other,
        people_adapter=adapter,
        published=published,
        publisher=publisher,
        max_wait=max_wait,
        scope=scope,
        protocol_version=data.get("mcp_protocol_version"),
        check_evaluator=(data.get("check_evaluator") or {}).get("url") if isinstance(data.get("check_evaluator"), dict) else None,
    )
