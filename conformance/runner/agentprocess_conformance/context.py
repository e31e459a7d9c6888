"""Everything the scenarios share: the identities, what the server described and published, and the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import exchanges
from . import fixtures as fixture_files
from .calls import Caller
from .config import Config, Person
from .framework import Skip
from .oauth import AuthorizationProblem, ClientCredentials, Discovery, discover
from .people import PersonAdapter, adapter_for
from .publishing import Publication
from .schemas import Ledger, Schemas
from .transport import AUTO, HANDSHAKE_VERSIONS, STATELESS_VERSIONS, BearerRest, McpSession, TransportError
from .web import HttpError


@dataclass
class Context:
    config: Config
    schemas: Schemas
    ledger: Ledger
    discovery: Discovery | None = None
    discovery_problem: str | None = None
    agents: list[Caller] = field(default_factory=list)
    sessions: list[McpSession] = field(default_factory=list)
    rest_agent: Caller | None = None
    other_agent: Caller | None = None
    adapter: PersonAdapter | None = None
    people: dict[str, tuple[Person, Caller]] = field(default_factory=dict)
    people_problems: dict[str, str] = field(default_factory=dict)
    other_person: tuple[Person, Caller] | None = None
    describe: dict = field(default_factory=dict)
    processes: dict[str, dict] = field(default_factory=dict)
    fixtures: dict[str, fixture_files.Fixture] = field(default_factory=dict)
    publications: dict[str, Publication] | None = None
    mcp_version: str = HANDSHAKE_VERSIONS[0]
    tokens: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)

    # --- identities ---------------------------------------------------------------------------

    @property
    def agent(self) -> Caller:
        return self.agents[0]

    def second_agent(self) -> Caller:
        if len(self.agents) < 2:
            raise Skip("needs a second agent (agents[1] in the configuration)")
        return self.agents[1]

    def person(self, *, role: str | None = None, operator: bool | None = None,
               exclude: tuple[str, ...] = ()) -> tuple[Person, Caller]:
        """Return a person who holds role (and is or is not an operator), or skip saying who is needed."""
        for name, (person, caller) in self.people.items():
            if name in exclude:
                continue
            if role is not None and not person.holds(role):
                continue
            if operator is not None and person.operator != operator:
                continue
            return person, caller
        wanted = " ".join(part for part in (
            "another" if exclude else ("an" if operator else "a"),
            "operator" if operator else "person",
            f"in the role {role}" if role else "",
        ) if part)
        problems = "; ".join(f"{name}: {problem}" for name, problem in self.people_problems.items())
        raise Skip(f"needs {wanted}" + (f" ({problems})" if problems else ""))

    def outsider(self, role: str) -> tuple[Person, Caller]:
        """Return a person who neither holds role nor is an operator."""
        for person, caller in self.people.values():
            if not person.holds(role) and not person.operator:
                return person, caller
        raise Skip(f"needs a person outside the role {role} who is not an operator")

    def other_org_agent(self) -> Caller:
        if self.other_agent is None:
            raise Skip("needs an agent of a second organization (other_organization in the configuration)")
        return self.other_agent

    # --- what the server offers -------------------------------------------------------------------

    def offers(self, tool: str) -> bool:
        return tool in (self.describe.get("tools") or [])

    def need_tool(self, tool: str) -> None:
        if self.describe and not self.offers(tool):
            raise Skip(f"the server does not offer {tool} (describe.tools)")

    def need_process(self, name: str) -> fixture_files.Fixture:
        if name not in self.processes:
            raise Skip(f"needs the process {name} published")
        return self.fixtures[name]

    def advertises(self, profile: str) -> bool:
        return profile in (self.describe.get("profiles") or [])

    @property
    def lease_seconds(self) -> float:
        return float(self.describe.get("leaseSeconds") or 0)


def mcp_version(config: Config, discovery) -> str:
    """The MCP revision to speak: the configured one, or (auto) 2026-07-28 when server/discover answers it."""
    wanted = config.protocol_version or AUTO
    if wanted != AUTO:
        return wanted
    probe = McpSession(config.mcp_url, config.home.agents[0], discovery, protocol_version=STATELESS_VERSIONS[0])
    try:
        probe.open()
    except (TransportError, AuthorizationProblem, HttpError, ValueError):
        return HANDSHAKE_VERSIONS[0]
    return STATELESS_VERSIONS[0]


def connect(config: Config, schemas: Schemas, ledger: Ledger) -> Context:
    """Find the token endpoint, open an MCP session per agent and a door per person."""
    context = Context(config=config, schemas=schemas, ledger=ledger)
    credentials = config.home.agents + (config.other.agents if config.other else [])
    try:
        context.discovery = discover(exchanges.session(), config.mcp_url)
    except (AuthorizationProblem, ValueError) as exc:
        # An unreachable server (HttpError) is not caught: nothing could be checked.
        if any(isinstance(credential, ClientCredentials) for credential in credentials):
            raise
        # Ready tokens need no token endpoint; the MCP section reports the missing metadata.
        context.discovery_problem = str(exc)
    version = context.mcp_version = mcp_version(config, context.discovery)
    for index, credential in enumerate(config.home.agents):
        session = McpSession(config.mcp_url, credential, context.discovery, protocol_version=version)
        context.sessions.append(session)
        context.agents.append(Caller(f"agent {index + 1}", session, schemas, ledger, kind="agent"))
    if config.rest_url:
        door = BearerRest(config.rest_url, config.home.agents[0], context.discovery)
        context.rest_agent = Caller("agent 1 over REST", door, schemas, ledger, kind="agent")
    if config.other and config.other.agents:
        session = McpSession(config.mcp_url, config.other.agents[0], context.discovery, protocol_version=version)
        context.other_agent = Caller("agent of the other organization", session, schemas, ledger, kind="agent")
    context.adapter = adapter_for(config, version)
    for person in config.home.people:
        try:
            door = context.adapter.door(person)
        except Exception as exc:
            context.people_problems[person.name] = str(exc)
            continue
        context.people[person.name] = (person, Caller(person.name, door, schemas, ledger, kind="person"))
    if config.other and config.other.people:
        person = config.other.people[0]
        try:
            door = context.adapter.door(person)
            context.other_person = (person, Caller(f"{person.name} (other organization)", door, schemas, ledger,
                                                   kind="person"))
        except Exception as exc:
            context.people_problems[person.name] = str(exc)
    return context
