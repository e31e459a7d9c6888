"""Notices: new work, work sent back, escalations, overdue work, a run's end, a mention in a comment and an
item handed to someone, for the people they concern. Nobody is told of what their own action caused.

A notice about a work item is read once its person opens the item, and leaves everyone's unread count
once the item closes (decided by anyone, or dropped by the run).

Each is an in-app notification; an email goes too as the person chooses (User.email_notices): at once,
after the commit, or in a daily digest from the sweep (templates/runs/email/). Test runs never owe an
email. Links in emails are absolute: PUBLIC_URL, else the host of the request being served (or, from the
sweep, the last one seen), followed by the path of the page `links` names, which the pages register.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from accounts.models import EmailNotices, User
from base import backend, metrics, sql
from processes.wording import step_title

from . import files, live
from .models import Mode, NoticeKind, Notification, WorkItem, WorkItemState

log = logging.getLogger(__name__)

DIGEST_EVERY = dt.timedelta(days=1)
ENDED_BADLY = ("failed", "rejected")


# --- who hears of what ----------------------------------------------------------------------------


def _members(organization_id: int, **which):
    # A person who moved to another organization, or was made inactive, hears nothing of this one.
    return User.objects.filter(is_active=True, membership__organization_id=organization_id, **which).only(
        "pk", "email", "email_notices"
    )


def item_recipients(item: WorkItem, organization_id: int) -> list[User]:
    """Who an open item waits on: the named person, the group's members, or the operators."""
    if item.for_operators:
        return list(_members(organization_id, membership__is_operator=True))
    if item.assigned_group_id is not None:
        return list(_members(organization_id, process_groups=item.assigned_group_id))
    return list(_members(organization_id, pk=item.assigned_user_id))


def overdue_recipients(*, run, row) -> tuple[list[User], WorkItem | None]:
    """The assignee (a group's members or the named person; nobody for an agent step) and the operators."""
    item = WorkItem.objects.filter(run=run, step=row, state=WorkItemState.OPEN).first()
    people = {u.pk: u for u in _members(run.organization_id, membership__is_operator=True)}
    if item is not None and not item.for_operators:
        people.update({u.pk: u for u in item_recipients(item, run.organization_id)})
    return list(people.values()), item


# --- recording ------------------------------------------------------------------------------------


def _notify(run, people, *, kind: str, text: str, step_id: str = "", item=None, now) -> int:
    """Record one notice of `kind` for each person; return how many owe an email."""
    test = run.mode == Mode.TEST
    label = "[test run] " if test else ""
    notices = [
        Notification(user=user, run=run, work_item=item, step_id=step_id, kind=kind, text=f"{label}{text}",
                     created_at=now, email_pending=not test and user.email_notices != EmailNotices.OFF)
        for user in people
    ]
    if sql.batching():
        sql.insert_later(*notices)  # with the write's other statements; nobody needs their keys back
    else:
        Notification.objects.bulk_create(notices)
    sql.on_commit(functools.partial(metrics.NOTICES.labels(kind).inc, len(notices)))
    live.touch(*(live.person(user.pk) for user in people))
    return sum(notice.email_pending for notice in notices)


def record_overdue(*, run, row, now) -> int:
    """Record one overdue notice per recipient for this attempt; needs the run lock held."""
    people, item = overdue_recipients(run=run, row=row)
    text = f"{step_title(row.step_id)} in {run.process_name} run {run.public_id} is overdue."
    return _notify(run, people, kind=NoticeKind.OVERDUE, text=text, step_id=row.step_id, item=item, now=now)


def record_new_work(*, run, items, now, actor: int | None = None) -> int:
    """Tell whoever a newly opened item waits on: new work, work sent back for rework, an escalation.

    `actor`, the person whose decision or start opened the items, is not told of their own doing.
    """
    owed = 0
    for item in items:
        row = item.step  # the loaded step row the item was opened on
        where = f"{step_title(row.step_id)} in {run.process_name} run {run.public_id}"
        if item.for_operators:
            kind, text = NoticeKind.ESCALATION, f"An agent escalated {where}."
        elif row.attempt > 1:
            kind, text = NoticeKind.SENT_BACK, f"{where} was sent back and waits for you again."
        else:
            kind, text = NoticeKind.NEW_WORK, f"New work: {where}."
        people = [user for user in item_recipients(item, run.organization_id) if user.pk != actor]
        owed += _notify(run, people, kind=kind, text=text, step_id=row.step_id, item=item, now=now)
    return owed


def record_mention(*, comment, people, now) -> int:
    """Tell each person a comment names (never its author) where they were mentioned."""
    run, author = comment.run, comment.author
    where = f"{run.process_name} run {run.public_id}"
    item = comment.work_item
    if item is not None:
        where = f"{step_title(item.step.step_id)} in {where}"
    text = f"{display_name(author)} mentioned you on {where}."
    people = [user for user in people if user.pk != author.pk]
    return _notify(run, people, kind=NoticeKind.MENTION, text=text, step_id=item.step.step_id if item else "",
                   item=item, now=now)


def record_handover(*, item, to: User, by: User, now) -> int:
    """Tell the colleague an item was handed to, unless they handed it to themselves."""
    if to.pk == by.pk:
        return 0
    run = item.run
    text = (f"{display_name(by)} assigned {step_title(item.step.step_id)} in {run.process_name} run "
            f"{run.public_id} to you.")
    return _notify(run, [to], kind=NoticeKind.HANDED, text=text, step_id=item.step.step_id, item=item, now=now)


def display_name(user: User) -> str:
    return user.get_full_name().strip() or user.email


def clear_for_items(items, *, now) -> None:
    """Take the notices about these closed items out of everyone's unread count, and out of any digest
    still to come (nothing is left to do about them): one statement, sent in the write's batch."""
    keys = [item.pk for item in items]
    if not keys:
        return
    table = backend.quote_name(Notification._meta.db_table)
    column = {name: backend.quote_name(Notification._meta.get_field(name).column)
              for name in ("email_pending", "read_at", "work_item")}
    sql.execute(
        f"UPDATE {table} SET {column['email_pending']} = %s, {column['read_at']} = COALESCE({column['read_at']}, %s) "
        f"WHERE {column['work_item']} IN ({', '.join(['%s'] * len(keys))}) "
        f"AND ({column['email_pending']} OR {column['read_at']} IS NULL)",
        [False, Notification._meta.get_field("read_at").get_db_prep_save(now, connection), *keys],
        guardable=True,  # its WHERE ends in a parenthesised condition: one more AND applies to all of it
    )


def read_item(*, user, item) -> int:
    """Mark a person's notices about one item read, as they open it; return how many changed."""
    changed = Notification.objects.filter(user=user, work_item=item, read_at__isnull=True).update(
        read_at=timezone.now())
    if changed:
        live.touch(live.person(user.pk))
    return changed


def record_run_end(*, run, now) -> int:
    """Tell the person who started a run that it ended, unless they ended it themselves."""
    ended = run.ended or {}
    if run.initiator_id is None or ended.get("by") == f"u_{run.initiator_id}":
        return 0
    outcome = run.outcome or ""
    if run.state == "cancelled":
        kind, how = NoticeKind.RUN_FAILED, "was cancelled"
    elif outcome in ENDED_BADLY:
        kind, how = NoticeKind.RUN_FAILED, f"ended: {outcome}"
    else:
        kind, how = NoticeKind.RUN_ENDED, f"finished: {outcome.replace('_', ' ')}"
    text = f"Your {run.process_name} run {run.public_id} {how}."
    return _notify(run, _members(run.organization_id, pk=run.initiator_id), kind=kind, text=text, now=now)


# --- email ----------------------------------------------------------------------------------------


@dataclass
class Links:
    """The paths an email's links take on this site: the page a notice points at, and the inbox."""

    notice: Callable[[Notification], str]
    inbox: Callable[[], str]


# The pages register theirs as the project starts (work/apps.py); without pages, every link is the root.
links = Links(notice=lambda notice: "/", inbox=lambda: "/")

_last_root = ""


def site_root() -> str:
    """The absolute root links in emails start with: PUBLIC_URL, the request's, or the last one seen."""
    global _last_root
    if settings.PUBLIC_URL:
        return settings.PUBLIC_URL
    root = files.request_root()
    if root:
        _last_root = root
    return root or _last_root


def _claim(ids: list[int]) -> int:
    # A notice is claimed before its email goes, so two senders never both send it.
    with transaction.atomic():
        return Notification.objects.filter(pk__in=ids, email_pending=True).update(email_pending=False)


def send_pending_email(*, run_id: int | None = None, root: str | None = None, limit: int = 500) -> int:
    """Send the emails owed at once for one run's notices (or any run's, from the sweep); each goes once.

    A send that fails gives the claim back, and the sweep picks up whatever a crash left owed. People
    who chose a digest wait for it; those who turned email off since are owed nothing.
    """
    owed = Notification.objects.filter(email_pending=True)
    if run_id is not None:
        owed = owed.filter(run_id=run_id)
    owed.filter(user__email_notices=EmailNotices.OFF).update(email_pending=False)
    pending = owed.filter(user__email_notices=EmailNotices.IMMEDIATELY)
    root, sent = root or site_root(), 0
    for notice in pending.select_related("user", "run", "work_item").order_by("pk")[:limit]:
        if not _claim([notice.pk]):
            continue
        body = render_to_string("runs/email/notice.txt", {"notice": notice, "link": root + links.notice(notice),
                                                          "inbox": root + links.inbox()})
        if _send(notice.user, notice.text[:120], body, [notice.pk], how="immediately"):
            sent += 1
    return sent


def send_digests(*, now: dt.datetime | None = None, limit: int = 200) -> int:
    """Send each person who chose a daily digest one email of what is owed, at most once a day."""
    now = now or timezone.now()
    due = User.objects.filter(
        email_notices=EmailNotices.DIGEST, notifications__email_pending=True
    ).exclude(last_digest_at__gt=now - DIGEST_EVERY).distinct()[:limit]
    root, sent = site_root(), 0
    for user in due:
        notices = list(Notification.objects.filter(user=user, email_pending=True).select_related("run", "work_item")
                       .order_by("created_at", "pk"))
        if not notices or not _claim([n.pk for n in notices]):
            continue
        lines = [(notice, root + links.notice(notice)) for notice in notices]
        body = render_to_string("runs/email/digest.txt", {"lines": lines, "inbox": root + links.inbox()})
        subject = f"{len(notices)} update{'s' if len(notices) != 1 else ''} on your processes"
        if _send(user, subject, body, [n.pk for n in notices], how="digest"):
            User.objects.filter(pk=user.pk).update(last_digest_at=now)
            sent += 1
    return sent


def _send(user: User, subject: str, body: str, ids: list[int], *, how: str) -> bool:
    try:
        send_mail(subject=subject, message=body, from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=[user.email])
        metrics.EMAILS_SENT.labels(how).inc()
        return True
    except Exception:
        log.exception("email to %s failed; it stays owed", user.email)
        Notification.objects.filter(pk__in=ids).update(email_pending=True)
        return False


def forget_other_organizations(*, user, organization_id: int) -> int:
    """Drop a person's notices of any organization but theirs now (they moved); return how many."""
    deleted, _ = Notification.objects.filter(user=user).exclude(run__organization_id=organization_id).delete()
    return deleted


def mark_read(*, user, ids: list[int] | None = None) -> int:
    """Mark a person's notices read (all of them, or those in `ids`); return how many changed."""
    notices = Notification.objects.filter(user=user, read_at__isnull=True)
    if ids is not None:
        notices = notices.filter(pk__in=ids)
    changed = notices.update(read_at=timezone.now())
    if changed:
        live.touch(live.person(user.pk))
    return changed
