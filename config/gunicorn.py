"""gunicorn's settings for an app node: `gunicorn -c python:config.gunicorn config.wsgi`.

Every setting can still be given on the command line, which wins. With LOG_FORMAT=json, gunicorn's
own error and access lines are JSON objects from the same formatter as the app's (config/logging.py).
"""

import os
import re
import tempfile
from pathlib import Path

from gunicorn.glogging import Logger

# The signature of a signed file link (runs/files.py): whoever holds it may download the file until it expires.
_SIGNATURE = re.compile(r"(?<=[?&]s=)[^&\s]+")


class AccessLogger(Logger):
    """gunicorn's logger, with every signed link's signature left out of the request line, query and referer."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        for key in ("r", "q", "f", "{referer}i"):
            if isinstance(atoms.get(key), str):
                atoms[key] = _SIGNATURE.sub("[redacted]", atoms[key])
        return atoms


# Each worker writes its metrics here and a scrape of /metrics adds them up (prometheus_client's
# multiprocess mode); a directory of its own unless one is given.
METRICS_DIR = Path(os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="agentprocess-metrics-")))


def on_starting(server):
    """Start the counts from zero: a directory kept from an earlier start holds its dead workers' files."""
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
    for stale in METRICS_DIR.glob("*.db"):
        stale.unlink()


def child_exit(server, worker):
    """A worker that stopped keeps its counters in the sum, and drops its live gauges."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


bind = os.environ.get("BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY") or os.cpu_count() or 1)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
timeout = 30
graceful_timeout = 20
accesslog = "-"
logger_class = AccessLogger

if os.environ.get("LOG_FORMAT") == "json":
    logconfig_dict = {
        "formatters": {"json": {"()": "config.logging.JSONFormatter"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"},
            "error_console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
        },
        # gunicorn's loggers write once, through their own handlers, not again through the app's root.
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }
