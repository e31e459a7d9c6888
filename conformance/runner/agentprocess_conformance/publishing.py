"""Publishing the fixtures, which the protocol leaves to each server (spec §7): either already done, with what
the publisher reported, or done now by a command of the server's own, once per fixture.

A command is a template: `{path}` is the fixture's folder (named as the process), `{name}` the process
name; `bind` is repeated for each role with `{role}` and `{group}` (the group is the role's name unless
`groups` maps it). Its output is searched for `version N` and `sha256 HEX`.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .fixtures import Fixture

VERSION = re.compile(r"\bversion (\d+)\b")
SHA256 = re.compile(r"\bsha256 ([0-9a-f]{64})\b")
TIMEOUT = 300
# How much of a failed command's output a report shows: its end, where the refusal is (warnings come first).
TAIL_CHARACTERS = 400


@dataclass
class Publication:
    """What publishing one fixture reported: its version and content hash when the publisher said."""

    name: str
    published: bool
    version: int | None = None
    sha256: str | None = None
    output: str = ""


def from_config(published: dict) -> dict[str, Publication]:
    found = {}
    for name, facts in published.items():
        facts = facts or {}
        version = facts.get("version")
        found[name] = Publication(name, True, int(version) if version is not None else None, facts.get("sha256"))
    return found


def expand(template: list[str], **values: str) -> list[str]:
    return [part.format(**values) for part in template]


def command_for(settings: dict, fixture: Fixture) -> list[str]:
    assert fixture.path is not None
    folder = str(fixture.path.parent)
    command = expand(list(settings["command"]), path=folder, name=fixture.name)
    groups = settings.get("groups") or {}
    for role in fixture.roles():
        command += expand(list(settings.get("bind") or []), role=role, group=groups.get(role, role))
    return command


def publish_one(settings: dict, fixture: Fixture) -> Publication:
    environment = {**os.environ, **{str(k): str(v) for k, v in (settings.get("env") or {}).items()}}
    try:
        done = subprocess.run(command_for(settings, fixture), cwd=settings.get("cwd"), env=environment,
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Publication(fixture.name, False, output=f"{type(exc).__name__}: {exc}")
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        return Publication(fixture.name, False, output=output)
    version, sha256 = VERSION.search(done.stdout), SHA256.search(done.stdout)
    return Publication(fixture.name, True, int(version.group(1)) if version else None,
                       sha256.group(1) if sha256 else None, output)


def tail(output: str) -> str:
    """The end of a command's output on one line: its last lines, at most TAIL_CHARACTERS."""
    text = " | ".join(line.strip() for line in output.strip().splitlines() if line.strip())
    return text if len(text) <= TAIL_CHARACTERS else "…" + text[-TAIL_CHARACTERS:]


def publish(settings: dict, fixtures: list[Fixture]) -> dict[str, Publication]:
    """Run the command for every fixture (`jobs` at a time) and return what each reported."""
    jobs = max(1, int(settings.get("jobs", 1)))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return {found.name: found for found in pool.map(lambda fixture: publish_one(settings, fixture), fixtures)}
