"""Runs needing an operator's attention, each a filter of the runs list, and the agents in trouble.

Failed and cancelled runs and agents' refusals and ended leases come from the passages that tell of
trouble (the partial index passage_trouble); runs past their due from step_overdue_now; agent steps
nobody has claimed, and agent steps escalated to the operators, from step_ready_work. Each list reads a
bounded page of keys, then those runs by key. Test runs are in none of them (they leave no passages,
and the steps' lists name live runs only), as in none of the figures.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from processes.kinds import StepKind
from processes.wording import step_title
from runs.models import OVERDUE_NOW, How, Mode, Passage, Run, RunStep, StepState

from . import display

# The lists an operator can ask the runs page for: (key, what the filter is called).
LISTS = (
    ("failed", "Failed"),
    ("cancelled", "Cancelled"),
    ("escalated", "Escalated to operators"),
    ("overdue", "Past their due"),
    ("unclaimed", "Nobody on it"),
    ("agent", "An agent in trouble"),
)
AGENT_TROUBLE = (How.REFUSED, How.EXPIRED)
OUTCOME_WORDS = {"failed": "Failed", "rejected": "Rejected", "cancelled": "Cancelled"}
CANCELLED = "cancelled"


def unclaimed_since(now: dt.datetime | None = None) -> dt.datetime:
    """Agent steps ready since before this moment have waited too long for an agent (UNCLAIMED_AFTER_HOURS)."""
    return (now or timezone.now()) - dt.timedelta(hours=settings.UNCLAIMED_AFTER_HOURS)


def _rows(organization, keyed: list[tuple[int, dict]]) -> list[dict]:
    """Runs by key, in the order given, in the shape of the runs list, each with what calls for attention."""
    wanted = dict.fromkeys(pk for pk, _why in keyed)
    runs = {run.pk: run for run in Run.objects.filter(pk__in=list(wanted), organization=organization)
            .select_related("version")}
    rows, seen = [], set()
    for pk, why in keyed:
        run = runs.get(pk)
        if run is None or pk in seen:
            continue
        seen.add(pk)
        rows.append({"id": run.public_id, "process": run.process_name, "version": run.version.number,
                     "state": run.state, "outcome": run.outcome, "inputs": (run.data or {}).get("inputs", {}),
                     "startedAt": run.started_at, "updatedAt": run.updated_at, "mode": run.mode,
                     "why": {**why, "note": why.get("note", _note(run))}})
    return rows


def _note(run: Run) -> str | None:
    return (run.ended or {}).get("note") if run.is_over else None


def _failures(organization, *, since: dt.datetime, cancelled: bool):
    """The passages of runs that failed (or were rejected with nowhere back), or of those cancelled."""
    found = Passage.objects.filter(organization=organization, how=How.FAILED, at__gte=since)
    return found.filter(outcome=CANCELLED) if cancelled else found.exclude(outcome=CANCELLED)


def failed_runs(organization, *, since: dt.datetime, process: str | None = None, limit: int = 50,
                cancelled: bool = False) -> list[dict]:
    """Runs that failed or were rejected with nowhere back since `since` (or, `cancelled`, those cancelled),
    latest first."""
    found = _failures(organization, since=since, cancelled=cancelled)
    if process:
        found = found.filter(process_name=process)
    keyed = [
        (run_id, {"title": f"{OUTCOME_WORDS.get(outcome, outcome)}" + (f" at {step_title(step_id)}" if step_id else ""),
                  "at": at})
        for run_id, step_id, outcome, at in found.order_by("-at").values_list("run_id", "step_id", "outcome", "at")[:limit]
    ]
    return _rows(organization, keyed)


def overdue_runs(organization, *, process: str | None = None, limit: int = 50) -> list[dict]:
    """Runs with a step past its due now, the longest past it first."""
    late = RunStep.objects.filter(OVERDUE_NOW, organization=organization, mode=Mode.LIVE)
    if process:
        late = late.filter(process_name=process)
    keyed = [(run_id, {"title": f"{step_title(step_id)} was due", "at": due_at, "note": None})
             for run_id, step_id, due_at in late.order_by("due_at", "pk").values_list("run_id", "step_id", "due_at")[:limit]]
    return _rows(organization, keyed)


def _unclaimed(organization, process: str | None = None):
    ready = RunStep.objects.filter(organization=organization, kind=StepKind.AGENT, state=StepState.READY,
                                   ready_since__lt=unclaimed_since(), mode=Mode.LIVE)
    return ready.filter(process_name=process) if process else ready


def _escalated(organization, process: str | None = None):
    """Agent steps of live runs escalated to the operators: an agent step waits only for them."""
    waiting = RunStep.objects.filter(organization=organization, kind=StepKind.AGENT, state=StepState.WAITING,
                                     mode=Mode.LIVE)
    return waiting.filter(process_name=process) if process else waiting


def _moment(value) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def escalated_runs(organization, *, process: str | None = None, limit: int = 50) -> list[dict]:
    """Runs with an agent step escalated to the operators, waiting longest first, each with the agent's note."""
    found = _escalated(organization, process).order_by("ready_since", "pk")
    keyed = []
    for run_id, step_id, escalation, since in found.values_list("run_id", "step_id", "escalation", "ready_since")[:limit]:
        escalation = escalation or {}
        keyed.append((run_id, {"title": f"{step_title(step_id)} escalated to operators",
                               "at": _moment(escalation.get("at")) or since, "note": escalation.get("note")}))
    return _rows(organization, keyed)


def unclaimed_runs(organization, *, process: str | None = None, limit: int = 50) -> list[dict]:
    """Runs whose agent step has been ready, with no agent on it, for longer than UNCLAIMED_AFTER_HOURS."""
    found = _unclaimed(organization, process).order_by("ready_since", "pk")
    keyed = [(run_id, {"title": f"{step_title(step_id)} ready for an agent", "at": since, "note": None})
             for run_id, step_id, since in found.values_list("run_id", "step_id", "ready_since")[:limit]]
    return _rows(organization, keyed)


def agent_runs(organization, ref: str, *, since: dt.datetime, limit: int = 50) -> list[dict]:
    """Runs where the agent's submissions were refused or its leases ended since `since`, latest first."""
    found = (Passage.objects.filter(organization=organization, how__in=AGENT_TROUBLE, at__gte=since, by=ref)
             .order_by("-at").values_list("run_id", "step_id", "how", "at")[: limit * 4])
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    latest: dict[int, tuple[str, dt.datetime]] = {}
    for run_id, step_id, how, at in found:
        counts[run_id][how] += 1
        latest.setdefault(run_id, (step_id, at))
    keyed = []
    for run_id, (step_id, at) in list(latest.items())[:limit]:
        parts = [_times(counts[run_id][How.REFUSED], "submission refused", "submissions refused"),
                 _times(counts[run_id][How.EXPIRED], "lease ended", "leases ended")]
        title = ", ".join(part for part in parts if part) + f" at {step_title(step_id)}"
        keyed.append((run_id, {"title": title, "at": at, "note": None}))
    return _rows(organization, keyed)


def _times(count: int, one: str, many: str) -> str:
    return "" if not count else f"1 {one}" if count == 1 else f"{count} {many}"


def agents_in_trouble(organization, *, since: dt.datetime, limit: int = 20) -> list[dict]:
    """Agents with submissions refused or leases ended since `since`, most first, with their names."""
    counted = (Passage.objects.filter(organization=organization, how__in=AGENT_TROUBLE, at__gte=since)
               .values_list("by", "how").annotate(n=Count("*")).order_by())
    by_agent: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(AGENT_TROUBLE, 0))
    for ref, how, count in counted:
        by_agent[ref][how] = count
    ranked = sorted(by_agent.items(), key=lambda entry: (-sum(entry[1].values()), entry[0]))[:limit]
    names = display.names_for(organization, {ref for ref, _counts in ranked})
    return [{"ref": ref, "name": names.get(ref, ref), "refused": counts[How.REFUSED], "expired": counts[How.EXPIRED]}
            for ref, counts in ranked]


def counts_by_process(organization, *, since: dt.datetime) -> dict[str, dict[str, int]]:
    """For each process: live runs at work now, steps past their due now, agent steps nobody claimed, agent
    steps escalated to the operators, and runs failed and runs cancelled since `since`."""
    figures: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIGURES, 0))
    sources = {
        "active": Run.objects.filter(organization=organization, state__in=("active", "waiting"), mode=Mode.LIVE),
        "overdue": RunStep.objects.filter(OVERDUE_NOW, organization=organization, mode=Mode.LIVE),
        "unclaimed": _unclaimed(organization),
        "escalated": _escalated(organization),
        "failed": _failures(organization, since=since, cancelled=False),
        "cancelled": _failures(organization, since=since, cancelled=True),
    }
    for key, rows in sources.items():
        for name, count in rows.values_list("process_name").annotate(n=Count("*")).order_by():
            figures[name][key] = count
    return figures


# The figures counts_by_process gives each process.
FIGURES = ("active", "overdue", "unclaimed", "escalated", "failed", "cancelled")
