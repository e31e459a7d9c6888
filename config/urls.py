from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path

from api import urls as api_urls

from .health import healthz
from .metrics import metrics

# One sign-in for everyone: the admin's password form gives way to allauth's (second factor, lockout, rate
# limits), and a signed-in person who is not staff is refused.
admin.site.login = secure_admin_login(admin.site.login)

# The agents' doors first: Django tries the patterns in order, and they take most of the requests.
urlpatterns = [
    *api_urls.calls,
    path("", include("api.urls")),
    path("", include("runs.urls")),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("", include("accounts.urls")),
    path("", include("work.urls")),
]
