"""`/healthz`: whether this node can reach its database and its broker."""

from django.conf import settings
from django.db import connection
from django.http import JsonResponse


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _broker() -> str:
    if not settings.REDIS_URL:
        return "in-process"
    import redis

    redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping()
    return "ok"


def healthz(request):
    """Answer 200 when the database and the broker answer, else 503 naming what failed."""
    checks = {}
    healthy = True
    for name, probe in (("database", _database), ("broker", _broker)):
        try:
            checks[name] = probe()
        except Exception as exc:  # a health check reports every failure instead of raising it
            checks[name] = f"error: {type(exc).__name__}"
            healthy = False
    return JsonResponse({"status": "ok" if healthy else "unavailable", "checks": checks}, status=200 if healthy else 503)
