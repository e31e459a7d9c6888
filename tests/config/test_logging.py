"""Structured logs: one JSON object a line from the app, gunicorn and Celery alike (docs/deploy.md, Logs)."""

import json
import logging
import sys

import requests

from config.logging import JSONFormatter
from tests.config.nodes import gunicorn_node


def test_json_log_lines():
    record = logging.LogRecord("runs", logging.WARNING, __file__, 1, "lease %s ended", ("x",), None)
    line = json.loads(JSONFormatter().format(record))
    assert line["level"] == "WARNING" and line["message"] == "lease x ended" and line["logger"] == "runs"
    try:
        raise ValueError("broken")
    except ValueError:
        record = logging.LogRecord("runs", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert "ValueError: broken" in json.loads(JSONFormatter().format(record))["exception"]


def test_a_node_started_with_its_gunicorn_config_logs_json_and_no_token(tmp_path):
    with gunicorn_node(tmp_path, LOG_FORMAT="json") as (base, _, out, err):
        secret = "apat1.not-a-real-token-but-secret"
        refused = requests.post(f"{base}/api/tools/describe", json={}, timeout=10,
                                headers={"Authorization": f"Bearer {secret}"})
        assert refused.status_code == 401
        signature = "0123456789abcdef0123456789abcdef"
        link = requests.get(f"{base}/files/f_1?e=99999999999&s={signature}", timeout=10,
                            headers={"Referer": f"{base}/files/f_2?e=1&s={signature}"})
        assert link.status_code == 404
    lines = [line for line in (out.read_text() + err.read_text()).splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= entry.keys() for entry in entries)
    access = [entry for entry in entries if entry["logger"] == "gunicorn.access"]
    assert {(e["method"], e["path"], e["status"]) for e in access} >= {("GET", "/healthz", 200),
                                                                      ("POST", "/api/tools/describe", 401)}
    assert all(isinstance(e["duration_ms"], float) and e["remote"] == "127.0.0.1" for e in access)
    assert any(e["logger"] == "django.request" and e.get("status") == 401 for e in entries)
    assert any(e["logger"] == "gunicorn.error" and "Booting worker" in e["message"] for e in entries)
    assert secret not in "\n".join(lines)
    # A signed link's signature is a capability: the access line keeps the path, never the signature.
    assert any(e.get("path") == "/files/f_1" for e in access)
    assert signature not in "\n".join(lines)


def test_celery_logs_as_the_app_does(settings):
    # A worker or beat configures logging from settings.LOGGING, at the level its --loglevel names.
    from celery import signals

    from config import celery  # noqa: F401 - connects the receiver

    settings.LOGGING = {**settings.LOGGING, "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json"}}}
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        answers = signals.setup_logging.send(sender=None, loglevel=logging.DEBUG, logfile=None, format="",
                                             colorize=False)
        assert answers, "nothing receives setup_logging, so Celery would set up its own"
        assert root.level == logging.DEBUG
        assert [type(handler.formatter) for handler in root.handlers] == [JSONFormatter]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
