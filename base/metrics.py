"""The server's Prometheus metrics, counted where things happen and served at /metrics (config.metrics).

Labels carry tool names, result codes, process names and outcomes only: never run data, names of
people, or tokens. Under gunicorn each worker writes its counts to PROMETHEUS_MULTIPROC_DIR (set by
config/gunicorn.py) and a scrape adds them up; in one process they live in memory.
"""

from __future__ import annotations

import functools
import os

from prometheus_client import Counter, Histogram

PREFIX = "agentprocess"

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Every process that counts writes its file there: a command run beside the node, a Celery worker.
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

TOOL_CALLS = Counter(f"{PREFIX}_tool_calls", "Tool calls, by tool and result code (ok or the error code).",
                     ["tool", "code"])
TOOL_SECONDS = Histogram(f"{PREFIX}_tool_call_seconds", "Time to answer a tool call, by tool.", ["tool"],
                         buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


# A labelled child is found by a lookup under a lock; a tool call takes its own once per process.
@functools.cache
def tool_calls(tool: str, code: str) -> Counter:
    """The count of one tool's calls with one result code (tools and codes are the protocol's few)."""
    return TOOL_CALLS.labels(tool, code)


@functools.cache
def tool_seconds(tool: str) -> Histogram:
    return TOOL_SECONDS.labels(tool)


RUNS_STARTED = Counter(f"{PREFIX}_runs_started", "Runs started, by process and mode.", ["process", "mode"])
RUNS_ENDED = Counter(f"{PREFIX}_runs_ended", "Runs ended or cancelled, by process and outcome.",
                     ["process", "outcome"])
LEASES_EXPIRED = Counter(f"{PREFIX}_leases_expired", "Claims whose lease ran out before the agent submitted.")
NOTICES = Counter(f"{PREFIX}_notices", "Notices recorded for people, by kind.", ["kind"])
EMAILS_SENT = Counter(f"{PREFIX}_notice_emails_sent", "Notice emails sent, by how (immediately or digest).",
                      ["how"])
SWEEPS = Counter(f"{PREFIX}_sweeps", "Timer sweeps run.")
HTTP_RESPONSES = Counter(f"{PREFIX}_http_responses", "HTTP responses, by status class (2xx, 4xx, 5xx...).",
                         ["status"])
