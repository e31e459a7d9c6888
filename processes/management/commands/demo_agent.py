"""Run the demo agent: it works the demo processes' agent steps over the REST API."""

import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.models import DEFAULT_ORGANIZATION, Agent, Organization
from accounts.oauth import create_agent, new_secret
from processes.demo.agent import INTERVAL, DemoAgent
from processes.management.commands.demo_data import CORE_FIXTURES, DEMO_PEOPLE

DEMO_AGENT_NAME = "demo-agent"


def demo_credentials(organization: Organization) -> tuple[str, str]:
    """The demo agent's client id and a fresh secret (the old one, if any, stops working)."""
    agent = Agent.objects.filter(organization=organization, name=DEMO_AGENT_NAME, for_user__isnull=True).first()
    if agent is None:
        _agent, client_id, secret = create_agent(organization=organization, name=DEMO_AGENT_NAME)
        return client_id, secret
    return agent.client_id, new_secret(agent)


def demo_agent(base: str, *, pause: float) -> DemoAgent:
    organization = Organization.objects.get(slug=DEFAULT_ORGANIZATION)
    client_id, secret = demo_credentials(organization)
    return DemoAgent(base, client_id, secret, processes=CORE_FIXTURES, person=DEMO_PEOPLE[0][0], pause=pause)


class Command(BaseCommand):
    help = (
        "Work the demo processes' ready agent steps through the REST API, as the agent 'demo-agent', with "
        "made-up values and evidence; --once works what is ready now and stops."
    )

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL")
        parser.add_argument("--once", action="store_true", help="work what is ready now, then stop")
        parser.add_argument(
            "--pause", type=float, default=settings.DEMO_AGENT_PAUSE, help="seconds between two steps"
        )
        parser.add_argument("--interval", type=float, default=INTERVAL, help="seconds between two looks for work")

    def handle(self, *args, url, once, pause, interval, **options):
        agent = demo_agent(url, pause=pause)
        if once:
            self.stdout.write(f"handed in {agent.run_once()} steps")
            return
        self.stdout.write(f"demo agent working {url} every {interval}s; Ctrl-C stops it")
        agent.forever(interval, threading.Event())
