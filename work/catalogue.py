"""The process catalogue for people, and the form that starts a run; both call the tools."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.identity import Identity
from base.params import optional_integer
from processes.definition import definition_for
from processes.maps import process_map
from processes.models import ProcessVersion
from processes.wording import step_title
from runs.errors import Invalid, ToolError
from runs.tools import call_tool

from .forms import apply_change, controls_for, place_problems, read_values, summary
from .people import members_of, picker
from .views.common import new_request_id, person_page, refused, request_id


@require_http_methods(["GET", "HEAD"])
@person_page
def catalogue(request, identity: Identity):
    """List the organization's published processes through `list_processes`."""
    arguments = {"cursor": request.GET["cursor"]} if request.GET.get("cursor") else {}
    try:
        data = call_tool(identity, "list_processes", arguments)
    except Invalid as error:  # a cursor this server never gave out
        return refused(request, error)
    processes = [{**p, "title": step_title(p["name"])} for p in data["items"]]
    return render(request, "work/processes.html", {
        "identity": identity, "processes": processes, "next_cursor": data["nextCursor"], "nav": "processes",
    })


def _latest(identity: Identity, name: str) -> ProcessVersion:
    version = (
        ProcessVersion.objects.filter(process__organization=identity.organization, process__name=name)
        .order_by("-number")
        .first()
    )
    if version is None:
        raise Http404("No such published process in this organization.")
    return version


@require_http_methods(["GET", "HEAD", "POST"])
@person_page
def start(request, identity: Identity, name: str):
    """Show one process and start a run of it with typed inputs, live or test, through `start_run`."""
    version = _latest(identity, name)
    posted = request.POST if request.method == "POST" else None
    seen = optional_integer(posted, "version", minimum=1) if posted is not None else None
    if seen is not None and seen != version.number:
        # Fill the form of the version the person saw; an older one may take other inputs.
        version = ProcessVersion.objects.filter(process=version.process, number=seen).first() or version
    definition = definition_for(version)
    controls = controls_for(definition.inputs, "inputs", data=posted)
    issues: list[str] = []
    problems: dict = {}
    mode = "live"
    status = 200
    if posted is not None:
        mode = posted.get("mode") if posted.get("mode") in ("live", "test") else "live"
        if posted.get("op"):
            # "Add a line", "Remove" and the like: the same form again, changed, nothing sent.
            apply_change(controls, posted["op"])
        else:
            inputs, problems = read_values(controls, members_of(identity))
            arguments = {
                "process": name,
                "version": version.number,
                "inputs": inputs,
                "mode": mode,
                "requestId": request_id(posted.get("requestId")),
            }
            try:
                view = call_tool(identity, "start_run", arguments)
            except Invalid as error:
                issues, status = error.issues or [error.message], error.status
            except ToolError as error:
                return refused(request, error)
            else:
                label = "test run" if mode == "test" else "run"
                messages.success(request, f"Started {label} {view['run']['id']} of {name}.")
                return redirect("run", run_id=view["run"]["id"])
    placed = place_problems(controls, problems, issues, "inputs")
    frontmatter = version.frontmatter
    context = {
        "identity": identity,
        "version": version,
        "name": name,
        "title": step_title(name),
        "description": frontmatter["description"],
        "requires": (frontmatter.get("requires") or {}).get("systems", []),
        "body": version.body,
        "steps": [{"id": s.id, "title": step_title(s.id), "kind": s.kind, "person": s.person,
                   "text": s.instructions} for s in definition.steps],
        "map": process_map(definition, title=f"Process map of {name}"),
        "controls": controls,
        "issues": summary(controls, placed),
        "people": picker(identity, controls),
        "mode": mode,
        "request_id": new_request_id(),
        "nav": "processes",
    }
    return render(request, "work/start.html", context, status=status)
