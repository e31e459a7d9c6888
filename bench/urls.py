"""The site's URLs with the benchmark's floor endpoint in front (bench/floor.py).

Only the benchmarks mount it, by starting the server with ROOT_URLCONF=bench.urls; config.urls never
names it.
"""

from django.urls import path

from bench.floor import FloorView
from config.urls import urlpatterns as site_patterns

urlpatterns = [path("bench/floor", FloorView.as_view()), *site_patterns]
