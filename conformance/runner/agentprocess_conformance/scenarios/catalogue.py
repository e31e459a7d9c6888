"""What the server says it offers (describe) and the fixtures it publishes (list_processes, spec §6 rule 5)."""

from __future__ import annotations

import re

from .. import fixtures as fixture_files
from .. import publishing
from ..flows import pages
from ..framework import Skip, section
from .mcp import REQUIRED_TOOLS

KNOWN_PROFILES = ("parallel-1", "check-1")
PROFILE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*-[0-9]+$")


@section("describe", "describe", "spec §4.1; tools.md describe", [
    ("describe.shape", "describe names the protocol, version core-2, the lease, the person format and the tools",
     "spec §4.1; tools.md describe"),
    ("describe.required_tools", "describe lists every required tool", "spec §4.1"),
    ("describe.fixture_tools", "the tools the fixtures need are offered: upload for file evidence, send_event for wait_for",
     "spec §4.2"),
    ("describe.profiles", "profiles are versioned names; check-1 comes with its limits",
     "spec §8; profiles/check.md §5"),
    ("describe.anyone", "a person gets the same describe as an agent", "spec §4.1"),
])
def describe(context, rec):
    data = context.agent.ok("describe")
    context.describe = data
    with rec.check("describe.shape"):
        assert data["protocol"] == "agentprocess", data["protocol"]
        assert data["version"] == "core-2", data["version"]
        assert data["leaseSeconds"] > 0, data["leaseSeconds"]
        assert data["person"]["format"], "person.format is empty"
    with rec.check("describe.required_tools"):
        missing = [tool for tool in REQUIRED_TOOLS if tool not in data["tools"]]
        assert not missing, f"describe.tools lacks {', '.join(missing)}"
    with rec.check("describe.fixture_tools"):
        missing = [tool for tool in ("upload", "send_event") if tool not in data["tools"]]
        assert not missing, f"describe.tools lacks {', '.join(missing)}, which the core fixtures need"
    with rec.check("describe.profiles"):
        odd = [name for name in data["profiles"] if not PROFILE_NAME.match(name)]
        assert not odd, f"profiles without a version: {odd}"
        if "check-1" in data["profiles"]:
            limits = data.get("limits") or {}
            for key in ("checkPass", "checkFail", "checkConfidence", "checkStateBytes"):
                assert key in limits, f"check-1 is advertised but limits.{key} is missing"
    with rec.check("describe.anyone"):
        _, person = context.person()
        assert person.ok("describe") == data, "a person's describe differs from the agent's"


@section("publication", "Published fixtures", "conformance/README.md; spec §6 rule 5", [
    ("publish.accepted", "the server publishes every core fixture (and each profile fixture it has the profile for)",
     "conformance/README.md; spec §7"),
    ("publish.listed", "list_processes lists every core fixture with its name, description and inputs as written",
     "spec §4.1 list_processes; tools.md list_processes"),
    ("publish.hash", "each fixture's version has the content hash of spec §6 rule 5",
     "spec §6 rule 5"),
    ("publish.version", "list_processes shows the version number publishing reported",
     "spec §6 rule 5; tools.md list_processes"),
    ("publish.profiles", "a profile fixture is published exactly when describe advertises its profile",
     "conformance/README.md; spec §8"),
])
def publication(context, rec):
    names = [*fixture_files.CORE_FIXTURES, *fixture_files.PROFILE_FIXTURES, *fixture_files.PROBES]
    context.fixtures = fixture_files.load(names)
    config = context.config
    if config.publisher:
        wanted = [name for name in names
                  if name not in fixture_files.PROFILE_FIXTURES or context.advertises(fixture_files.PROFILE_FIXTURES[name])]
        context.publications = publishing.publish(config.publisher, [context.fixtures[name] for name in wanted])
    elif config.published is not None:
        context.publications = publishing.from_config(config.published)
    with rec.check("publish.accepted"):
        if not config.publisher:
            raise Skip("the fixtures were published beforehand (fixtures.published)")
        refused = {name: found.output for name, found in context.publications.items() if not found.published}
        assert not refused, "; ".join(f"{name}: {publishing.tail(output)}" for name, output in refused.items())
    listed = {}
    for item in pages(context.agent, "list_processes"):
        assert item["name"] not in listed, f"list_processes lists {item['name']} twice"
        listed[item["name"]] = item
    context.processes = {name: item for name, item in listed.items() if name in context.fixtures}
    with rec.check("publish.listed"):
        problems = []
        for name in fixture_files.CORE_FIXTURES:
            item, fixture = listed.get(name), context.fixtures[name]
            if item is None:
                problems.append(f"{name}: not listed")
                continue
            if item["description"] != fixture.frontmatter["description"]:
                problems.append(f"{name}: description differs")
            if item["inputs"] != fixture.frontmatter.get("inputs", {}):
                problems.append(f"{name}: inputs differ: {item['inputs']}")
        assert not problems, "; ".join(problems)
    with rec.check("publish.hash"):
        reported = {name: found.sha256 for name, found in (context.publications or {}).items() if found.sha256}
        if not reported:
            raise Skip("publishing reported no content hashes (fixtures.published sha256, or the publish command's output)")
        wrong = [f"{name}: {sha256} (expected {context.fixtures[name].sha256})" for name, sha256 in reported.items()
                 if name in context.fixtures and sha256 != context.fixtures[name].sha256]
        assert not wrong, "; ".join(wrong)
    with rec.check("publish.version"):
        reported = {name: found.version for name, found in (context.publications or {}).items() if found.version}
        if not reported:
            raise Skip("publishing reported no version numbers")
        wrong = [f"{name}: listed {listed[name]['version']}, published {version}" for name, version in reported.items()
                 if name in listed and listed[name]["version"] != version]
        assert not wrong, "; ".join(wrong)
    with rec.check("publish.profiles"):
        wrong = []
        for name, profile in fixture_files.PROFILE_FIXTURES.items():
            if context.advertises(profile) and name not in listed:
                wrong.append(f"{profile} is advertised but {name} is not published")
            if not context.advertises(profile) and name in listed:
                wrong.append(f"{name} is published but {profile} is not advertised")
        assert not wrong, "; ".join(wrong)
