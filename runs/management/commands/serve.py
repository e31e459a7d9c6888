from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from processes.demo import start_demo_agent
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
        host, _, port = addrport.rpartition(":")
        started = start_demo_agent(f"http://{host or '127.0.0.1'}:{port}", pause=settings.DEMO_AGENT_PAUSE)
        if started is None:
            self.stdout.write("No default organization, so no demo agent (run `manage.py demo_data` first).")
        else:
            self.stdout.write("The demo agent works the demo processes' agent steps (DEMO_AGENT=0 turns it off).")
