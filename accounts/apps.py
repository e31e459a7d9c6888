from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    # allauth's sign-in records are "Accounts" in the admin already.
    verbose_name = "Organizations, people and agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from allauth.idp.oidc.models import Client
        from django.db.models.signals import post_migrate, pre_save

        from . import openapi  # noqa: F401  (registers the OpenAPI authentication schemes)
        from .connections import held_to_policy

        # allauth saves a client it built from a fetched metadata document; hold it to the same rules
        # as a registered one before it is stored.
        pre_save.connect(held_to_policy, sender=Client, dispatch_uid="accounts.client_policy")
        post_migrate.connect(create_cache_table, sender=self, dispatch_uid="accounts.cache_table")


def create_cache_table(using: str, **kwargs) -> None:
    """Make the shared cache's table when the cache is the database's (no Redis); a no-op once it exists."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)
