import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from runs.timers import start_sweeper


class Command(BaseCommand):
    help = "Serve the site with the timer sweep in-process (the embedded default: no Redis, no Celery)."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, **options):
        start_sweeper(settings.SWEEP_SECONDS)
        self.stdout.write(f"Timers sweep every {settings.SWEEP_SECONDS}s in this process.")
        if settings.DEMO_AGENT:
            self._start_demo_agent(options["addrport"])
        call_command("runserver", options["addrport"], use_reloader=False)

    def _start_demo_agent(self, addrport: str) -> None:
        from accounts.models import Organization
        from processes.demo.agent import INTERVAL
        from processes.management.commands.demo_agent import demo_agent

        host, _, port = addrport.rpartition(":")
        try:
            agent = demo_agent(f"http://{host or '127.0.0.1'}:{port}", pause=settings.DEMO_AGENT_PAUSE)
        except Organization.DoesNotExist:
            self.stdout.write("No default organization, so no demo agent (run `manage.py demo_data` first).")
            return
        thread = threading.Thread(
            target=agent.forever, args=(INTERVAL, threading.Event()), name="demo-agent", daemon=True
        )
        thread.start()
        self.stdout.write("The demo agent works the demo processes' agent steps (DEMO_AGENT=0 turns it off).")
