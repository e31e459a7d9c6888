"""Processes, their drafts and their published, immutable versions."""

from django.conf import settings
from django.db import models

from accounts.models import Group, Organization


class ImmutableVersionError(Exception):
    """Raised on any attempt to change or delete a published version (spec §6 rule 5)."""


class Process(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="processes")
    name = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "processes"
        ordering = ["organization", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="process_name_unique_in_org")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def latest_version(self):
        return self.versions.order_by("-number").first()


class Draft(models.Model):
    """An imported PROCESS.md waiting for its roles to be bound and for someone to publish it."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="drafts")
    name = models.CharField(max_length=64, blank=True)
    source = models.TextField()
    folder_name = models.CharField(max_length=255, blank=True)
    frontmatter = models.JSONField(null=True, blank=True)
    body = models.TextField(blank=True)
    issues = models.JSONField(default=list, blank=True)
    bindings = models.JSONField(default=dict, blank=True, help_text="Role name → group id.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    published_version = models.ForeignKey(
        "ProcessVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"draft {self.name or '(unnamed)'}"


class ImmutableQuerySet(models.QuerySet):
    """Bulk updates and deletes would bypass the model's guard, so they are refused too."""

    def update(self, **kwargs):
        raise ImmutableVersionError("Published versions cannot change.")

    def delete(self):
        raise ImmutableVersionError("Published versions cannot be deleted.")


class ProcessVersion(models.Model):
    """A published version; it never changes once saved."""

    process = models.ForeignKey(Process, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    frontmatter = models.JSONField()
    body = models.TextField()
    source = models.TextField()
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    published_at = models.DateTimeField(auto_now_add=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["process", "-number"]
        constraints = [models.UniqueConstraint(fields=["process", "number"], name="version_number_unique")]

    def __str__(self) -> str:
        return f"{self.process.name} v{self.number}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ImmutableVersionError(f"{self} is published and cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersionError(f"{self} is published and cannot be deleted.")

    @property
    def name(self) -> str:
        return self.frontmatter["name"]

    @property
    def description(self) -> str:
        return self.frontmatter["description"]


class RoleBinding(models.Model):
    """The group a role name of one version is assigned to; fixed at publication."""

    version = models.ForeignKey(ProcessVersion, on_delete=models.PROTECT, related_name="bindings")
    role = models.CharField(max_length=200)
    group = models.ForeignKey(Group, on_delete=models.PROTECT, related_name="role_bindings")

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "role"], name="one_group_per_role")]

    def __str__(self) -> str:
        return f"{self.role} → {self.group.name}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ImmutableVersionError("A published version's role bindings cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersionError("A published version's role bindings cannot be deleted.")
