"""Overdue notices: an in-app notification for each recipient, and an email sent after the commit."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.models import User

from .models import Notification, WorkItem, WorkItemState

log = logging.getLogger(__name__)


def overdue_recipients(*, run, row, step) -> tuple[list[User], WorkItem | None]:
    """The assignee (a group's members or the named person; nobody for an agent step) and the operators."""
    item = (
        WorkItem.objects.filter(run=run, step=row, state=WorkItemState.OPEN).select_related("assigned_group").first()
    )
    people: dict[int, User] = {}
    if item is not None and not item.for_operators:
        if item.assigned_group is not None:
            members = item.assigned_group.members.filter(
                is_active=True, membership__organization_id=run.organization_id
            )  # a person who moved to another organization keeps no notices of this one
            people.update({u.pk: u for u in members})
        elif item.assigned_user is not None:
            people[item.assigned_user.pk] = item.assigned_user
    operators = User.objects.filter(
        membership__organization_id=run.organization_id, membership__is_operator=True, is_active=True
    )
    people.update({u.pk: u for u in operators})
    return list(people.values()), item


def record_overdue(*, run, row, step, now) -> None:
    """Record one overdue notice per recipient for this attempt; needs the run lock held."""
    recipients, item = overdue_recipients(run=run, row=row, step=step)
    test = run.mode == "test"
    label = "[test run] " if test else ""
    text = f"{label}Step '{row.step_id}' of {run.process_name} run {run.public_id} is overdue."
    Notification.objects.bulk_create(
        Notification(
            user=user,
            run=run,
            work_item=item,
            step_id=row.step_id,
            kind="overdue",
            text=text,
            created_at=now,
            email_pending=not test,
        )
        for user in recipients
    )


def send_pending_email(*, run_id: int | None = None, limit: int = 500) -> int:
    """Send the emails owed for one run's notices (or any run's, from the sweep); each goes once.

    A notice is claimed before its email is sent, so two senders never both send it; a send that
    fails gives the claim back, and the sweep picks up whatever a crash left owed.
    """
    sent = 0
    owed = Notification.objects.filter(email_pending=True)
    if run_id is not None:
        owed = owed.filter(run_id=run_id)
    pending = list(owed.select_related("user", "run", "work_item").order_by("pk")[:limit])
    for notice in pending:
        with transaction.atomic():
            claimed = Notification.objects.filter(pk=notice.pk, email_pending=True).update(email_pending=False)
        if not claimed:
            continue
        try:
            send_mail(
                subject=notice.text[:120],
                message=email_text(notice),
                from_email=settings.DEFAULT_FROM_EMAIL,
                recipient_list=[notice.user.email],
            )
            sent += 1
        except Exception:
            log.exception("overdue email to %s failed; it stays owed", notice.user.email)
            Notification.objects.filter(pk=notice.pk).update(email_pending=True)
    return sent


def notice_link(notice: Notification) -> str:
    """Return the page a notice points at: its work item while open, else its run."""
    if notice.work_item_id is not None and notice.work_item is not None and notice.work_item.state == WorkItemState.OPEN:
        return reverse("item", args=[notice.work_item.public_id])
    return reverse("run", args=[notice.run.public_id])


def email_text(notice: Notification) -> str:
    """Render the body of a notice's email, with a link to the work."""
    return render_to_string(
        "work/email/overdue.txt",
        {"notice": notice, "link": f"{settings.PUBLIC_URL or ''}{notice_link(notice)}",
         "inbox": f"{settings.PUBLIC_URL or ''}{reverse('inbox')}"},
    )


def mark_read(*, user, ids: list[int] | None = None) -> int:
    """Mark a person's notices read (all of them, or those in `ids`); return how many changed."""
    notices = Notification.objects.filter(user=user, read_at__isnull=True)
    if ids is not None:
        notices = notices.filter(pk__in=ids)
    return notices.update(read_at=timezone.now())
