"""The demo agent: a reference agent that works the demo processes' agent steps over the REST API."""

import pytest
from django.core.management import call_command

from accounts.identity import Identity
from accounts.models import DEFAULT_ORGANIZATION, Organization, User
from processes.demo import demo_agent
from processes.demo.agent import sample
from processes.management.commands.demo_data import find_fixtures
from runs.tools import call_tool
from tests.mcp import SCREENING, rid
from tests.runs.conftest import publish_text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def default_organization_restored(django_db_setup, django_db_blocker):
    yield
    with django_db_blocker.unblock():
        Organization.objects.get_or_create(slug=DEFAULT_ORGANIZATION, defaults={"name": "Default organization"})


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        ("string", lambda v: isinstance(v, str) and v),
        ("number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
        ("boolean", lambda v: v is True),
        ("date", lambda v: len(v) == 10 and v[4] == "-"),
        ("datetime", lambda v: v.endswith("Z") and "T" in v),
        ("person", lambda v: v == "demo@example.com"),
        ({"type": "string", "one_of": ["low", "high"]}, lambda v: v == "low"),
        ({"type": "list", "items": "number"}, lambda v: v == [42]),
    ],
)
def test_each_type_gets_a_value_of_that_type(spec, fits):
    assert fits(sample("total", spec, person="demo@example.com"))


def test_it_works_the_demo_processes_and_nothing_else(live_server):
    if find_fixtures() is None:
        pytest.skip("the conformance fixtures are not beside the checkout (../shared/agentprocess)")
    call_command("demo_data", verbosity=0)
    organization = Organization.objects.get(slug=DEFAULT_ORGANIZATION)
    person = Identity.for_user(User.objects.get(email="demo@example.com"))
    publish_text(organization, SCREENING)  # not a demo process: the agent must leave it alone
    started = {
        "support-escalation": {"ticketId": "T-1"},
        "invoice-approval": {"invoiceId": "V-1", "invoiceDocument": "d", "manager": "demo@example.com"},
        "screening": {"vendor": "Acme"},
    }
    runs = {
        name: call_tool(person, "start_run", {"process": name, "inputs": inputs, "requestId": rid()})["run"]["id"]
        for name, inputs in started.items()
    }
    agent = demo_agent(live_server.url, pause=0)
    assert agent.run_once() == 2
    for name in ("support-escalation", "invoice-approval"):
        view = call_tool(person, "get_run", {"runId": runs[name]})
        record = next(iter(view["data"]["steps"].values()))
        assert record["by"].startswith("a_") and record["summary"].startswith("The demo agent")
    untouched = call_tool(person, "get_run", {"runId": runs["screening"]})
    assert untouched["data"]["steps"] == {}
    assert agent.run_once() == 0  # nothing left that it may take
