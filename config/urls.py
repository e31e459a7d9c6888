from django.contrib import admin
from django.urls import include, path

from .health import healthz
from .metrics import metrics

# The agents' doors first: Django tries the patterns in order, and they take most of the requests.
urlpatterns = [
    path("", include("api.urls")),
    path("", include("runs.urls")),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("", include("accounts.urls")),
    path("", include("work.urls")),
]
