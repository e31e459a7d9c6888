"""The conversation card and the "assign to a colleague" card of the item and run pages (work/conversation.py)."""

from __future__ import annotations

from django import template

from runs.models import Run, public_pk
from work import conversation

register = template.Library()


@register.inclusion_tag("work/partials/conversation.html", takes_context=True)
def conversation_card(context, run_id: str, item=None, listed: bool = True):
    """A run's or an item's comments (`listed`; the run page shows them on its timeline) and the form."""
    talk = context.get("conversation")
    if talk is None:
        run = Run(pk=public_pk(run_id, "r"), organization_id=context["identity"].organization.pk)
        talk = conversation.thread(context["identity"], run, item=item)
    form = context.get("form") or {}
    return {"talk": talk, "item": item, "run_id": run_id, "listed": listed, "identity": context["identity"],
            "csrf_token": context.get("csrf_token"), "has_list": bool(form and form.get("people"))}


@register.inclusion_tag("work/partials/handing.html", takes_context=True)
def handing_card(context, item):
    """Who the item is assigned to among its group, and the form to put a colleague on it."""
    handing = context.get("handing")
    if handing is None and context.get("current"):
        handing = conversation.handing(context["identity"], item)
    return {"handing": handing, "item": item, "identity": context["identity"], "current": context.get("current"),
            "csrf_token": context.get("csrf_token")}
