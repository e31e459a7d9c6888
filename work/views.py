"""The people pages: home, inbox, a work item, a run. Each view validates input, calls the tools, renders.

The pages are one more door onto the engine (STYLE.md): a decision here is `call_tool(identity,
"decide", …)` exactly as over REST, so every rule and check order is the engine's, not the page's.
"""

from __future__ import annotations

import base64
import functools
import re
import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from accounts.identity import Identity
from base.params import optional_integer
from processes.definition import JOIN, definition_for
from processes.maps import process_map
from processes.wording import step_title
from runs import conversation, files, notices, taking, timers
from runs.assignments import may_decide
from runs.canonical import data_size
from runs.errors import Conflict, Forbidden, Invalid, NotAccepted, NotFound, Stale, ToolError
from runs.models import Run, RunStep, StepState, WorkItem, public_pk
from runs.tools import call_tool

from . import attention, display, figures, inbox, live_page, runlist, search
from .forms import apply_change, controls_for, place_problems, read_values, summary, too_large
from .people import members_of, picker, suggestions

PAGE_SIZE = 50
# Which of an item page's forms a decision comes from; each form keeps its own typed values and issues.
FORM_OF = {"completed": "complete", "approved": "approve", "rejected": "reject", "returned": "return", "failed": "fail"}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_UPLOAD_ID = re.compile(r"^f_[0-9a-f]{1,64}$")


def person_page(view):
    """Require a signed-in member of an organization and call the view with their human identity."""

    @functools.wraps(view)
    @login_required
    def wrapper(request, *args, **kwargs):
        identity = Identity.for_user(request.user)
        if identity is None:
            return render(request, "work/no_membership.html", status=403)
        live_page.remember(request, identity, kwargs)  # before the page reads anything it shows
        with files.serving(request):  # links made here (in emails sent after a decision) name this host
            return view(request, identity, *args, **kwargs)

    return wrapper


def operator_page(view):
    """Require an operator of an organization (others get a plain 403) and call the view with their identity."""

    @functools.wraps(view)
    @person_page
    def wrapper(request, identity: Identity, *args, **kwargs):
        if not identity.is_operator:
            return refused(request, Forbidden("Only the operators of your organization see these figures."))
        return view(request, identity, *args, **kwargs)

    return wrapper


def refused(request, error: ToolError):
    """Render a refusal the person cannot fix on this page: not found is a 404, forbidden a 403."""
    if isinstance(error, NotFound):
        raise Http404(error.message)
    return render(request, "work/refused.html", {"error": error}, status=error.status)


def request_id(value: str | None) -> str:
    """Return the form's requestId when it is one this server could have issued, else a new one."""
    return value if isinstance(value, str) and _UUID.match(value) else str(uuid.uuid4())


def new_request_id() -> str:
    return str(uuid.uuid4())


def _pk(public_id: str, prefix: str) -> int:
    pk = public_pk(public_id, prefix)
    if pk is None:
        raise Http404("No such page.")
    return pk


# --- home and inbox -----------------------------------------------------------------------------


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


def _assignee(item: WorkItem) -> str:
    if item.for_operators:
        return "Operators"
    if item.assigned_group_id is not None:
        return item.assigned_group.name
    return item.assigned_person or ""


def _rows(items) -> list[dict]:
    rows = []
    for item in items:
        step = definition_for(item.run.version)[item.step.step_id]
        rows.append({
            "item": item,
            "run": item.run,
            "row": item.step,
            "title": step_title(item.step.step_id),
            "text": display.preview(step.instructions, 140),
            "inputs": _inputs_line(item.run),
            "assignee": _assignee(item),
            "escalation": item.escalation or None,
            "taker": display.person_name(item.taken_by) if item.taken_by_id else None,
        })
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
        "rows": _rows(page.object_list),
        "process": process,
        "show": show,
        "shows": inbox.SHOWS,
        "sort": sort,
        "sorts": inbox.SORTS,
        "links": _inbox_links(process=process, show=show, sort=sort),
        "counts": inbox.process_counts(identity),
        "escalations": _rows(inbox.escalation_queue(identity)),
        "overdue_items": _rows(overdue_items),
        "overdue_steps": overdue_steps,
        "notices": [(notice, notices.notice_link(notice)) for notice in newest],
        "unread": unread,
        "unread_notices": unread,  # the top bar's count, already read (work.context would count again)
        "nav": "inbox",
    }
    return render(request, "work/inbox.html", context)


def _inbox_links(*, process: str | None, show: str, sort: str) -> dict:
    """The inbox's links, each keeping the order and filters it does not change."""
    def query(**changed) -> str:
        params = {"show": show, "process": process or "", "sort": "" if sort == inbox.SORTS[0][0] else sort, **changed}
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


# --- a work item --------------------------------------------------------------------------------


@require_POST
@person_page
def take_item(request, identity: Identity, item_id: str):
    """Take a group's item ("I'm working on this"), or take it over once the person has seen who holds it."""
    item = item_or_404(identity, item_id)
    seen = optional_integer(request.POST, "holder", minimum=1)
    try:
        taking.take(identity, item, holder_seen=seen)
    except Conflict as error:
        messages.warning(request, error.message)
    except Forbidden as error:
        return refused(request, error)
    else:
        messages.success(request, f"You are on “{step_title(item.step.step_id)}”; your colleagues can see it.")
    return _back(request, item)


@require_POST
@person_page
def release_item(request, identity: Identity, item_id: str):
    """Let go of an item the person took, so a colleague can pick it up."""
    item = item_or_404(identity, item_id)
    try:
        if taking.release(identity, item):
            messages.info(request, f"You let go of “{step_title(item.step.step_id)}”.")
    except (Conflict, Forbidden) as error:
        return refused(request, error)
    return _back(request, item)


def _back(request, item: WorkItem):
    """Go back where the form was: the inbox, or the item's page."""
    if request.POST.get("back") == "inbox":
        return redirect("inbox")
    return redirect("item", item_id=item.public_id)



def item_or_404(identity: Identity, item_id: str) -> WorkItem:
    # By key alone, the organization checked on the row: a plan that looked the key up within the
    # organization's items could read all of them.
    item = (WorkItem.objects.select_related("run__version", "step", "assigned_group", "taken_by")
            .filter(pk=_pk(item_id, "w")).first())
    if item is None or item.organization_id != identity.organization.pk:
        raise Http404("No such work item in this organization.")
    return item


@require_http_methods(["GET", "HEAD", "POST"])
@person_page
def item_page(request, identity: Identity, item_id: str):
    """Show one work item with the run it belongs to, and take the person's decision on it."""
    item = item_or_404(identity, item_id)
    if request.method == "POST":
        return _decide(request, identity, item)
    notices.read_item(user=identity.user, item=item)  # opening the item reads what told the person of it
    return item_response(request, identity, item)


def _decision_form(identity, current: dict, data: dict, *, posted=None, form_id=None, issues=None, problems=None,
                   kept=None, earlier=None) -> dict:
    """Everything the decision forms of one open work item need, with a person's earlier input kept.

    A rework starts from the earlier attempt's output and links, so the person corrects rather than retypes.
    """
    if form_id not in {FORM_OF[d] for d in current["decide"]["decisions"]}:
        form_id = None  # a form this item does not show; its issues go to the top of the decision card
    posted_here = posted if form_id else None
    earlier = earlier or {}
    candidate = ((current.get("escalation") or {}).get("candidate") or {}).get("output") or earlier.get("output")
    controls = []
    if current["kind"] != "approve":
        controls = controls_for(
            current.get("output"), "output", data=posted if form_id == "complete" else None, initial=candidate
        )
        if form_id == "complete" and posted.get("op"):
            apply_change(controls, posted["op"])
    placed = place_problems(controls, problems, issues, "output",
                            ("evidence", "next", "reason", "note", "summary", "decision"))
    forms = {key: {"request_id": new_request_id(), "values": {}, "issues": {}} for key in
             ("complete", "approve", "reject", "return", "fail")}
    if form_id in forms:
        forms[form_id]["values"] = {key: posted_here.get(key, "") for key in ("note", "summary", "reason", "next", "links")}
        forms[form_id]["issues"] = placed
    elif earlier:
        links = [e["ref"] for e in earlier.get("evidence") or [] if e.get("kind") == "link"]
        forms["complete"]["values"] = {"links": "\n".join(links), "next": earlier.get("next") or "",
                                       "reason": earlier.get("reason") or "", "summary": earlier.get("summary") or ""}
    decisions = current["decide"]["decisions"]
    return {
        "decisions": decisions,
        "snapshot": current["snapshot"],
        "seen": display.fingerprints(data),
        "controls": controls,
        "evidence": current.get("evidence") or [],
        "routes": current.get("next"),
        "forms": forms,
        "posted": form_id,
        "kept_files": kept or [],
        "all_issues": summary(controls, placed),
        # A step whose output declares `summary` asks for it there; the decision's own summary is not offered too.
        "own_summary": not any(c.name == "summary" for c in controls),
        "people": picker(identity, controls),
        "max_upload": settings.MAX_UPLOAD_BYTES,
    }


def item_response(request, identity: Identity, item: WorkItem, *, status: int = 200, posted=None, form_id=None,
                   issues=None, problems=None, kept=None, seen=None, notice=None, redrawn=None, extra=None):
    """Render a work item page from a fresh read of its run."""
    try:
        view = call_tool(identity, "get_run", {"runId": item.run.public_id})
    except ToolError as error:
        return refused(request, error)
    definition = definition_for(item.run.version)
    step = definition[item.step.step_id]
    current = next((w for w in view["workItems"] if w["id"] == item.public_id), None)
    if current is None:
        item.refresh_from_db(fields=["state", "decision", "decided_by", "decided_at"])
    allowed = current is not None and may_decide(identity, item)
    if current is not None and not allowed and status == 200:
        status = 403
    kept_names = display.file_names(identity.organization, kept or [])
    names = display.names_in_view(identity.organization, view,
                                  extra={item.decided_by or "", item.taken_by.ref if item.taken_by_id else ""})
    data = view["data"]
    records = display.step_records(definition, data)
    # While this step waits on a person, any record it holds is an earlier attempt (a rework).
    own = next((r for r in records if r.id == step.id), None)
    if own is not None and current is not None:
        own.earlier = True
    context = {
        "identity": identity,
        "item": item,
        "current": current,
        "view": view,
        "run": view["run"],
        "step": step,
        "title": step_title(step.id),
        "records": records,
        "own_record": own,
        "rejections": display.rejection_notes(definition, data, step.id),
        "files": display.file_names(identity.organization, display.file_refs(data)),
        "names": names,
        "allowed": allowed,
        "row": item.step,
        "notice": notice,
        "changes": display.changes_since(seen, definition, data) if seen is not None else None,
        "assignee": _assignee(item),
        "holder": item.taken_by if item.taken_by_id else None,
        "may_take": allowed and item.assigned_user_id is None,
        "reject_hint": (
            f"Required. The run goes back to {step_title(step.on_reject)} and whoever does it reads your note."
            if step.on_reject else "Required. This step has nowhere to go back to, so rejecting ends the run."
        ),
        "nav": "inbox",
    }
    if allowed:
        earlier = (own.current or {}) if own else {}
        offered = [e["ref"] for e in earlier.get("evidence") or [] if e.get("kind") == "file"]
        kept_names.update(display.file_names(identity.organization, set(offered) - set(kept_names)))
        files = [{"id": ref, "checked": True, **kept_names.get(ref, {})} for ref in kept or []]
        if posted is None:
            files += [{"id": ref, "checked": False, "earlier": True, **kept_names.get(ref, {})} for ref in offered]
        form = _decision_form(identity, current, data, posted=posted, form_id=form_id, issues=issues,
                              problems=problems, kept=files, earlier=earlier)
        form["redrawn_files"] = redrawn if redrawn and (redrawn["kept"] or redrawn["again"]) else None
        context["form"] = form
    context.update(extra or {})
    return render(request, "work/item.html", context, status=status)


def _evidence(request, identity: Identity, rid: str) -> tuple[list[dict], list[str], list[str]]:
    """Upload the files of a form through the `upload` tool; return evidence items, issues and kept ids."""
    kept = [ref for ref in request.POST.getlist("kept_file") if _UPLOAD_ID.match(ref)]
    issues: list[str] = []
    for index, upload in enumerate(request.FILES.getlist("files")):
        if upload.size > settings.MAX_UPLOAD_BYTES:
            issues.append(f"evidence: {upload.name} is larger than the {settings.MAX_UPLOAD_BYTES} bytes allowed")
            continue
        arguments = {
            "fileName": (upload.name or "file")[:255],
            "contentType": upload.content_type or "application/octet-stream",
            "contentBase64": base64.b64encode(upload.read()).decode(),
            # Derived from the form's requestId: a double submit uploads nothing twice and decides once.
            "requestId": str(uuid.uuid5(uuid.UUID(rid), f"file-{index}")),
        }
        try:
            kept.append(call_tool(identity, "upload", arguments)["id"])
        except ToolError as error:  # too large, or this form's requestId reused for another file
            issues.extend(f"evidence: {upload.name}: {issue}" for issue in error.issues or [error.message])
    links = [line.strip() for line in request.POST.get("links", "").splitlines() if line.strip()]
    evidence = [{"kind": "file", "ref": ref} for ref in dict.fromkeys(kept)]
    evidence += [{"kind": "link", "ref": link} for link in links]
    return evidence, issues, list(dict.fromkeys(kept))


def _decide(request, identity: Identity, item: WorkItem):
    """Send the person's decision through the `decide` tool and show what happened."""
    post = request.POST
    decision = post.get("decision", "")
    form_id = FORM_OF.get(decision)
    rid = request_id(post.get("requestId"))
    again = {"posted": post, "form_id": form_id, "seen": post.get("seen", "")}
    if post.get("op"):
        return _change_complete_form(request, identity, item, rid)
    if form_id is None:
        return item_response(request, identity, item, status=400, issues=["decision: press one of the buttons"])
    item.refresh_from_db(fields=["taken_by", "taken_at"])
    if item.taken_by_id not in (None, identity.user.pk) and post.get("confirm_taken") != str(item.taken_by_id):
        # A colleague is on it: deciding anyway is allowed (the first decision wins), once confirmed.
        return item_response(request, identity, item, status=409, notice="taken", **again)
    arguments = {
        "runId": item.run.public_id,
        "workItemId": item.public_id,
        "snapshot": post.get("snapshot", ""),
        "decision": decision,
        "requestId": rid,
    }
    problems: dict = {}
    kept: list[str] = []
    if decision == "completed":
        requirements = definition_for(item.run.version)[item.step.step_id].requirements()
        output, problems = read_values(controls_for(requirements["output"], "output", data=post), members_of(identity))
        arguments["output"] = output
        evidence, upload_issues, kept = _evidence(request, identity, rid)
        if upload_issues:
            return item_response(request, identity, item, status=400, issues=upload_issues, problems=problems,
                                  kept=kept, **{**again, "seen": None})
        if evidence:
            arguments["evidence"] = evidence
        if post.get("summary", "").strip():
            arguments["summary"] = post["summary"].strip()
            if (size := data_size(arguments["summary"])) > settings.RUN_DATA_BYTES:
                issue = f"summary: Summary {too_large(size, settings.RUN_DATA_BYTES)}"
                return item_response(request, identity, item, status=400, issues=[issue], problems=problems,
                                      kept=kept, **{**again, "seen": None})
        if requirements["next"]:
            if post.get("next"):
                arguments["next"] = post["next"]
            if post.get("reason", "").strip():
                arguments["reason"] = post["reason"].strip()
    elif post.get("note", "").strip():
        arguments["note"] = post["note"].strip()
    try:
        view = call_tool(identity, "decide", arguments)
    except Stale:
        return item_response(request, identity, item, status=409, kept=kept, notice="stale", problems=problems,
                              **again)
    except Conflict as error:
        notice = (error.issues or ["conflict"])[0]
        return item_response(request, identity, item, status=409, notice=notice)
    except (NotAccepted, Invalid) as error:
        return item_response(request, identity, item, status=error.status, issues=error.issues or [error.message],
                              problems=problems, kept=kept, **{**again, "seen": None})
    except (Forbidden, NotFound) as error:
        return refused(request, error)
    except ToolError as error:  # `retry`: the database or a check's evaluator is briefly unavailable
        return item_response(request, identity, item, status=error.status, issues=[error.message],
                              problems=problems, kept=kept, **{**again, "seen": None})
    _tell_decided(request, identity, item, decision, view)
    return redirect("inbox")


def _change_complete_form(request, identity: Identity, item: WorkItem, rid: str):
    """Show the complete form again with a line or field added or removed; nothing decided.

    Without the page's script this is a new page, and no browser keeps a file chosen across one: the files
    chosen are uploaded and offered again ticked, and the page says so (or that one must be chosen again).
    """
    _evidence_files, upload_issues, kept = _evidence(request, identity, rid)
    chosen = [upload.name for upload in request.FILES.getlist("files")]
    failed = [name for name in chosen if any(issue.startswith(f"evidence: {name}") for issue in upload_issues)]
    redrawn = {"kept": [name for name in chosen if name not in failed], "again": failed}
    return item_response(request, identity, item, status=400 if upload_issues else 200, posted=request.POST,
                          form_id="complete", issues=upload_issues, kept=kept, redrawn=redrawn)


DONE_WORDS = {"completed": "Completed", "approved": "Approved", "rejected": "Rejected", "returned": "Returned",
              "failed": "Failed the run at"}


def _tell_decided(request, identity: Identity, item: WorkItem, decision: str, view: dict) -> None:
    run = view["run"]
    run_url = reverse("run", args=[run["id"]])
    messages.success(request, format_html(
        '{} “{}” in {} <a href="{}">{}</a>.', DONE_WORDS[decision], step_title(item.step.step_id),
        run["process"], run_url, run["id"],
    ))
    opened = {item.public_id: item for item in WorkItem.objects.filter(
        pk__in=[public_pk(work["id"], "w") for work in view["workItems"]], organization=identity.organization)}
    for work in view["workItems"]:
        if work["id"] in opened and may_decide(identity, opened[work["id"]]):
            messages.info(request, format_html(
                'Next for you: <a href="{}">{}</a>.', reverse("item", args=[work["id"]]), step_title(work["stepId"])
            ))


# --- a run --------------------------------------------------------------------------------------


def _taken(definition, rows: list[RunStep]) -> set[tuple[str, str]]:
    """Return the map edges the run has gone along, from where each step's latest completion went."""
    taken = set()
    for row in rows:
        step = definition[row.step_id]
        if row.state in (StepState.DONE, StepState.FAILED) and row.went_to:
            target = f"{JOIN}:{step.branch}" if row.went_to == JOIN else row.went_to
            taken.add((row.step_id, target))
        if step.kind == "parallel" and row.state in (StepState.WAITING, StepState.DONE):
            taken.update((row.step_id, entry) for entry in step.entries)
            if row.state == StepState.DONE and step.next:
                taken.add((f"{JOIN}:{step.id}", step.next))
    return taken


def run_response(request, identity: Identity, run_id: str, *, status: int = 200, cancel_issues=None,
                  cancel_reason: str = "", extra=None):
    try:
        view = call_tool(identity, "get_run", {"runId": run_id})
    except ToolError as error:
        return refused(request, error)
    run = Run.objects.select_related("version").get(pk=_pk(run_id, "r"))  # get_run found it in the organization
    if run.organization_id != identity.organization.pk:
        raise Http404("No such run in this organization.")
    definition = definition_for(run.version)
    rows = list(RunStep.objects.filter(run=run))
    items = list(WorkItem.objects.filter(run=run).select_related("step").order_by("created_at", "pk"))
    claims = [row for row in rows if row.state == StepState.CLAIMED]
    takes, handovers = taking.takes_of(items), taking.handovers_of(items)
    comments = conversation.comments_on(run)
    names = display.names_in_view(
        identity.organization, view,
        extra={row.claimed_by or "" for row in claims} | {i.decided_by or "" for i in items}
        | taking.refs(takes, handovers) | {c.author.ref for c in comments},
    )
    open_ids = {w["id"] for w in view["workItems"]}
    decidable = {i.public_id for i in items if i.public_id in open_ids and may_decide(identity, i)}
    svg = process_map(
        definition,
        states={s["id"]: s for s in view["steps"]},
        taken=_taken(definition, rows),
        title=f"Process map of {run.process_name} run {run.public_id}",
    )
    context = {
        "identity": identity,
        "view": view,
        "run": view["run"],
        "map": svg,
        "timeline": display.timeline(definition, view, [i for i in items if i.escalation or i.decision], takes,
                                     handovers=handovers, comments=comments),
        "records": display.step_records(definition, view["data"]),
        "files": display.file_names(identity.organization, display.file_refs(view["data"])),
        "claims": claims,
        "names": names,
        "decidable": decidable,
        "definition": definition,
        "cancel": {"request_id": new_request_id(), "issues": cancel_issues or [], "reason": cancel_reason},
        "nav": "runs",
        **(extra or {}),
    }
    return render(request, "work/run.html", context, status=status)


@require_http_methods(["GET", "HEAD"])
@person_page
def run_page(request, identity: Identity, run_id: str):
    """Show a run: its map, timeline, open work and claims; operators may cancel it."""
    _pk(run_id, "r")
    return run_response(request, identity, run_id)


@require_POST
@person_page
def cancel_run(request, identity: Identity, run_id: str):
    """Cancel a run through the `cancel` tool (operators only, spec §3.5)."""
    _pk(run_id, "r")
    reason = request.POST.get("reason", "").strip()
    arguments = {"runId": run_id, "reason": reason, "requestId": request_id(request.POST.get("requestId"))}
    try:
        call_tool(identity, "cancel", arguments)
    except (Invalid, Conflict) as error:
        return run_response(request, identity, run_id, status=error.status,
                             cancel_issues=error.issues or [error.message], cancel_reason=reason)
    except ToolError as error:
        return refused(request, error)
    messages.success(request, f"Run {run_id} is cancelled.")
    return redirect("run", run_id=run_id)


@require_http_methods(["GET", "HEAD"])
@person_page
def runs_page(request, identity: Identity):
    """List the organization's runs, newest first or as sorted; or those a search finds; or, for operators,
    the runs needing attention. Each run names the steps it is at and who is on them."""
    query = request.GET.get("q", "").strip()
    listed = request.GET.get("attention", "")
    sort = runlist.sort_key(request.GET.get("sort"))
    process, state = request.GET.get("process") or None, request.GET.get("state") or None
    page, found, heading = None, None, None
    timers.catch_up(organization=identity.organization)  # what time has made overdue shows at once
    if listed:
        if not identity.is_operator:
            return refused(request, Forbidden("Only the operators of your organization see the runs needing attention."))
        items, heading, problems = _needing_attention(identity, request.GET, listed)
        if problems:
            return render(request, "work/refused.html", {"error": Invalid("This list cannot be shown.", problems)},
                          status=400)
        if query:
            found = search.search(identity, query)
            matched = {run.public_id: found.why.get(run.pk, []) for run in found.runs}
            items = [{**row, "matched": matched[row["id"]]} for row in items if row["id"] in matched]
        if state:
            items = [row for row in items if row["state"] == state]
    elif query:
        found = search.search(identity, query)
        items = [search.run_row(run, found) for run in found.runs
                 if (not process or run.process_name == process) and (not state or run.state == state)]
    else:
        page = runlist.page_of(runlist.runs_sorted(identity, sort=sort, process=process, state=state),
                               optional_integer(request.GET, "page", minimum=1, maximum=runlist.MAX_PAGE),
                               PAGE_SIZE)
        items = [runlist.run_row(run) for run in page.rows]
    items = runlist.with_work(identity.organization, items)
    if page is None and (query or "sort" in request.GET):
        items = runlist.sorted_rows(items, sort)
    context = {"identity": identity, "items": items, "page": page, "q": query, "found": found,
               "process": process or "", "state": state or "", "sort": sort, "sorts": runlist.SORTS,
               "processes": search.process_names(identity), "states": ["active", "waiting", "ended", "cancelled"],
               "attention": listed, "heading": heading, "lists": attention.LISTS[:-1],
               "period": request.GET.get("period", figures.DEFAULT_PERIOD), "agent": request.GET.get("agent", ""),
               "kept": _kept_query(request.GET, sort), "nav": "runs"}
    return render(request, "work/runs.html", context)


# What the runs list is asked for, kept by its page links (the page number aside).
RUNS_PARAMETERS = ("q", "sort", "process", "state", "attention", "period", "agent")


def _kept_query(params, sort: str) -> str:
    """The runs list's parameters as asked, the order as shown, for a link to another page of the same list."""
    kept = [(key, sort if key == "sort" else params[key]) for key in RUNS_PARAMETERS if params.get(key)]
    return urlencode(kept)


def _needing_attention(identity: Identity, params, listed: str) -> tuple[list[dict], str, list[str]]:
    """One list of runs needing attention, what it is called, and every problem with how it was asked for."""
    problems = []
    if listed not in dict(attention.LISTS):
        problems.append(f"attention: '{listed[:40]}' is not one of {', '.join(key for key, _name in attention.LISTS)}")
    period = params.get("period") or figures.DEFAULT_PERIOD
    if problem := figures.period_problem(period):
        problems.append(problem)
    agent = params.get("agent", "")
    if listed == "agent" and not re.fullmatch(r"a_[0-9]{1,18}", agent):
        problems.append("agent: name the agent by its ref, such as a_12")
    if problems:
        return [], "", problems
    organization, process = identity.organization, params.get("process") or None
    since, words = figures.period_start(period), figures.period_words(period)
    if listed in ("failed", "cancelled"):
        cancelled = listed == "cancelled"
        return (attention.failed_runs(organization, since=since, process=process, cancelled=cancelled),
                f"{'Cancelled' if cancelled else 'Failed'} in {words}", [])
    if listed == "escalated":
        return attention.escalated_runs(organization, process=process), "Escalated to operators now", []
    if listed == "overdue":
        timers.catch_up(organization=organization)  # a step just past its due shows at once
        return attention.overdue_runs(organization, process=process), "Past their due now", []
    if listed == "unclaimed":
        hours = settings.UNCLAIMED_AFTER_HOURS
        return (attention.unclaimed_runs(organization, process=process),
                f"Agent steps nobody has claimed for over {hours} hour{'s' if hours != 1 else ''}", [])
    name = display.names_for(organization, {agent}).get(agent, agent)
    return attention.agent_runs(organization, agent, since=since), f"Trouble for {name} in {words}", []


@require_http_methods(["GET", "HEAD"])
@person_page
def search_page(request, identity: Identity):
    """One box for everything: my work items, the organization's runs and its processes."""
    found = search.search(identity, request.GET.get("q", ""))
    context = {"identity": identity, "found": found, "q": found.query, "rows": _rows(found.items),
               "runs": runlist.with_work(identity.organization, [search.run_row(run, found) for run in found.runs])}
    return render(request, "work/search.html", context, status=400 if found.problem else 200)
