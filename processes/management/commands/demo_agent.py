"""Run the demo agent: it works the demo processes' agent steps over the REST API."""

import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from processes.demo import demo_agent
from processes.demo.agent import INTERVAL


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
