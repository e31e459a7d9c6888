"""The conversation on an item's and a run's pages: comments with @mentions, and putting a colleague on an
item. Each view validates input, calls runs.conversation or runs.taking, and goes back to the page; a
refusal the person can fix shows the page again with what they typed kept.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.identity import Identity
from accounts.members import active_members, display_name, member_choices
from processes.wording import step_title
from runs import conversation, taking
from runs.errors import Conflict, Forbidden, Invalid
from runs.models import Run, public_pk

from . import display, views
from .people import LISTED


def thread(identity: Identity, run: Run, *, item=None, body: str = "", issues=()) -> dict:
    """What a page's conversation card needs: the comments (an item's, or the whole run's), the form."""
    comments = conversation.comments_on(run, item=item)
    choices = member_choices(identity.organization.pk, limit=LISTED + 1)
    return {
        "comments": [{"comment": c, "author": display.person_name(c.author)} for c in comments],
        "body": body,
        "issues": list(issues),
        "max_chars": settings.COMMENT_MAX_CHARS,
        "people": {"choices": [] if len(choices) > LISTED else choices,
                   "suggest_url": reverse("people-suggest") if len(choices) > LISTED else ""},
    }


def handing(identity: Identity, item, *, chosen: str = "", issues=()) -> dict | None:
    """What the "assign to a colleague" form needs, or None when this person cannot assign this item."""
    if item.assigned_user_id is not None or not taking.may_hand(identity, item):
        return None
    people = active_members(identity.organization.pk)
    if item.for_operators:
        people = people.filter(membership__is_operator=True)
    else:
        people = people.filter(process_groups=item.assigned_group_id)
    listed = list(people.only("email", "first_name", "last_name")[:LISTED + 1])
    return {
        "choices": [] if len(listed) > LISTED else [(u.email, display_name(u)) for u in listed],
        "chosen": chosen or (item.handed_to.email if item.handed_to_id else ""),
        "issues": list(issues),
    }


@require_POST
def comment_on_item(request, identity: Identity, item_id: str):
    """Keep a comment on a work item, or show the page again with the problems and the text kept."""
    item = views.item_or_404(identity, item_id)
    body = request.POST.get("body", "")
    try:
        conversation.add_comment(identity, item.run, body=body[: settings.COMMENT_MAX_CHARS * 2], item=item)
    except Invalid as error:
        talk = thread(identity, item.run, item=item, body=body, issues=error.issues)
        return views.item_response(request, identity, item, status=400, extra={"conversation": talk})
    except Forbidden as error:
        return views.refused(request, error)
    messages.success(request, "Your comment is on the item.")
    return redirect(f"{item_path(item)}#conversation")


@require_POST
def comment_on_run(request, identity: Identity, run_id: str):
    """Keep a comment on a run, or show the run again with the problems and the text kept."""
    run = _run_or_404(identity, run_id)
    body = request.POST.get("body", "")
    try:
        conversation.add_comment(identity, run, body=body[: settings.COMMENT_MAX_CHARS * 2])
    except Invalid as error:
        return views.run_response(request, identity, run_id, status=400,
                                   extra={"conversation": thread(identity, run, body=body, issues=error.issues)})
    except Forbidden as error:
        return views.refused(request, error)
    messages.success(request, "Your comment is on the run.")
    return redirect(reverse("run", args=[run.public_id]) + "#conversation")


@require_POST
def assign_item(request, identity: Identity, item_id: str):
    """Put a colleague from the item's assignment on it (advisory, like a take: spec §3.4)."""
    item = views.item_or_404(identity, item_id)
    email = request.POST.get("person", "")
    try:
        changed = taking.hand(identity, item, email=email)
    except Invalid as error:
        return views.item_response(request, identity, item, status=400,
                                    extra={"handing": handing(identity, item, chosen=email[:254], issues=error.issues)})
    except Conflict as error:
        messages.warning(request, error.message)
    except Forbidden as error:
        return views.refused(request, error)
    else:
        name = display.person_name(item.handed_to)
        if changed:
            messages.success(request, f"“{step_title(item.step.step_id)}” is assigned to {name}; they are told.")
    return redirect(item_path(item))


def _run_or_404(identity: Identity, run_id: str) -> Run:
    pk = public_pk(run_id, "r")
    run = Run.objects.filter(pk=pk).first() if pk is not None else None
    if run is None or run.organization_id != identity.organization.pk:
        raise Http404("No such run in this organization.")
    return run


def item_path(item) -> str:
    return reverse("item", args=[item.public_id])
