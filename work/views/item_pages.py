"""A work item's page: taking and letting go, its decision forms, and deciding through the `decide` tool."""

import base64
import uuid

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST

from accounts.identity import Identity
from base.params import optional_integer
from processes.definition import definition_for
from processes.wording import step_title
from runs import notices, taking
from runs.assignments import may_decide
from runs.canonical import data_size
from runs.errors import Conflict, Forbidden, Invalid, NotAccepted, NotFound, Stale, ToolError
from runs.models import WorkItem, public_pk
from runs.tools import call_tool
from work import display
from work.forms import apply_change, controls_for, place_problems, read_values, summary, too_large
from work.people import members_of, picker
from work.views.common import FORM_OF, UPLOAD_ID, key_of, new_request_id, person_page, refused, request_id
from work.views.inbox_pages import assignee


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
        messages.success(
            request, f"You are on “{step_title(item.step.step_id)}”; your colleagues can see it."
        )
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
    item = (
        WorkItem.objects.select_related("run__version", "step", "assigned_group", "taken_by")
        .filter(pk=key_of(item_id, "w"))
        .first()
    )
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


def _decision_form(
    identity,
    current: dict,
    data: dict,
    *,
    posted=None,
    form_id=None,
    issues=None,
    problems=None,
    kept=None,
    earlier=None,
) -> dict:
    """Everything the decision forms of one open work item need, with a person's earlier input kept.

    A rework starts from the earlier attempt's output and links, so the person corrects rather than retypes.
    """
    if form_id not in {FORM_OF[d] for d in current["decide"]["decisions"]}:
        form_id = None  # a form this item does not show; its issues go to the top of the decision card
    posted_here = posted if form_id else None
    earlier = earlier or {}
    candidate = ((current.get("escalation") or {}).get("candidate") or {}).get("output") or earlier.get(
        "output"
    )
    controls = []
    if current["kind"] != "approve":
        controls = controls_for(
            current.get("output"), "output", data=posted if form_id == "complete" else None, initial=candidate
        )
        if form_id == "complete" and posted.get("op"):
            apply_change(controls, posted["op"])
    placed = place_problems(
        controls, problems, issues, "output", ("evidence", "next", "reason", "note", "summary", "decision")
    )
    forms = {
        key: {"request_id": new_request_id(), "values": {}, "issues": {}}
        for key in ("complete", "approve", "reject", "return", "fail")
    }
    if form_id in forms:
        forms[form_id]["values"] = {
            key: posted_here.get(key, "") for key in ("note", "summary", "reason", "next", "links")
        }
        forms[form_id]["issues"] = placed
    elif earlier:
        links = [e["ref"] for e in earlier.get("evidence") or [] if e.get("kind") == "link"]
        forms["complete"]["values"] = {
            "links": "\n".join(links),
            "next": earlier.get("next") or "",
            "reason": earlier.get("reason") or "",
            "summary": earlier.get("summary") or "",
        }
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


def item_response(
    request,
    identity: Identity,
    item: WorkItem,
    *,
    status: int = 200,
    posted=None,
    form_id=None,
    issues=None,
    problems=None,
    kept=None,
    seen=None,
    notice=None,
    redrawn=None,
    extra=None,
):
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
    names = display.names_in_view(
        identity.organization,
        view,
        extra={item.decided_by or "", item.taken_by.ref if item.taken_by_id else ""},
    )
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
        "assignee": assignee(item),
        "holder": item.taken_by if item.taken_by_id else None,
        "may_take": allowed and item.assigned_user_id is None,
        "reject_hint": (
            f"Required. The run goes back to {step_title(step.on_reject)} and whoever does it reads your note."
            if step.on_reject
            else "Required. This step has nowhere to go back to, so rejecting ends the run."
        ),
        "nav": "inbox",
    }
    if allowed:
        earlier = (own.current or {}) if own else {}
        offered = [e["ref"] for e in earlier.get("evidence") or [] if e.get("kind") == "file"]
        kept_names.update(display.file_names(identity.organization, set(offered) - set(kept_names)))
        files = [{"id": ref, "checked": True, **kept_names.get(ref, {})} for ref in kept or []]
        if posted is None:
            files += [
                {"id": ref, "checked": False, "earlier": True, **kept_names.get(ref, {})} for ref in offered
            ]
        form = _decision_form(
            identity,
            current,
            data,
            posted=posted,
            form_id=form_id,
            issues=issues,
            problems=problems,
            kept=files,
            earlier=earlier,
        )
        form["redrawn_files"] = redrawn if redrawn and (redrawn["kept"] or redrawn["again"]) else None
        context["form"] = form
    context.update(extra or {})
    return render(request, "work/item.html", context, status=status)


def _evidence(request, identity: Identity, rid: str) -> tuple[list[dict], list[str], list[str]]:
    """Upload the files of a form through the `upload` tool; return evidence items, issues and kept ids."""
    kept = [ref for ref in request.POST.getlist("kept_file") if UPLOAD_ID.match(ref)]
    issues: list[str] = []
    for index, upload in enumerate(request.FILES.getlist("files")):
        if upload.size > settings.MAX_UPLOAD_BYTES:
            issues.append(
                f"evidence: {upload.name} is larger than the {settings.MAX_UPLOAD_BYTES} bytes allowed"
            )
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
        return item_response(
            request, identity, item, status=400, issues=["decision: press one of the buttons"]
        )
    item.refresh_from_db(fields=["taken_by", "taken_at"])
    if item.taken_by_id not in (None, identity.user.pk) and post.get("confirm_taken") != str(
        item.taken_by_id
    ):
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
        output, problems = read_values(
            controls_for(requirements["output"], "output", data=post), members_of(identity)
        )
        arguments["output"] = output
        evidence, upload_issues, kept = _evidence(request, identity, rid)
        if upload_issues:
            return item_response(
                request,
                identity,
                item,
                status=400,
                issues=upload_issues,
                problems=problems,
                kept=kept,
                **{**again, "seen": None},
            )
        if evidence:
            arguments["evidence"] = evidence
        if post.get("summary", "").strip():
            arguments["summary"] = post["summary"].strip()
            if (size := data_size(arguments["summary"])) > settings.RUN_DATA_BYTES:
                issue = f"summary: Summary {too_large(size, settings.RUN_DATA_BYTES)}"
                return item_response(
                    request,
                    identity,
                    item,
                    status=400,
                    issues=[issue],
                    problems=problems,
                    kept=kept,
                    **{**again, "seen": None},
                )
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
        return item_response(
            request, identity, item, status=409, kept=kept, notice="stale", problems=problems, **again
        )
    except Conflict as error:
        notice = (error.issues or ["conflict"])[0]
        return item_response(request, identity, item, status=409, notice=notice)
    except (NotAccepted, Invalid) as error:
        return item_response(
            request,
            identity,
            item,
            status=error.status,
            issues=error.issues or [error.message],
            problems=problems,
            kept=kept,
            **{**again, "seen": None},
        )
    except (Forbidden, NotFound) as error:
        return refused(request, error)
    except ToolError as error:  # `retry`: the database or a check's evaluator is briefly unavailable
        return item_response(
            request,
            identity,
            item,
            status=error.status,
            issues=[error.message],
            problems=problems,
            kept=kept,
            **{**again, "seen": None},
        )
    _tell_decided(request, identity, item, decision, view)
    return redirect("inbox")


def _change_complete_form(request, identity: Identity, item: WorkItem, rid: str):
    """Show the complete form again with a line or field added or removed; nothing decided.

    Without the page's script this is a new page, and no browser keeps a file chosen across one: the files
    chosen are uploaded and offered again ticked, and the page says so (or that one must be chosen again).
    """
    _evidence_files, upload_issues, kept = _evidence(request, identity, rid)
    chosen = [upload.name for upload in request.FILES.getlist("files")]
    failed = [
        name for name in chosen if any(issue.startswith(f"evidence: {name}") for issue in upload_issues)
    ]
    redrawn = {"kept": [name for name in chosen if name not in failed], "again": failed}
    return item_response(
        request,
        identity,
        item,
        status=400 if upload_issues else 200,
        posted=request.POST,
        form_id="complete",
        issues=upload_issues,
        kept=kept,
        redrawn=redrawn,
    )


DONE_WORDS = {
    "completed": "Completed",
    "approved": "Approved",
    "rejected": "Rejected",
    "returned": "Returned",
    "failed": "Failed the run at",
}


def _tell_decided(request, identity: Identity, item: WorkItem, decision: str, view: dict) -> None:
    run = view["run"]
    run_url = reverse("run", args=[run["id"]])
    messages.success(
        request,
        format_html(
            '{} “{}” in {} <a href="{}">{}</a>.',
            DONE_WORDS[decision],
            step_title(item.step.step_id),
            run["process"],
            run_url,
            run["id"],
        ),
    )
    opened = {
        item.public_id: item
        for item in WorkItem.objects.filter(
            pk__in=[public_pk(work["id"], "w") for work in view["workItems"]],
            organization=identity.organization,
        )
    }
    for work in view["workItems"]:
        if work["id"] in opened and may_decide(identity, opened[work["id"]]):
            messages.info(
                request,
                format_html(
                    'Next for you: <a href="{}">{}</a>.',
                    reverse("item", args=[work["id"]]),
                    step_title(work["stepId"]),
                ),
            )
