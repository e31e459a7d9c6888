"""A run's conversation: people's comments on the run or on one of its work items, in Markdown, with
@mentions of colleagues.

A comment is kept beside the run, never in it: it changes neither the run's data nor its snapshot, so
a decision form open elsewhere stays valid. A mention is an `@` and a member's email address
(`@ana@example.com`); each member mentioned is told (runs.notices.record_mention).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.identity import Identity
from accounts.members import active_members
from base.storable import text_problem

from . import live, notices
from .errors import Forbidden, Invalid
from .models import Comment, Run, WorkItem

# An @ that does not follow a word character, then an address; "ana@example.com" alone mentions nobody.
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
MAX_MENTIONS = 20


def mentions_in(body: str) -> list[str]:
    """The addresses a comment mentions, lower-cased, in order, each once."""
    return list(dict.fromkeys(match.lower().rstrip(".") for match in MENTION.findall(body)))


def check_comment(identity: Identity, body: str) -> tuple[str, list]:
    """Return the comment's text and the members it mentions, or raise Invalid naming every problem."""
    problems = []
    text = (body or "").strip()
    limit = settings.COMMENT_MAX_CHARS
    if not text:
        problems.append("body: required: write something")
    elif problem := text_problem(text):
        raise Invalid("The comment was not saved.", [f"body: {problem}"])
    elif len(text) > limit:
        problems.append(f"body: longer than the {limit} characters allowed; shorten it")
    addresses = mentions_in(text)
    if len(addresses) > MAX_MENTIONS:
        problems.append(f"body: mentions {len(addresses)} people, more than the {MAX_MENTIONS} allowed")
        addresses = []
    people = list(active_members(identity.organization.pk).annotate(address=Lower("email"))
                  .filter(address__in=addresses)) if addresses else []
    found = {user.email.lower() for user in people}
    organization = identity.organization.name or identity.organization.slug
    problems += [f"body: @{address} is not a member of {organization}" for address in addresses if address not in found]
    if problems:
        raise Invalid("The comment was not saved.", problems)
    return text, people


def add_comment(identity: Identity, run: Run, *, body: str, item: WorkItem | None = None) -> Comment:
    """Keep a person's comment on a run (or one of its items) and tell those it mentions."""
    if not identity.is_human or identity.user is None:
        raise Forbidden("Only people comment on runs.")
    if run.organization_id != identity.organization.pk or (item is not None and item.run_id != run.pk):
        raise Forbidden("This run is not in your organization.")
    text, people = check_comment(identity, body)
    now = timezone.now()
    with transaction.atomic():
        comment = Comment.objects.create(run=run, work_item=item, author=identity.user, body=text, created_at=now)
        if people:
            comment.mentioned.set(people)
        owed = notices.record_mention(comment=comment, people=people, now=now)
        keys = [live.run(run.organization_id, run.pk)]
        if item is not None:
            keys += live.audience(item)
        live.touch(*keys)
        if owed:
            transaction.on_commit(lambda: notices.send_pending_email(run_id=run.pk))
    return comment


def comments_on(run: Run, *, item: WorkItem | None = None) -> list[Comment]:
    """A run's comments (or one item's), oldest first, with their authors."""
    comments = Comment.objects.filter(run=run).select_related("author", "work_item__step")
    if item is not None:
        comments = comments.filter(work_item=item)
    return list(comments)
