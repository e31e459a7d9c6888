"""The demo: the conformance processes it publishes, its people, and its agent.

`start_demo_agent` is the entry point `manage.py serve` uses (and `DEMO_AGENT=0` turns off); the agent
itself (`agent.py`) knows the server only by its URL and works only the processes it is given.
"""

import threading

from accounts.models import DEFAULT_ORGANIZATION, Agent, Organization
from accounts.oauth import create_agent, new_secret
from processes.demo.agent import INTERVAL, DemoAgent

# The ten fixtures that use the core only (conformance/README.md); the other two need profiles.
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
PROFILE_FIXTURES = ("major-incident", "vendor-check")
DEMO_PEOPLE = (("demo@example.com", True), ("colleague@example.com", False))
DEMO_AGENT_NAME = "demo-agent"


def demo_credentials(organization: Organization) -> tuple[str, str]:
    """The demo agent's client id and a fresh secret (the old one, if any, stops working)."""
    agent = Agent.objects.filter(organization=organization, name=DEMO_AGENT_NAME, for_user__isnull=True).first()
    if agent is None:
        _agent, client_id, secret = create_agent(organization=organization, name=DEMO_AGENT_NAME)
        return client_id, secret
    return agent.client_id, new_secret(agent)


def demo_agent(base: str, *, pause: float) -> DemoAgent:
    """The demo agent for the server at `base`, working the core demo processes as the default organization."""
    organization = Organization.objects.get(slug=DEFAULT_ORGANIZATION)
    client_id, secret = demo_credentials(organization)
    return DemoAgent(base, client_id, secret, processes=CORE_FIXTURES, person=DEMO_PEOPLE[0][0], pause=pause)


def start_demo_agent(base: str, *, pause: float) -> threading.Thread | None:
    """Start the demo agent in a daemon thread beside the server; None when there is no demo organization."""
    try:
        agent = demo_agent(base, pause=pause)
    except Organization.DoesNotExist:
        return None
    thread = threading.Thread(target=agent.forever, args=(INTERVAL, threading.Event()), name="demo-agent", daemon=True)
    thread.start()
    return thread
