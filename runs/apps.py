from django.apps import AppConfig
from django.db.models.signals import pre_save


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.models import Membership

        pre_save.connect(_moving, sender=Membership, dispatch_uid="runs-notices-follow-membership")


def _moving(sender, instance, **kwargs) -> None:
    """A person who moves to another organization keeps no notices of the one they left."""
    from . import notices

    if instance.pk is None:
        return
    before = sender.objects.filter(pk=instance.pk).values_list("organization_id", flat=True).first()
    if before is not None and before != instance.organization_id:
        notices.forget_other_organizations(user=instance.user, organization_id=instance.organization_id)
