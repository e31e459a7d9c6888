"""Work items for people and the notifications sent about them."""

from django.conf import settings
from django.db import models

from accounts.models import Group, Organization
from runs.models import Run, RunStep


class WorkItemState(models.TextChoices):
    OPEN = "open"
    DECIDED = "decided"
    REMOVED = "removed"


class WorkItem(models.Model):
    """A person step, or an escalated agent step, waiting for a decision (spec §3.4)."""

    # These three are indexed by the composite indexes below, which lead with them.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="work_items", db_index=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="work_items")
    step = models.ForeignKey(RunStep, on_delete=models.CASCADE, related_name="work_items")
    kind = models.CharField(max_length=16)
    state = models.CharField(max_length=16, choices=WorkItemState.choices, default=WorkItemState.OPEN)
    assigned_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    assigned_person = models.CharField(max_length=254, null=True, blank=True)
    for_operators = models.BooleanField(default=False)
    escalation = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    decision = models.CharField(max_length=16, null=True, blank=True)
    decided_by = models.CharField(max_length=64, null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # Assigned one way only: to a person, to a group, or to the operators (an escalation). The
            # inbox reads each way by its own index and adds them up (work.inbox._parts).
            models.CheckConstraint(
                condition=(
                    models.Q(assigned_user__isnull=False, assigned_group__isnull=True, for_operators=False)
                    | models.Q(assigned_user__isnull=True, assigned_group__isnull=False, for_operators=False)
                    | models.Q(assigned_user__isnull=True, assigned_group__isnull=True, for_operators=True)
                ),
                name="item_assigned_one_way",
            ),
        ]
        indexes = [
            # A person's inbox reads their items and their groups' items each by an index that leads with
            # the assignment, the organization checked on the rows (work.inbox._parts).
            models.Index(fields=["assigned_group", "state", "created_at"], name="item_group_open"),
            models.Index(fields=["assigned_user", "state", "created_at"], name="item_user_open"),
            models.Index(fields=["organization", "state", "for_operators", "created_at"], name="item_ops_inbox"),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return f"w_{self.pk}"


class Notification(models.Model):
    """An in-app notice (overdue work), listed in the recipient's inbox."""

    # Indexed by notice_user_newest, which leads with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications", db_index=False
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    work_item = models.ForeignKey(WorkItem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    step_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=32)
    text = models.TextField()
    created_at = models.DateTimeField()
    read_at = models.DateTimeField(null=True, blank=True)
    # Set when an email is owed; cleared once it is sent after the commit. Test runs never owe one.
    email_pending = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # A person's newest notices, and their unread ones counted, read only theirs.
            models.Index(fields=["user", "-created_at", "-id"], name="notice_user_newest"),
            models.Index(fields=["user"], name="notice_user_unread", condition=models.Q(read_at__isnull=True)),
            # The sweep's look for emails still owed reads only those (with statistics to plan by).
            models.Index(fields=["id"], name="notice_email_owed", condition=models.Q(email_pending=True)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.user}"
