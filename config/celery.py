"""The Celery app: beat schedules the sweep, a worker runs it (see README, Timers)."""

import logging
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def use_the_apps_logging(loglevel=None, **kwargs):
    """Log as the app does (settings.LOGGING, JSON with LOG_FORMAT=json), at the level --loglevel names."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)
