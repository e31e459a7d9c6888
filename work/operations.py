"""The operators' pages: every process at a glance, and one process's live map.

Operators only (others get a plain 403), and only their own organization's numbers: every query names
the organization, and a process is looked up within it.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Max
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from accounts.identity import Identity
from base.params import read_integer
from base.storable import printable
from processes.definition import Definition, definition_for
from processes.kinds import PERSON_KINDS, WAIT_KINDS, StepKind
from processes.maps import process_map
from processes.models import ProcessVersion
from processes.wording import step_title
from runs import figures, store, timers
from runs.errors import Invalid

from . import attention
from .views.common import operator_page


def _period(params, issues: list[str]) -> str:
    key = params.get("period") or figures.DEFAULT_PERIOD
    if problem := figures.period_problem(key):
        issues.append(problem)
    return key


def _problems(request, issues: list[str]):
    return render(request, "work/refused.html", {"error": Invalid("This page cannot be shown as asked.", issues)},
                  status=400)


# --- the overview -------------------------------------------------------------------------------


@require_http_methods(["GET", "HEAD"])
@operator_page
def overview(request, identity: Identity):
    """Each process with its runs at work, past due and failed, and the agents in trouble, in a period."""
    issues: list[str] = []
    period = _period(request.GET, issues)
    if issues:
        return _problems(request, issues)
    organization = identity.organization
    timers.catch_up(organization=organization)  # what time has made overdue shows at once
    since = figures.period_start(period)
    counts = attention.counts_by_process(organization, since=since)
    latest = (ProcessVersion.objects.filter(process__organization=organization)
              .values_list("process__name").annotate(number=Max("number")).order_by("process__name"))
    processes = [{"name": name, "title": step_title(name), "version": number, **counts.get(name, _none())}
                 for name, number in latest]
    totals = {key: sum(p[key] for p in processes) for key in attention.FIGURES}
    context = {
        "identity": identity, "processes": processes, "totals": totals, "period": period,
        "periods": figures.PERIODS, "period_words": figures.period_words(period),
        "agents": attention.agents_in_trouble(organization, since=since),
        "unclaimed_hours": settings.UNCLAIMED_AFTER_HOURS, "nav": "operations",
    }
    return render(request, "work/operations.html", context)


def _none() -> dict[str, int]:
    return dict.fromkeys(attention.FIGURES, 0)


# --- a live map ---------------------------------------------------------------------------------


def span(seconds: float) -> str:
    """A time in a step as a person says it, to a minute or so: `45s`, `12m`, `2h 5m`, `14h`, `3d 4h`."""
    seconds = max(seconds, 0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 10:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if hours < 24:
        return f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours and days < 10 else f"{days}d"


def _waiting_words(kind: str) -> str:
    if kind in PERSON_KINDS:
        return "with a person"
    if kind == StepKind.AGENT:
        return "escalated"
    if kind in WAIT_KINDS:
        return "waiting"
    return "in branches"


def now_words(kind: str, step: figures.StepFigures) -> list[str]:
    """What is at a step now: `3 ready`, `2 claimed`, `1 with a person`…"""
    parts = [f"{step.now['ready']} ready" if step.now["ready"] else "",
             f"{step.now['claimed']} claimed" if step.now["claimed"] else "",
             f"{step.now['waiting']} {_waiting_words(kind)}" if step.now["waiting"] else ""]
    return [part for part in parts if part]


def ended_words(step: figures.StepFigures, *, finish: bool) -> str:
    if finish:
        total = sum(step.ended.values())
        return f"{total} ended here" if total else ""
    return " · ".join(f"{count} {outcome}" for outcome, count in sorted(step.ended.items()))


def step_lines(kind: str, step: figures.StepFigures) -> list[str]:
    """The lines of figures under one step on the live map."""
    finish = kind == StepKind.FINISH
    lines = []
    if not finish:
        lines.append(" · ".join(now_words(kind, step)) or "none here now")
        if step.now["overdue"]:
            lines.append(f"{step.now['overdue']} overdue")
    if step.timed:
        times = f"{'took' if finish else 'median'} {span(step.median)} · p90 {span(step.p90)}"
        # A box holds about 26 characters a line: longer times take a line each.
        lines += [times] if len(times) <= 26 else times.split(" · ")
    if ended := ended_words(step, finish=finish):
        lines.append(ended)
    return lines


def _versions(identity: Identity, name: str) -> list[tuple[int, int]]:
    versions = list(ProcessVersion.objects.filter(process__organization=identity.organization, process__name=name)
                    .order_by("-number").values_list("pk", "number"))
    if not versions:
        raise Http404("No such published process in this organization.")
    return versions


def _chosen(params, versions, definition_of, issues: list[str]):
    """The version and step asked for (the newest version, no step, when not asked), noting any problem."""
    numbers = {number: pk for pk, number in versions}
    wanted = params.get("version", "")
    asked = read_integer(wanted, minimum=1)
    if wanted and asked not in numbers:
        issues.append(f"version: '{printable(wanted, 20)}' is not a published version; one of "
                      + ", ".join(str(number) for number in sorted(numbers)))
    number = asked if asked in numbers else versions[0][1]
    version = store.published_version(numbers[number])
    definition = definition_of(version)
    step_id = params.get("step", "")
    if step_id and step_id not in definition.by_id:
        issues.append(f"step: '{step_id[:64]}' is no step of version {number}")
    return version, definition, step_id if step_id in definition.by_id else ""


def _drawing(definition: Definition, found: figures.MapFigures, *, base: str, name: str, words: str) -> str:
    states, lines, links = {}, {}, {}
    for step in definition.steps:
        figures_here = found.steps.get(step.id, figures.StepFigures())
        lines[step.id] = step_lines(step.kind, figures_here)
        if figures_here.at_work:
            states[step.id] = {"state": "waiting", "overdue": bool(figures_here.now["overdue"])}
        if step.kind != StepKind.FINISH:
            links[step.id] = (f"{base}&step={step.id}#at-step", "List the runs here now")
    passed = {edge: f"{count} {'sent back' if edge[2] == 'reject' else 'passed'}" for edge, count in found.edges.items()}
    return process_map(definition, states=states, figures=lines, passed=passed, links=links,
                       title=f"Live map of {name}: runs at each step now, and their passages in {words}")


def _at_step(organization_id: int, version_id: int, step_id: str) -> list:
    rows = figures.runs_at_step(organization_id, version_id, step_id) if step_id else []
    for row in rows:
        row.public_run = f"r_{row.run_id}"
    return rows


@require_http_methods(["GET", "HEAD"])
@operator_page
def live_map(request, identity: Identity, name: str):
    """A process version's map with the runs at each step now, and each route's passages and each step's times."""
    versions = _versions(identity, name)
    issues: list[str] = []
    period = _period(request.GET, issues)
    version, definition, step_id = _chosen(request.GET, versions, definition_for, issues)
    if issues:
        return _problems(request, issues)
    organization = identity.organization
    timers.catch_up(organization=organization)
    words = figures.period_words(period)
    found = figures.map_figures(organization.pk, version, definition, figures.period_start(period))
    base = "?" + urlencode({"version": version.number, "period": period})
    rows = [{"id": step.id, "title": step_title(step.id), "kind": step.kind,
             "figures": found.steps.get(step.id, figures.StepFigures())} for step in definition.steps]
    for row in rows:
        fig = row["figures"]
        row.update(now=" · ".join(now_words(row["kind"], fig)), overdue=fig.now["overdue"],
                   median=span(fig.median) if fig.timed else "", p90=span(fig.p90) if fig.timed else "",
                   ended=ended_words(fig, finish=row["kind"] == StepKind.FINISH), link=f"{base}&step={row['id']}#at-step")
    context = {
        "identity": identity, "name": name, "title": step_title(name), "version": version, "versions": versions,
        "period": period, "periods": figures.PERIODS, "words": words, "rows": rows,
        "map": _drawing(definition, found, base=base, name=name, words=words),
        "step": step_id, "step_title": step_title(step_id) if step_id else "",
        "at_step": _at_step(organization.pk, version.pk, step_id),
        "overview": reverse("operations"), "nav": "operations",
    }
    return render(request, "work/live_map.html", context)
