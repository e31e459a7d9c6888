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
        call_command("runserver", options["addrport"], use_reloader=False)
