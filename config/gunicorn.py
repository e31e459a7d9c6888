"""gunicorn's settings for an app node: `gunicorn -c python:config.gunicorn config.wsgi`.

Every setting can still be given on the command line, which wins. With LOG_FORMAT=json, gunicorn's
own error and access lines are JSON objects from the same formatter as the app's (config/logging.py).
"""

import os

bind = os.environ.get("BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY") or os.cpu_count() or 1)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
timeout = 30
graceful_timeout = 20
accesslog = "-"

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
