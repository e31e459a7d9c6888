from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    # allauth's sign-in records are "Accounts" in the admin already.
    verbose_name = "Organizations, people and agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import openapi  # noqa: F401  (registers the OpenAPI authentication schemes)
