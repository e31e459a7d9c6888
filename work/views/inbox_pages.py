"""Home, the inbox (its filters, order and notices) and the people picker's suggestions."""

from django.core.paginator import Paginator
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from accounts.identity import Identity
from base.params import optional_integer
from processes.definition import definition_for
from processes.wording import step_title
from runs import notices, timers
from runs.models import Run, WorkItem
from work import display, inbox
from work.people import suggestions
from work.views.common import PAGE_SIZE, person_page


def home(request):
    """Send a signed-in person to their inbox; show everyone else what this is and how to sign in."""
    if request.user.is_authenticated:
        return redirect("inbox")
    return render(request, "home.html")


def _inputs_line(run: Run, limit: int = 3) -> list[tuple[str, str]]:
    shown = []
    for name, value in list((run.data or {}).get("inputs", {}).items())[:limit]:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = str(value)
            shown.append((name, text if len(text) <= 40 else text[:39] + "…"))
    return shown


def assignee(item: WorkItem) -> str:
    if item.for_operators:
        return "Operators"
    if item.assigned_group_id is not None:
        return item.assigned_group.name
    return item.assigned_person or ""


def inbox_rows(items) -> list[dict]:
    rows = []
    for item in items:
        step = definition_for(item.run.version)[item.step.step_id]
        rows.append(
            {
                "item": item,
                "run": item.run,
                "row": item.step,
                "title": step_title(item.step.step_id),
                "text": display.preview(step.instructions, 140),
                "inputs": _inputs_line(item.run),
                "assignee": assignee(item),
                "escalation": item.escalation or None,
                "taker": display.person_name(item.taken_by) if item.taken_by_id else None,
            }
        )
    return rows


@require_http_methods(["GET", "HEAD"])
@person_page
def inbox_page(request, identity: Identity):
    """List my open work items oldest first; operators also see escalations and overdue work."""
    # Reads apply whatever time has made due, as get_work does, so overdue badges are never late.
    timers.catch_up(organization=identity.organization)
    process = request.GET.get("process") or None
    show = request.GET.get("show", "")
    show = show if show in dict(inbox.SHOWS) else ""
    sort = inbox.sort_key(request.GET.get("sort"))
    items = inbox.inbox_items(identity, process=process, show=show, sort=sort)
    page = Paginator(items, PAGE_SIZE).get_page(optional_integer(request.GET, "page", minimum=1))
    newest, unread = inbox.notifications_for(identity)
    overdue_items, overdue_steps = inbox.overdue_work(identity)
    context = {
        "identity": identity,
        "page": page,
        "rows": inbox_rows(page.object_list),
        "process": process,
        "show": show,
        "shows": inbox.SHOWS,
        "sort": sort,
        "sorts": inbox.SORTS,
        "links": _inbox_links(process=process, show=show, sort=sort),
        "counts": inbox.process_counts(identity),
        "escalations": inbox_rows(inbox.escalation_queue(identity)),
        "overdue_items": inbox_rows(overdue_items),
        "overdue_steps": overdue_steps,
        "notices": [(notice, inbox.notice_link(notice)) for notice in newest],
        "unread": unread,
        "unread_notices": unread,  # the top bar's count, already read (work.context would count again)
        "nav": "inbox",
    }
    return render(request, "work/inbox.html", context)


def _inbox_links(*, process: str | None, show: str, sort: str) -> dict:
    """The inbox's links, each keeping the order and filters it does not change."""

    def query(**changed) -> str:
        params = {
            "show": show,
            "process": process or "",
            "sort": "" if sort == inbox.SORTS[0][0] else sort,
            **changed,
        }
        return urlencode([(key, value) for key, value in params.items() if value])

    def prefix(text: str) -> str:  # what comes before one more parameter
        return f"?{text}&" if text else "?"

    return {
        "shows": [(key, name, "?" + query(show=key)) for key, name in inbox.SHOWS],
        "all_processes": "?" + query(process=""),
        "process": prefix(query(process="")),
        "page": prefix(query()),
    }


@require_POST
@person_page
def mark_notices_read(request, identity: Identity):
    """Mark one notice (or all of mine) read and go back to the inbox."""
    notice = optional_integer(request.POST, "notice", minimum=1)
    notices.mark_read(user=identity.user, ids=None if notice is None else [notice])
    return redirect("inbox")


@require_http_methods(["GET", "HEAD"])
@person_page
def people_suggest(request, identity: Identity):
    """The members of my organization whose name or address holds `q`, as JSON, for the person picker."""
    return JsonResponse({"people": suggestions(identity, request.GET.get("q", ""))})
