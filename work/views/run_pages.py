"""A run's page and its cancelling, the runs list (sorted, searched, or the runs needing attention) and the search page."""

import re

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from accounts.identity import Identity
from base.params import optional_integer
from processes.definition import JOIN, definition_for
from processes.maps import process_map
from runs import conversation, figures, taking, timers
from runs.assignments import may_decide
from runs.errors import Conflict, Forbidden, Invalid, ToolError
from runs.models import Run, RunStep, StepState, WorkItem
from runs.tools import call_tool
from work import attention, display, runlist, search
from work.views.common import PAGE_SIZE, key_of, new_request_id, person_page, refused, request_id
from work.views.inbox_pages import inbox_rows


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


def run_response(
    request,
    identity: Identity,
    run_id: str,
    *,
    status: int = 200,
    cancel_issues=None,
    cancel_reason: str = "",
    extra=None,
):
    try:
        view = call_tool(identity, "get_run", {"runId": run_id})
    except ToolError as error:
        return refused(request, error)
    run = Run.objects.select_related("version").get(
        pk=key_of(run_id, "r")
    )  # get_run found it in the organization
    if run.organization_id != identity.organization.pk:
        raise Http404("No such run in this organization.")
    definition = definition_for(run.version)
    rows = list(RunStep.objects.filter(run=run))
    items = list(WorkItem.objects.filter(run=run).select_related("step").order_by("created_at", "pk"))
    claims = [row for row in rows if row.state == StepState.CLAIMED]
    takes, handovers = taking.takes_of(items), taking.handovers_of(items)
    comments = conversation.comments_on(run)
    names = display.names_in_view(
        identity.organization,
        view,
        extra={row.claimed_by or "" for row in claims}
        | {i.decided_by or "" for i in items}
        | taking.refs(takes, handovers)
        | {c.author.ref for c in comments},
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
        "timeline": display.timeline(
            definition,
            view,
            [i for i in items if i.escalation or i.decision],
            takes,
            handovers=handovers,
            comments=comments,
        ),
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
    key_of(run_id, "r")
    return run_response(request, identity, run_id)


@require_POST
@person_page
def cancel_run(request, identity: Identity, run_id: str):
    """Cancel a run through the `cancel` tool (operators only, spec §3.5)."""
    key_of(run_id, "r")
    reason = request.POST.get("reason", "").strip()
    arguments = {"runId": run_id, "reason": reason, "requestId": request_id(request.POST.get("requestId"))}
    try:
        call_tool(identity, "cancel", arguments)
    except (Invalid, Conflict) as error:
        return run_response(
            request,
            identity,
            run_id,
            status=error.status,
            cancel_issues=error.issues or [error.message],
            cancel_reason=reason,
        )
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
            return refused(
                request, Forbidden("Only the operators of your organization see the runs needing attention.")
            )
        items, heading, problems = _needing_attention(identity, request.GET, listed)
        if problems:
            return render(
                request,
                "work/refused.html",
                {"error": Invalid("This list cannot be shown.", problems)},
                status=400,
            )
        if query:
            found = search.search(identity, query)
            matched = {run.public_id: found.why.get(run.pk, []) for run in found.runs}
            items = [{**row, "matched": matched[row["id"]]} for row in items if row["id"] in matched]
        if state:
            items = [row for row in items if row["state"] == state]
    elif query:
        found = search.search(identity, query)
        items = [
            search.run_row(run, found)
            for run in found.runs
            if (not process or run.process_name == process) and (not state or run.state == state)
        ]
    else:
        page = runlist.page_of(
            runlist.runs_sorted(identity, sort=sort, process=process, state=state),
            optional_integer(request.GET, "page", minimum=1, maximum=runlist.MAX_PAGE),
            PAGE_SIZE,
        )
        items = [runlist.run_row(run) for run in page.rows]
    items = runlist.with_work(identity.organization, items)
    if page is None and (query or "sort" in request.GET):
        items = runlist.sorted_rows(items, sort)
    context = {
        "identity": identity,
        "items": items,
        "page": page,
        "q": query,
        "found": found,
        "process": process or "",
        "state": state or "",
        "sort": sort,
        "sorts": runlist.SORTS,
        "processes": search.process_names(identity),
        "states": ["active", "waiting", "ended", "cancelled"],
        "attention": listed,
        "heading": heading,
        "lists": attention.LISTS[:-1],
        "period": request.GET.get("period", figures.DEFAULT_PERIOD),
        "agent": request.GET.get("agent", ""),
        "kept": _kept_query(request.GET, sort),
        "nav": "runs",
    }
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
        problems.append(
            f"attention: '{listed[:40]}' is not one of {', '.join(key for key, _name in attention.LISTS)}"
        )
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
        return (
            attention.failed_runs(organization, since=since, process=process, cancelled=cancelled),
            f"{'Cancelled' if cancelled else 'Failed'} in {words}",
            [],
        )
    if listed == "escalated":
        return attention.escalated_runs(organization, process=process), "Escalated to operators now", []
    if listed == "overdue":
        timers.catch_up(organization=organization)  # a step just past its due shows at once
        return attention.overdue_runs(organization, process=process), "Past their due now", []
    if listed == "unclaimed":
        hours = settings.UNCLAIMED_AFTER_HOURS
        return (
            attention.unclaimed_runs(organization, process=process),
            f"Agent steps nobody has claimed for over {hours} hour{'s' if hours != 1 else ''}",
            [],
        )
    name = display.names_for(organization, {agent}).get(agent, agent)
    return attention.agent_runs(organization, agent, since=since), f"Trouble for {name} in {words}", []


@require_http_methods(["GET", "HEAD"])
@person_page
def search_page(request, identity: Identity):
    """One box for everything: my work items, the organization's runs and its processes."""
    found = search.search(identity, request.GET.get("q", ""))
    context = {
        "identity": identity,
        "found": found,
        "q": found.query,
        "rows": inbox_rows(found.items),
        "runs": runlist.with_work(identity.organization, [search.run_row(run, found) for run in found.runs]),
    }
    return render(request, "work/search.html", context, status=400 if found.problem else 200)
