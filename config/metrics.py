"""`/metrics`: the Prometheus text format, for a scraper on an allowed network or holding METRICS_TOKEN.

Counters come from every worker (prometheus_client's multiprocess mode when PROMETHEUS_MULTIPROC_DIR
is set, as config/gunicorn.py does); the gauges are read from the database at the scrape.
"""

from __future__ import annotations

import hmac
import ipaddress
import os

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from runs.gauges import RunGauges


def _allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in settings.METRICS_ALLOWED_NETWORKS)


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(ThisProcess())
    registry.register(RunGauges())
    return registry


class ThisProcess:
    """This process's own counters (one process: no files to add up)."""

    def collect(self):
        return REGISTRY.collect()


@login_not_required
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        response = HttpResponse("Forbidden: /metrics answers an allowed network or a bearer METRICS_TOKEN.\n",
                                status=403, content_type="text/plain")
        if settings.METRICS_TOKEN:
            response.status_code = 401
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
