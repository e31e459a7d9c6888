"""`agentprocess-conformance check-config`: is everything the checks need there, before any check runs?

Each finding is one line: `ok` for what works, `note` for what will make some checks skip, `PROBLEM`
for what must be fixed, each problem saying what to do. Nothing is changed on the server except that
the publish command, when configured, is run for one fixture (publishing is idempotent).
"""

from __future__ import annotations

from collections.abc import Iterator

from . import exchanges, publishing
from . import fixtures as fixture_files
from .config import Config
from .context import mcp_version
from .oauth import AuthorizationProblem, ClientCredentials, discover
from .people import adapter_for
from .transport import McpSession, TransportError
from .web import HttpError

OK, NOTE, PROBLEM = "ok", "note", "PROBLEM"
PROBE_FIXTURE = "support-escalation"
LEASE_MARGIN_SECONDS = 1.0


def findings(config: Config) -> Iterator[tuple[str, str]]:
    """Yield (OK | NOTE | PROBLEM, line) for each thing checked, in the order the runner needs them."""
    http = exchanges.session()
    try:
        answer = http.post(config.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30,
                           headers={"Accept": "application/json, text/event-stream"})
    except HttpError as exc:
        yield PROBLEM, f"url: cannot reach {config.mcp_url} ({exc.reason}): start the server, or correct url"
        return
    if answer.status_code == 404:
        yield PROBLEM, f"url: {config.mcp_url} answered 404: give the MCP endpoint (e.g. https://host/mcp) as url"
        return
    yield OK, f"url: {config.mcp_url} answers (HTTP {answer.status_code})"
    credentials = config.home.agents + (config.other.agents if config.other else [])
    discovery = None
    try:
        discovery = discover(http, config.mcp_url)
        yield OK, f"token endpoint: {discovery.token_endpoint} (found through RFC 9728 and RFC 8414)"
    except (AuthorizationProblem, HttpError, ValueError) as exc:
        if any(isinstance(credential, ClientCredentials) for credential in credentials):
            yield PROBLEM, (f"token endpoint: {exc}: publish the metadata, or give the agents as ready tokens "
                            "(agents: [{token: …}])")
            return
        yield NOTE, f"token endpoint: {exc} (the agents are ready tokens; the MCP discovery check will fail)"
    yield from agents(config, discovery)
    version = mcp_version(config, discovery)
    yield OK, f"mcp: speaking MCP {version}"
    describe = yield from describing(config, discovery, version)
    yield from people(config, version)
    yield from other_organization(config, discovery, version)
    yield from publish_command(config)
    yield from profiles_and_timers(config, describe)


def agents(config: Config, discovery) -> Iterator[tuple[str, str]]:
    named = [(f"agents[{index}]", credential) for index, credential in enumerate(config.home.agents)]
    if config.other:
        named += [(f"other_organization.agents[{index}]", credential)
                  for index, credential in enumerate(config.other.agents)]
    for where, credential in named:
        try:
            credential.token(exchanges.session(), discovery, resource=config.mcp_url)
        except (AuthorizationProblem, HttpError, ValueError, AttributeError) as exc:
            yield PROBLEM, (f"{where}: no token: {exc}: check client_id and client_secret (the reference server's "
                            "`manage.py add_agent NAME` prints both)")
            continue
        yield OK, f"{where}: got a token"
    if len(config.home.agents) < 2:
        yield NOTE, "agents: only one agent: the checks that need a second one (claim conflicts, leases) will skip"


def describing(config: Config, discovery, version: str):
    session = McpSession(config.mcp_url, config.home.agents[0], discovery, protocol_version=version,
                         http=exchanges.session())
    try:
        envelope = session.call_tool("describe", {})
    except (TransportError, AuthorizationProblem, HttpError, ValueError) as exc:
        yield PROBLEM, f"describe: agents[0] cannot call it over MCP: {exc}"
        return {}
    if not envelope.ok or not isinstance(envelope.data, dict):
        yield PROBLEM, f"describe: answered {envelope.body!r:.300}"
        return {}
    yield OK, (f"describe: {envelope.data.get('protocol')} {envelope.data.get('version')}, profiles "
               f"{envelope.data.get('profiles')}, lease {envelope.data.get('leaseSeconds')} s")
    return envelope.data


def signed_in(adapter, person, where: str) -> tuple[str, str]:
    try:
        door = adapter.door(person)
        envelope = door.call_tool("describe", {})
    except Exception as exc:  # an adapter is the operator's code: whatever it raises is the problem
        return PROBLEM, (f"{where} {person.name}: cannot act as them: {exc}: check login and password, or the "
                         "people_adapter settings")
    if not envelope.ok:
        return PROBLEM, f"{where} {person.name}: signed in, but describe answered {envelope.body!r:.300}"
    return OK, f"{where} {person.name}: signed in; describe answers"


def people(config: Config, version: str) -> Iterator[tuple[str, str]]:
    if not config.home.people:
        yield NOTE, "people: none given: every check that needs a person will skip"
        return
    try:
        adapter = adapter_for(config, version)
    except Exception as exc:  # the adapter's own set-up, e.g. a python factory that does not import
        yield PROBLEM, f"people_adapter: {exc}"
        return
    for person in config.home.people:
        yield signed_in(adapter, person, "people:")
    if not any(person.operator for person in config.home.people):
        yield NOTE, "people: no operator (operator: true): the cancel, escalation and event checks will skip"
    if not any(not person.operator for person in config.home.people):
        yield NOTE, "people: everyone is an operator: the checks that need a person who is not one will skip"
    if config.other and config.other.people:
        yield signed_in(adapter, config.other.people[0], "other_organization.people:")


def other_organization(config: Config, discovery, version: str) -> Iterator[tuple[str, str]]:
    if not config.other or not config.other.agents:
        yield NOTE, "other_organization: not given: the isolation checks will skip"
        return
    ours, theirs = config.home.agents[0], config.other.agents[0]
    if ours == theirs:
        yield PROBLEM, "other_organization.agents[0] is agents[0]: give an agent of another organization"
        return
    seen = {}
    for where, credential in (("agents[0]", ours), ("other_organization.agents[0]", theirs)):
        session = McpSession(config.mcp_url, credential, discovery, protocol_version=version,
                             http=exchanges.session())
        try:
            envelope = session.call_tool("list_processes", {})
        except (TransportError, AuthorizationProblem, HttpError, ValueError) as exc:
            yield PROBLEM, f"{where}: list_processes over MCP failed: {exc}"
            return
        seen[where] = envelope.data
    if seen["agents[0]"] == seen["other_organization.agents[0]"] and (seen["agents[0]"] or {}).get("items"):
        yield PROBLEM, ("other_organization: its agent lists exactly the processes of the first organization: it must "
                        "belong to another organization (on the reference server: add_org, then add_agent --org)")
        return
    yield OK, "other_organization: its agent sees another catalogue"


def publish_command(config: Config) -> Iterator[tuple[str, str]]:
    if not config.publisher:
        if config.published is None:
            yield NOTE, ("fixtures: neither publish nor published given: the fixtures must already be published; "
                         "the hash and version checks will skip")
        return
    fixture = fixture_files.load([PROBE_FIXTURE])[PROBE_FIXTURE]
    found = publishing.publish_one(config.publisher, fixture)
    command = " ".join(publishing.command_for(config.publisher, fixture))
    if not found.published:
        yield PROBLEM, (f"fixtures.publish: `{command}` failed: {publishing.tail(found.output)}: run it by hand "
                        "(with fixtures.publish.cwd and env) until it publishes")
        return
    missing = [what for what, value in (("version N", found.version), ("sha256 HEX", found.sha256)) if value is None]
    if missing:
        yield PROBLEM, (f"fixtures.publish: the output names no {' and no '.join(missing)}: "
                        f"{publishing.tail(found.output)}: see the publish command contract in docs/conformance.md")
        return
    if found.sha256 != fixture.sha256:
        yield PROBLEM, (f"fixtures.publish: {PROBE_FIXTURE} published with sha256 {found.sha256}, the runner computes "
                        f"{fixture.sha256} (spec §6 rule 5)")
        return
    yield OK, f"fixtures.publish: {PROBE_FIXTURE} version {found.version}, sha256 {found.sha256[:12]}…"


def profiles_and_timers(config: Config, describe: dict) -> Iterator[tuple[str, str]]:
    if not describe:
        return
    if "check-1" in (describe.get("profiles") or []):
        if not config.check_evaluator:
            yield NOTE, ("check_evaluator: check-1 is advertised; give check_evaluator.url (the server's "
                         "CHECK_EVALUATOR_URL) to have the evaluator checked here")
        else:
            url = config.check_evaluator.rstrip("/") + "/models"
            try:
                answer = exchanges.session().get(url, timeout=30)
                if answer.status_code >= 500:
                    raise HttpError(url, f"HTTP {answer.status_code}")
                yield OK, f"check_evaluator: {url} answers (HTTP {answer.status_code})"
            except HttpError as exc:
                yield PROBLEM, (f"check_evaluator: {url} does not answer ({exc.reason}): start the evaluator the server's "
                                "CHECK_EVALUATOR_URL names")
    else:
        yield NOTE, ("profiles: check-1 is not advertised, so its checks skip (the reference server offers it when "
                     "CHECK_EVALUATOR_URL is set, for the server and the publish command alike)")
    lease = float(describe.get("leaseSeconds") or 0)
    if lease + LEASE_MARGIN_SECONDS > config.max_wait:
        yield NOTE, (f"timers: describe.leaseSeconds is {lease:.0f}, beyond max_wait {config.max_wait:.0f}: the lease "
                     "checks will skip (start the server with a short lease, LEASE_SECONDS=8 on the reference server)")


def problems_of(config: Config) -> Iterator[tuple[bool, str]]:
    """Yield (fine, line) for the CLI: a note is fine, with `note:` before its line."""
    for status, line in findings(config):
        yield status != PROBLEM, (f"note: {line}" if status == NOTE else line)
