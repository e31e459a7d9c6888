import os

from django.contrib import admin
from django.urls import include, path

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("", include("accounts.urls")),
    path("", include("runs.urls")),
    path("", include("work.urls")),
    path("", include("processes.urls")),
    path("", include("config.mcp_urls")),
]

if os.environ.get("BENCH_FLOOR"):
    # The benchmark's floor endpoint (bench/agents.py); never mounted otherwise.
    from bench.floor import FloorView

    urlpatterns.append(path("bench/floor", FloorView.as_view()))
