"""One JSON object per log line (LOG_FORMAT=json), for log shippers in production.

The app, gunicorn (config/gunicorn.py) and Celery (config/celery.py) all write through this
formatter, so a node's output is one stream of objects with the same keys: time, level, logger,
message, and where there is one, the exception. A gunicorn access line also carries the request's
method, path, status, bytes, duration and client address as fields; never its headers, so no
bearer token reaches the log.
"""

import json
import logging
from collections.abc import Mapping

# gunicorn's access-log atoms (gunicorn.glogging.Logger.atoms) kept as fields, by field name.
ACCESS_FIELDS = {"method": "m", "path": "U", "query": "q", "status": "s", "bytes": "B", "remote": "h",
                 "user_agent": "a"}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if hasattr(record, "status_code"):  # django.request's 4xx and 5xx lines
            entry["status"] = record.status_code
        if record.name == "gunicorn.access" and isinstance(record.args, Mapping):
            atoms = record.args
            for field, atom in ACCESS_FIELDS.items():
                value = atoms.get(atom)
                if value not in (None, "", "-"):
                    entry[field] = value
            if "status" in entry and str(entry["status"]).isdigit():
                entry["status"] = int(entry["status"])
            if isinstance(atoms.get("D"), int):
                entry["duration_ms"] = round(atoms["D"] / 1000, 3)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
