"""schemathesis against /api/schema/ over real HTTP: no 500 and no response that breaks its schema, for every tool."""

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bearer(live_server, publish):
    """A real agent token from the client-credentials grant, and published processes to act on."""
    from accounts.models import Organization
    from accounts.oauth import create_agent
    from tests.runs.test_agent_loop import ONE_STEP, ROUTES

    org = Organization.objects.get_or_create(slug="default", defaults={"name": "Default"})[0]
    publish(ONE_STEP, organization=org)
    publish(ROUTES, organization=org)
    _, client_id, secret = create_agent(organization=org, name="fuzzer")
    metadata = requests.get(f"{live_server.url}/.well-known/oauth-authorization-server", timeout=10).json()
    answer = requests.post(metadata["token_endpoint"], auth=(client_id, secret), timeout=10,
                           data={"grant_type": "client_credentials", "scope": "agentprocess"})
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]


def test_every_tool_answers_within_its_schema(bearer, live_server):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 14

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def call(case):
            case.call_and_validate(base_url=live_server.url, headers=bearer, checks=CHECKS)

        call()
