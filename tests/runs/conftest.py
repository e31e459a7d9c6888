"""Fixtures for the engine and tool tests: publish a process, call tools as agents and people."""

from __future__ import annotations

import base64
import json
import textwrap
import uuid
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from rest_framework.test import APIClient

from accounts.identity import Identity
from accounts.models import Agent, Group, Membership, Organization, User
from processes.hashing import content_hash
from processes.models import Process, ProcessVersion, RoleBinding
from processes.parsing import parse_process

SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "agentprocess" / "schemas" / "core-2"
if not SCHEMAS.exists():
    SCHEMAS = Path(__file__).resolve().parents[2] / "runs" / "schemas" / "core-2"
FIXTURES = Path(__file__).resolve().parents[2] / "conformance" / "fixtures"


def _registry() -> Registry:
    registry = Registry()
    for path in SCHEMAS.rglob("*.json"):
        document = json.loads(path.read_text())
        if "$id" in document:
            registry = registry.with_resource(document["$id"], Resource.from_contents(document))
    return registry


_REGISTRY = _registry()
_VALIDATORS: dict[str, Draft202012Validator] = {}


def official_validator(name: str) -> Draft202012Validator:
    if name not in _VALIDATORS:
        path = SCHEMAS / ("tools" if name.endswith(".result") else "") / f"{name}.json"
        _VALIDATORS[name] = Draft202012Validator(json.loads(path.read_text()), registry=_REGISTRY)
    return _VALIDATORS[name]


def assert_valid(name: str, instance) -> None:
    errors = sorted(official_validator(name).iter_errors(instance), key=lambda e: list(e.path))
    assert not errors, f"{name} breaks the official schema: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5]
    )


# The REST status of each protocol error code (issue: the tools over REST).
HTTP_STATUS = {
    "invalid": 400, "not_accepted": 422, "stale": 409, "conflict": 409, "forbidden": 403, "not_found": 404,
    "retry": 503,
}


class ToolCaller:
    """Call tools over REST as one identity; every answer is checked against the official schemas."""

    def __init__(self, identity: Identity):
        self.identity = identity
        self.client = APIClient()
        self.client.force_authenticate(user=identity.user, token=identity)

    def raw(self, tool: str, **arguments):
        response = self.client.post(f"/api/tools/{tool}", arguments, format="json")
        body = response.json()
        if body.get("ok"):
            assert response.status_code == 200
            assert_valid(f"{tool}.result", body["data"])
        else:
            assert_valid("tool-error", body["error"])
        return response.status_code, body

    def __call__(self, tool: str, **arguments):
        status, body = self.raw(tool, **arguments)
        assert body["ok"], f"{tool} failed ({status}): {body['error']}"
        return body["data"]

    def fails(self, tool: str, code: str, **arguments) -> dict:
        status, body = self.raw(tool, **arguments)
        assert not body["ok"], f"{tool} unexpectedly succeeded"
        assert body["error"]["code"] == code, body["error"]
        assert status == HTTP_STATUS[code], (tool, code, status)
        return body["error"]

    def write(self, tool: str, **arguments):
        arguments.setdefault("requestId", str(uuid.uuid4()))
        return self(tool, **arguments)


def rid() -> str:
    return str(uuid.uuid4())


def fields_of(obj) -> dict:
    """An instance's values as two reads must agree on them: repr tells 1 from 1.0 and True, -0.0 from
    0.0 and a str from a choice's member, at any depth of a document."""
    return {name: (repr(value), type(value)) for name, value in vars(obj).items() if name != "_state"}


@pytest.fixture
def org(db) -> Organization:
    # get_or_create: transactional tests flush the table the migration filled.
    return Organization.objects.get_or_create(slug="default", defaults={"name": "Default organization"})[0]


@pytest.fixture
def other_org(db) -> Organization:
    return Organization.objects.create(slug="other", name="Other")


@pytest.fixture
def make_person(org):
    def make(email: str, *, groups=(), operator=False, organization=None) -> Identity:
        organization = organization or org
        user = User.objects.create_user(email, "pw-" + email)
        Membership.objects.create(user=user, organization=organization, is_operator=operator)
        for name in groups:
            group, _ = Group.objects.get_or_create(organization=organization, name=name)
            group.members.add(user)
        return Identity.for_user(User.objects.get(pk=user.pk))

    return make


@pytest.fixture
def make_agent(org):
    def make(name: str = "screener", *, organization=None) -> Identity:
        agent = Agent.objects.create(organization=organization or org, name=name)
        return Identity.for_agent(agent)

    return make


@pytest.fixture
def agent(make_agent) -> ToolCaller:
    return ToolCaller(make_agent())


@pytest.fixture
def person_caller(make_person):
    def make(email: str, **kwargs) -> ToolCaller:
        return ToolCaller(make_person(email, **kwargs))

    return make


def publish_text(organization: Organization, text: str, *, bindings: dict[str, str] | None = None) -> ProcessVersion:
    """Publish a PROCESS.md directly (the publishing service has its own tests); roles bind to same-named groups."""
    from processes.validation import role_names

    parsed = parse_process(textwrap.dedent(text).lstrip() if text.startswith("\n") else text)
    assert not parsed.issues, parsed.issues
    frontmatter = parsed.frontmatter
    process, _ = Process.objects.get_or_create(organization=organization, name=frontmatter["name"])
    number = (process.versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    version = ProcessVersion.objects.create(
        process=process,
        number=number,
        sha256=content_hash(frontmatter, parsed.body),
        frontmatter=frontmatter,
        body=parsed.body,
        source=text,
    )
    for role in role_names(frontmatter):
        group_name = (bindings or {}).get(role, role)
        group, _ = Group.objects.get_or_create(organization=organization, name=group_name)
        RoleBinding.objects.create(version=version, role=role, group=group)
    return version


@pytest.fixture
def publish(org):
    def do(text_or_fixture: str, **kwargs) -> ProcessVersion:
        text = text_or_fixture
        if "\n" not in text_or_fixture:
            text = (FIXTURES / text_or_fixture / "PROCESS.md").read_text()
        return publish_text(kwargs.pop("organization", org), text, **kwargs)

    return do


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def age(run_id: str, seconds: float) -> None:
    """Let `seconds` pass for one run: every clock it holds moves that far into the past."""
    import datetime as dt

    from django.db.models import F

    from runs.models import Run, RunStep

    delta = dt.timedelta(seconds=seconds)
    pk = int(run_id[2:])
    steps = RunStep.objects.filter(run_id=pk)
    steps.filter(lease_expires_at__isnull=False).update(lease_expires_at=F("lease_expires_at") - delta)
    steps.filter(wake_at__isnull=False).update(wake_at=F("wake_at") - delta)
    steps.filter(due_at__isnull=False).update(due_at=F("due_at") - delta)
    Run.objects.filter(pk=pk, wake_at__isnull=False).update(wake_at=F("wake_at") - delta)
    # A change to a run's rows moves its revision, as every write's does (runs.snapshots).
    Run.objects.filter(pk=pk).update(revision=F("revision") + 1)


def step_state(view: dict, step_id: str):
    return next(step["state"] for step in view["steps"] if step["id"] == step_id)
