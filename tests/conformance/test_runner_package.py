"""The runner package on its own: its copies of the schemas and fixtures, its imports, its pieces."""

import ast
import json
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from agentprocess_conformance import (
    cli,
    config,
    exchanges,
    fixtures,
    flows,
    framework,
    people,
    publishing,
    report,
    scenarios,
    transport,
)

from processes import hashing, parsing

from .harness import ROOT, RUNNER, RUNNER_DATA

PACKAGE = RUNNER / "agentprocess_conformance"
SERVER_SCHEMAS = ROOT / "runs" / "schemas" / "core-2"
PROTOCOL_SCHEMAS = ROOT.parent / "shared" / "agentprocess" / "schemas" / "core-2"
# What the runner may import besides the standard library: its declared dependencies.
THIRD_PARTY = {"yaml", "rfc8785"}


def tree(folder: Path, pattern: str) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob(pattern)}


def test_the_shipped_schemas_are_the_official_core_2_schemas():
    shipped = tree(RUNNER_DATA / "schemas" / "core-2", "*.json")
    assert len(shipped) == len(tree(SERVER_SCHEMAS, "*.json")) > 20
    assert shipped == tree(SERVER_SCHEMAS, "*.json")
    if PROTOCOL_SCHEMAS.exists():  # the protocol repository beside this one, where it is checked out
        assert shipped == tree(PROTOCOL_SCHEMAS, "*.json")


def test_the_shipped_fixtures_are_the_conformance_fixtures():
    shipped = tree(RUNNER_DATA / "fixtures", "PROCESS.md")
    assert len(shipped) == 12 and shipped == tree(ROOT / "conformance" / "fixtures", "PROCESS.md")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_runner_imports_nothing_of_the_server():
    allowed = set(sys.stdlib_module_names) | THIRD_PARTY | {"agentprocess_conformance"}
    found = {str(path.relative_to(PACKAGE)): imported_modules(path) - allowed for path in PACKAGE.rglob("*.py")}
    assert len(found) > 10 and not any(found.values()), found


def test_the_runners_dependencies_are_installed_with_the_server():
    # `make test` and CI install the server's dependencies; the runner's must be among them.
    runner = tomllib.loads((RUNNER / "pyproject.toml").read_text())["project"]["dependencies"]
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {requirement.split("=")[0].split("[")[0].lower() for requirement in server}
    assert {requirement.split(">")[0].split("<")[0].lower() for requirement in runner} <= names


@pytest.mark.parametrize("name", fixtures.all_names())
def test_the_runners_content_hash_is_the_servers(name):
    # spec §6 rule 5, computed twice: by the runner's own YAML core-schema reading and by the server's.
    fixture = fixtures.load([name])[name]
    parsed = parsing.parse_process(fixture.text)
    assert parsed.frontmatter == fixture.frontmatter and parsed.body == fixture.body
    assert fixture.sha256 == hashing.content_hash(parsed.frontmatter, parsed.body)


def test_the_runner_reads_yaml_by_the_core_schema():
    text = "---\nname: x\ndescription: yes\nsteps:\n  - {id: a, agent: on, due: 2026-01-01, n: 010, f: .5, z: null}\n---\nBody\n"
    fixture = fixtures.parse(text)
    assert fixture.frontmatter["description"] == "yes" and fixture.body == "Body\n"
    assert fixture.steps["a"] == {"id": "a", "agent": "on", "due": "2026-01-01", "n": 10, "f": 0.5, "z": None}
    assert fixture.frontmatter == parsing.parse_process(text).frontmatter


def test_a_configuration_names_every_problem_at_once():
    with pytest.raises(config.ConfigError) as refused:
        config.build({"agents": [{"client_id": "a"}], "people": [{"roles": "x"}, {"name": "p", "roles": 3}],
                      "people_adapter": {"kind": "telepathy"}, "max_wait": "soon", "mcp_protocol_version": "2024-11-05",
                      "check_evaluator": "http://x"})
    assert str(refused.value).splitlines() == [
        "url: the server's MCP endpoint (or its base URL) is required",
        ".agents[0]: needs client_id and client_secret, or token",
        ".people[0]: a person needs at least a name",
        ".people[1].roles: a list of role names, or \"*\" for every role",
        "agents: at least one agent is required ({client_id, client_secret} or {token})",
        "people_adapter.kind: one of sign-in-form, headers, command, python",
        "mcp_protocol_version: one of auto, 2026-07-28, 2025-11-25, 2025-06-18",
        "max_wait: a number of seconds",
        "check_evaluator: {url: <the evaluator's base URL, as the server's CHECK_EVALUATOR_URL>}",
    ]


def test_a_base_url_means_its_mcp_endpoint():
    built = config.build({"url": "https://process.example/", "agents": [{"token": "t"}], "rest": "/api/tools/"})
    assert (built.mcp_url, built.base_url, built.rest_url) == (
        "https://process.example/mcp", "https://process.example", "https://process.example/api/tools/")


def test_server_sent_events_are_read_as_json_rpc_messages():
    body = 'event: message\ndata: {"jsonrpc": "2.0",\ndata:  "id": 3, "result": {}}\n\n: comment\ndata: [not json\n\n'
    assert transport.parse_sse(body) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]


def test_check_ids_are_unique_and_every_section_cites_the_spec():
    scenarios.load()
    ids = [check.id for section in framework.SECTIONS for check in section.checks]
    assert len(ids) == len(set(ids)) > 100
    assert all(check.spec for section in framework.SECTIONS for check in section.checks)


def test_the_junit_report_counts_failures_and_skips(tmp_path):
    section = framework.Section("demo", "Demo", "spec §0", (), lambda context, rec: None)
    results = [
        framework.Result(section, framework.Check("demo.a", "passes", "spec §1"), framework.PASSED),
        framework.Result(section, framework.Check("demo.b", "fails", "spec §2"), framework.FAILED, "no"),
        framework.Result(section, framework.Check("demo.c", "skips", "spec §3"), framework.SKIPPED, "later"),
    ]
    report.write_junit(tmp_path / "r.xml", results, server="http://x")
    [suite] = ET.parse(tmp_path / "r.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    assert [case.get("name") for case in suite] == ["demo.a", "demo.b", "demo.c"]
    data = report.as_json(results, server="http://x", describe={}, started="s", finished="f")
    assert data["summary"] == {"total": 3, "passed": 1, "failed": 1, "skipped": 1}
    assert json.dumps(data)


def test_an_unusable_configuration_or_server_exits_2_before_any_check(tmp_path, capsys):
    (tmp_path / "bad.yaml").write_text("url: http://127.0.0.1:1/mcp\nagents: [{client_id: only-an-id}]\n")
    assert cli.main(["--config", str(tmp_path / "bad.yaml")]) == cli.EXIT_UNUSABLE
    assert "agents[0]: needs client_id and client_secret, or token" in capsys.readouterr().err
    assert cli.main(["--url", "http://127.0.0.1:1", "--client", "id:secret"]) == cli.EXIT_UNUSABLE
    assert "cannot reach http://127.0.0.1:1/mcp" in capsys.readouterr().err
    assert cli.main(["--url", "http://127.0.0.1:1", "--token", "t"]) == cli.EXIT_UNUSABLE
    assert cli.main(["--url", "http://127.0.0.1:1", "--token", "t", "--section", "nonsense"]) == cli.EXIT_UNUSABLE


def test_export_writes_every_fixture_and_the_probe(tmp_path):
    assert cli.main(["--export", str(tmp_path)]) == cli.EXIT_PASSED
    written = sorted(path.parent.name for path in tmp_path.glob("*/PROCESS.md"))
    assert written == sorted(fixtures.all_names()) and len(written) == 13
    assert (tmp_path / "support-escalation" / "PROCESS.md").read_bytes() == (
        ROOT / "conformance" / "fixtures" / "support-escalation" / "PROCESS.md").read_bytes()


def test_an_exchange_is_kept_with_its_secrets_redacted():
    log = exchanges.Log()

    class Sent:
        url = "http://x/o/token/?client_secret=s3cret&grant_type=client_credentials"
        method = "POST"
        body = b"grant_type=client_credentials&client_secret=s3cret&password=pw"
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Basic s3cret"}

    class Answer:
        request = Sent
        status_code = 200
        content = b'{"access_token": "tok", "note": "Bearer abc.def", "data": {"token": "claim", "id": 1}}'
        headers = {"Content-Type": "application/json", "Date": "Sun, 06 Dec 2026 02:00:00 GMT"}

    log.add(Answer)
    [kept] = log.since(0)
    text = json.dumps(kept.as_json())
    assert not [secret for secret in ("s3cret", '"tok"', "abc.def", "claim", "pw") if secret in text], text
    assert kept.as_json()["response"]["data"]["id"] == 1 and kept.path.startswith("/o/token/")
    assert kept.date == "Sun, 06 Dec 2026 02:00:00 GMT"


def test_a_failed_check_carries_its_exchanges_and_the_console_shows_the_last():
    section = framework.Section("demo", "Demo", "spec §0", (framework.Check("demo.a", "a", "spec §1"),), None)
    exchange = {"method": "POST", "path": "/mcp", "status": 200, "tool": "claim", "request": {},
                "response": {"ok": False, "error": {"code": "stale"}}}
    result = framework.Result(section, section.checks[0], framework.FAILED, "claim answered stale", 0.1, [exchange])
    shown = []
    report.Printer(stream=type("Stream", (), {"write": lambda self, text: shown.append(text),
                                              "flush": lambda self: None})()).result(result)
    assert 'last exchange: POST /mcp (claim) → 200: {"ok": false' in "".join(shown)
    data = report.as_json([result], server="http://x", describe={}, started="s", finished="f")
    assert data["checks"][0]["exchanges"] == [exchange]


def test_a_failed_publication_shows_the_end_of_its_output():
    output = "UserWarning: a settings warning " + "x" * 500 + "\nCommandError: role tier1-lead is not bound"
    assert publishing.tail(output).endswith("CommandError: role tier1-lead is not bound")
    assert len(publishing.tail(output)) <= publishing.TAIL_CHARACTERS + 1


def test_the_people_command_prints_headers_as_json_or_lines():
    assert people.headers_from('{"Authorization": "Bearer a"}') == {"Authorization": "Bearer a"}
    assert people.headers_from("Signed in.\nCookie: s=1; csrftoken=2\nX-CSRFToken: 2\n") == {
        "Cookie": "s=1; csrftoken=2", "X-CSRFToken": "2"}


def test_a_stateless_request_carries_its_version_in_meta_and_headers():
    session = transport.McpSession("http://x/mcp", None, None, protocol_version="2026-07-28")
    params = session.stamped({"name": "claim", "arguments": {}})
    assert params["_meta"] == {transport.VERSION_META: "2026-07-28", transport.CAPABILITIES_META: {}}
    headers = session.headers({"method": "tools/call", "params": {"name": "claim"}})
    assert (headers["MCP-Protocol-Version"], headers["Mcp-Method"], headers["Mcp-Name"]) == (
        "2026-07-28", "tools/call", "claim")
    assert transport.header_value("réclamer") == "=?base64?csOpY2xhbWVy?="
    handshake = transport.McpSession("http://x/mcp", None, None, protocol_version="2025-11-25")
    assert handshake.stamped({"name": "claim"}) == {"name": "claim"} and "Mcp-Method" not in handshake.headers({})


def test_check_config_names_an_unreachable_server_and_what_to_do(capsys):
    assert cli.main(["check-config", "--url", "http://127.0.0.1:1", "--client", "id:secret"]) == cli.EXIT_UNUSABLE
    printed = capsys.readouterr().out
    assert "PROBLEM  url: cannot reach http://127.0.0.1:1/mcp" in printed and "start the server" in printed


def test_the_servers_clock_is_its_first_date_header_and_an_expiry_is_held_to_the_lease():
    exchanges.LOG.entries.append(exchanges.Exchange(
        10**9, "POST", "/mcp", 200, None, None, date="Sun, 06 Dec 2026 02:00:00 GMT, Sun, 06 Dec 2026 02:00:03 GMT"))
    served = flows.server_now()
    assert served.isoformat() == "2026-12-06T02:00:00+00:00"
    assert flows.lease_problem("2026-12-06T02:00:08Z", 8, served) is None
    assert flows.lease_problem("2026-12-06T02:00:07.5Z", 8, served) is None
    assert "not the lease of 8 s" in flows.lease_problem("2026-12-06T03:00:08Z", 8, served)
    assert "not the lease of 8 s" in flows.lease_problem("2026-12-06T02:00:02Z", 8, served)
