"""Runs, the state of their steps, leases, uploads, held events and idempotency records.

Only runs.engine changes these rows; everything else reads them.
"""


from django.conf import settings
from django.db import models
from django.db.models.expressions import RawSQL

from accounts.models import Group, Organization
from base.params import prefixed_id
from processes.models import ProcessVersion

from .transitions import (
    RunState,
    StateField,
    Stateful,
    StepState,
    WorkItemState,
)


def public_pk(value, prefix: str) -> int | None:
    """Return the database id an `r_…`/`w_…` id names, or None for anything else (ASCII digits, in range)."""
    return prefixed_id(value, prefix)


# The states of a step still at work: what can still become overdue.
ACTIVE_STATES = (StepState.READY, StepState.CLAIMED, StepState.WAITING)


class Mode(models.TextChoices):
    LIVE = "live"
    TEST = "test"


# A run's data is a document a write only ever replaces (runs.engine `_store`, runs.agent_steps
# `_show_check`), never alters in place: compared by identity (base.tracked), it need not be copied at
# every load.
RUN_REPLACED = frozenset({"data"})


class Run(Stateful):
    # Indexed by the composite indexes below, which lead with it.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="runs", db_index=False)
    version = models.ForeignKey(ProcessVersion, on_delete=models.PROTECT, related_name="runs")
    process_name = models.CharField(max_length=64)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.LIVE)
    state = StateField(max_length=16, choices=RunState.choices, default=RunState.ACTIVE)
    outcome = models.CharField(max_length=200, null=True, blank=True)
    ended = models.JSONField(null=True, blank=True)
    started_by = models.CharField(max_length=64)
    initiator = models.ForeignKey(
        "accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="started_runs"
    )
    # Run data exactly as the protocol shows it (spec §3.1), without the signed file URLs.
    data = models.JSONField(default=dict)
    seq = models.PositiveIntegerField(default=0)
    # One more at every save of the run (runs.store.save): a write made without the run's lock is
    # applied only if this is still the value it read (base.sql.optimistic).
    revision = models.BigIntegerField(default=0)
    # Set once an event is held for this run; until then no query looks for held events.
    holds_events = models.BooleanField(default=False)
    # The earliest moment time alone changes this run (a lease ends, a wait passes, a deadline).
    wake_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            # list_runs, newest first, with no filter, by state or by process: each read in the order of
            # its index to the page's end, `id` breaking ties as the order does.
            models.Index(fields=["organization", "started_at", "id"], name="run_org_started"),
            models.Index(fields=["organization", "state", "started_at", "id"], name="run_org_state_started"),
            models.Index(fields=["organization", "process_name", "started_at", "id"], name="run_org_process_started"),
            # The people's search: runs someone started, newest first. (On PostgreSQL a GIN index on the
            # inputs, run_inputs, finds a run by any input value; made in migration 0010.)
            models.Index(fields=["organization", "started_by", "started_at", "id"], name="run_org_starter_started"),
            # Only runs that wait for a time are in these: the catch-up looks stay small and quick.
            models.Index(fields=["wake_at"], name="run_wake", condition=models.Q(wake_at__isnull=False)),
            models.Index(
                fields=["organization", "wake_at"], name="run_org_wake", condition=models.Q(wake_at__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return f"r_{self.pk}"

    @property
    def is_over(self) -> bool:
        return self.state in (RunState.ENDED, RunState.CANCELLED)


class RunStep(Stateful):
    """One declared step of one run; its state is the protocol's step state."""

    # Both indexed by the constraint and the index below, which lead with them.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="step_rows", db_index=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Copies of the run's, which never change: the look for ready work reads the steps alone. Joined to
    # the runs, its plan can become a scan of every run per step found, where the database planned it
    # when the table was small and has not analyzed it since. The run's own key protects the version.
    process_name = models.CharField(max_length=64)
    version = models.ForeignKey(
        ProcessVersion, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    mode = models.CharField(max_length=8, choices=Mode.choices)
    step_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16)
    state = StateField(max_length=16, choices=StepState.choices, null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    ready_seq = models.PositiveIntegerField(default=0)
    done_seq = models.PositiveIntegerField(default=0)
    ready_since = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    overdue = models.BooleanField(default=False)
    overdue_noticed = models.BooleanField(default=False)
    wake_at = models.DateTimeField(null=True, blank=True)
    handoff = models.JSONField(null=True, blank=True)
    progress = models.TextField(null=True, blank=True)
    escalation = models.JSONField(null=True, blank=True)
    lease = models.ForeignKey("Lease", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=64, null=True, blank=True)
    # Where the latest completion went: a step id, or `join` for a branch that finished (parallel-1).
    went_to = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "step_id"], name="one_row_per_step")]
        indexes = [
            models.Index(fields=["organization", "kind", "state", "ready_since", "id"], name="step_ready_work"),
            # Steps overdue now, for the operators: a step stays marked overdue once it is done, so the
            # index holds only the ones still at work (a query names the same condition: OVERDUE_NOW).
            models.Index(
                fields=["organization", "due_at", "id"], name="step_overdue_now",
                condition=models.Q(overdue=True, state__in=list(ACTIVE_STATES)),
            ),
            # The live map: how many runs are at each step of a version now, read from the index alone, and
            # the runs at one step (a query names the same condition: ACTIVE_NOW).
            models.Index(
                fields=["organization", "version", "step_id", "state", "overdue"], name="step_active_now",
                condition=models.Q(state__in=list(ACTIVE_STATES)),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.step_id}"


class How(models.TextChoices):
    """How a run left a step, as a Passage records it."""

    PASSED = "passed"  # completed, and went on to `went_to` (a route, the next step, a timeout, a join)
    REJECTED = "rejected"  # rejected, and went back to `went_to` (a rejection loop)
    FINISHED = "finished"  # a finish step was reached: the run ended with `outcome`
    FAILED = "failed"  # the run ended failing here: `outcome` failed, rejected (nowhere back) or cancelled
    REFUSED = "refused"  # an agent's submission was not accepted (`by` the agent)
    EXPIRED = "expired"  # an agent's lease ended before it handed the step in (`by` the agent)


# Passages that tell of trouble: what the operators' attention lists read.
TROUBLE = (How.FAILED, How.REFUSED, How.EXPIRED)


class Passage(models.Model):
    """One way out of one step of one run, appended by the write that took it (runs.passages).

    The operators' figures read these instead of run data: how many went along each route and each
    rejection loop in a period, how long a step took, where runs failed, which agents were refused.
    A row is never changed; it is written in the same round trip as the rest of its write.
    """

    # Indexed by the composite indexes below, which lead with it.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Kept as history: no constraint, so nothing here holds up a run or a version (which are never deleted
    # but with their organization).
    run = models.ForeignKey(Run, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    process_name = models.CharField(max_length=64)
    version = models.ForeignKey(
        ProcessVersion, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # Empty for a run cancelled while no step was at work.
    step_id = models.CharField(max_length=64, blank=True)
    how = models.CharField(max_length=16, choices=How.choices)
    went_to = models.CharField(max_length=64, null=True, blank=True)
    outcome = models.CharField(max_length=200, null=True, blank=True)
    by = models.CharField(max_length=64)
    at = models.DateTimeField()
    # Time in the step, from when it was last reached; for a finish, the run's whole time.
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [
            # The live map of one version over a period: its counts and times are read from the index alone.
            models.Index(
                fields=["organization", "version", "at", "step_id", "how", "went_to", "outcome", "seconds"],
                name="passage_map",
            ),
            # The attention lists and the overview's failures: the few passages that tell of trouble.
            models.Index(
                fields=["organization", "how", "at", "process_name", "by", "run"], name="passage_trouble",
                condition=models.Q(how__in=list(TROUBLE)),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.step_id} {self.how}"


class PassageDay(models.Model):
    """The passages of one version on one day (UTC) that left one step one way, counted: what the live map
    reads for whole days.

    Made once a day has passed (runs.rollups), from the day's passages; never changed after. The times
    are kept as counts per band of durations 5% wide (`{band: count}`), so a period's percentiles come
    from a few rows a day whatever the number of runs.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.ForeignKey(
        ProcessVersion, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    day = models.DateField()
    step_id = models.CharField(max_length=64, blank=True)
    how = models.CharField(max_length=16, choices=How.choices)
    went_to = models.CharField(max_length=64, null=True, blank=True)
    outcome = models.CharField(max_length=200, null=True, blank=True)
    count = models.PositiveIntegerField()
    times = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "version", "day"], name="passage_day_map")]

    def __str__(self) -> str:
        return f"{self.day} {self.step_id} {self.how} ×{self.count}"


class PassagesRolled(models.Model):
    """Up to which day (exclusive) a version's passages are counted in PassageDay rows."""

    version = models.OneToOneField(
        ProcessVersion, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True, related_name="+"
    )
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    until = models.DateField()

    def __str__(self) -> str:
        return f"{self.version_id} rolled until {self.until}"


# The condition of step_overdue_now, written out with its values in the query's text, where a prepared
# statement's plan can see that the index applies (a parameter it could not).
_ACTIVE_LIST = ", ".join(f"'{state}'" for state in ACTIVE_STATES)
OVERDUE_NOW = RawSQL(
    f'"runs_runstep"."overdue" AND "runs_runstep"."state" IN ({_ACTIVE_LIST})',
    (),
    output_field=models.BooleanField(),
)
# The condition of step_active_now, written out likewise.
ACTIVE_NOW = RawSQL(f'"runs_runstep"."state" IN ({_ACTIVE_LIST})', (), output_field=models.BooleanField())


class Lease(models.Model):
    """One issued claim token; renewing issues a new lease and ends the old one."""

    public_id = models.CharField(max_length=32)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="leases")
    step = models.ForeignKey(RunStep, on_delete=models.CASCADE, related_name="leases")
    holder = models.CharField(max_length=64)
    issued_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        # A constraint rather than unique=True: tokens are looked up by equality, never by LIKE.
        constraints = [models.UniqueConstraint(fields=["public_id"], name="lease_public_id_unique")]

    def __str__(self) -> str:
        return f"lease {self.public_id[:8]}… on {self.step}"


class Upload(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="uploads")
    public_id = models.CharField(max_length=40, unique=True)
    file_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=160)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()
    uploaded_by = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "public_id"], name="upload_org_id")]

    def __str__(self) -> str:
        return f"{self.public_id} {self.file_name}"


class Event(models.Model):
    """An event sent to a run: held until a wait_for consumes it or the run ends (spec §3.6)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)  # event_held leads with it
    name = models.CharField(max_length=64)
    data = models.JSONField(null=True, blank=True)
    sent_by = models.CharField(max_length=64)
    sent_at = models.DateTimeField()
    consumed_by = models.CharField(max_length=64, null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)
    discarded = models.BooleanField(default=False)

    class Meta:
        ordering = ["sent_at", "id"]
        indexes = [models.Index(fields=["run", "name", "consumed_by"], name="event_held")]

    def __str__(self) -> str:
        return f"{self.name} → {self.run_id}"


class IdempotencyRecord(models.Model):
    """The first successful result of a write, replayed for the same requestId (spec §4)."""

    # Indexed by request_id_unique_in_org, which leads with it.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+", db_index=False)
    request_id = models.CharField(max_length=128)
    tool = models.CharField(max_length=32)
    fingerprint = models.CharField(max_length=64)
    result = models.JSONField()
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organization", "request_id"], name="request_id_unique_in_org")
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.request_id}"


class WorkItem(Stateful):
    """A person step, or an escalated agent step, waiting for a decision (spec §3.4)."""

    # These three are indexed by the composite indexes below, which lead with them.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="work_items", db_index=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="work_items")
    step = models.ForeignKey(RunStep, on_delete=models.CASCADE, related_name="work_items")
    kind = models.CharField(max_length=16)
    state = StateField(
        max_length=16, choices=WorkItemState.choices, default=WorkItemState.OPEN
    )
    assigned_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    assigned_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    assigned_person = models.CharField(max_length=254, null=True, blank=True)
    for_operators = models.BooleanField(default=False)
    escalation = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    decision = models.CharField(max_length=16, null=True, blank=True)
    decided_by = models.CharField(max_length=64, null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # Who said "I'm working on this", and since when: a note to colleagues, never a lock (spec §3.4 lets
    # any member decide; the first decision wins). Each take and release is also kept (ItemTake).
    taken_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    taken_at = models.DateTimeField(null=True, blank=True)
    # The colleague a member of the assignment put on the item ("assigned to …"): advisory like a take,
    # never a lock; anyone in the assignment may still decide. Each hand-over is kept (ItemHandover).
    handed_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )

    # Not a column: the RunStep a write loaded this item with, so the engine and the run view reach
    # it without a query (a new run's step has no primary key yet when its first item is made).
    step_row = None

    class Meta:
        db_table = "work_workitem"  # its table since before it moved here from work
        ordering = ["created_at", "id"]
        constraints = [
            # Assigned one way only: to a person, to a group, or to the operators (an escalation). The
            # inbox reads each way by its own index and adds them up (runs.assignments.assigned_parts).
            models.CheckConstraint(
                condition=(
                    models.Q(assigned_user__isnull=False, assigned_group__isnull=True, for_operators=False)
                    | models.Q(assigned_user__isnull=True, assigned_group__isnull=False, for_operators=False)
                    | models.Q(assigned_user__isnull=True, assigned_group__isnull=True, for_operators=True)
                ),
                name="item_assigned_one_way",
            ),
        ]
        indexes = [
            # A person's inbox reads their items and their groups' items each by an index that leads with
            # the assignment, the organization checked on the rows (runs.assignments.assigned_parts).
            models.Index(fields=["assigned_group", "state", "created_at"], name="item_group_open"),
            models.Index(fields=["assigned_user", "state", "created_at"], name="item_user_open"),
            models.Index(fields=["organization", "state", "for_operators", "created_at"], name="item_ops_inbox"),
            # "Taken by me": a person's taken items, open ones only.
            models.Index(fields=["taken_by", "created_at"], name="item_taken_open",
                         condition=models.Q(state=WorkItemState.OPEN, taken_by__isnull=False)),
            # "Assigned to me": the open items a colleague handed a person.
            models.Index(fields=["handed_to", "created_at"], name="item_handed_open",
                         condition=models.Q(state=WorkItemState.OPEN, handed_to__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return f"w_{self.pk}"


class ItemTake(models.Model):
    """One person's time on a work item, from taking it to letting it go (or to the item's close)."""

    item = models.ForeignKey(WorkItem, on_delete=models.CASCADE, related_name="takes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    taken_at = models.DateTimeField()
    # Who took it from this person, if anyone did; none when they let it go themselves.
    taken_over_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["taken_at", "id"]

    def __str__(self) -> str:
        return f"{self.user} on {self.item}"


class ItemHandover(models.Model):
    """One member putting a colleague on a work item, kept for the run's timeline."""

    item = models.ForeignKey(WorkItem, on_delete=models.CASCADE, related_name="handovers")
    to = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.item} to {self.to}"


class Comment(models.Model):
    """A person's remark on a run, or on one of its work items, in Markdown. Never part of the run's data."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="comments")
    work_item = models.ForeignKey(WorkItem, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    body = models.TextField()
    created_at = models.DateTimeField()
    mentioned = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.run_id}"


class NoticeKind(models.TextChoices):
    NEW_WORK = "new_work", "New work"
    SENT_BACK = "sent_back", "Sent back"
    ESCALATION = "escalation", "Escalation"
    OVERDUE = "overdue", "Overdue"
    RUN_ENDED = "run_ended", "Run ended"
    RUN_FAILED = "run_failed", "Run failed"
    MENTION = "mention", "Mentioned"
    HANDED = "handed", "Assigned to you"


class Notification(models.Model):
    """An in-app notice (new work, work sent back, an escalation, overdue work, a run's end), listed in the
    recipient's inbox and, as they choose, emailed at once or in a daily digest."""

    # Indexed by notice_user_newest, which leads with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications", db_index=False
    )
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    work_item = models.ForeignKey(WorkItem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    step_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=32, choices=NoticeKind.choices)
    text = models.TextField()
    created_at = models.DateTimeField()
    read_at = models.DateTimeField(null=True, blank=True)
    # Set when an email is owed; cleared once it is sent after the commit. Test runs never owe one.
    email_pending = models.BooleanField(default=False)

    class Meta:
        db_table = "work_notification"  # its table since before it moved here from work
        ordering = ["-created_at"]
        indexes = [
            # A person's newest notices, and their unread ones counted, read only theirs.
            models.Index(fields=["user", "-created_at", "-id"], name="notice_user_newest"),
            models.Index(fields=["user"], name="notice_user_unread", condition=models.Q(read_at__isnull=True)),
            # The sweep's look for emails still owed reads only those (with statistics to plan by).
            models.Index(fields=["id"], name="notice_email_owed", condition=models.Q(email_pending=True)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.user}"


class RunSearch(models.Model):
    """The words a run is found by: its inputs' values, its process's title and its completed steps' outputs.

    Written with the run (runs.search.keep_document): made when the run starts, written again when a
    write changes what it holds. `document` is those words lowercased, each after a space, so a LIKE
    finds the start of a word; on PostgreSQL the column `words` (its tsvector, migration 0012) and a GIN
    index on it, run_search_words, answer a search with prefix matching.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="+")
    # Indexed by run_search_newest, which leads with it.
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+", db_index=False)
    started_at = models.DateTimeField()
    document = models.TextField()

    class Meta:
        indexes = [
            # Found runs newest first: for a common word the planner walks this and tests each row's words.
            models.Index(fields=["organization", "started_at", "run"], name="run_search_newest"),
        ]

    def __str__(self) -> str:
        return f"words of r_{self.run_id}"
