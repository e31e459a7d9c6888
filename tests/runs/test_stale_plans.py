"""A tool call or page reads the same few rows however many runs and items there are, with plans made early.

PostgreSQL keeps a prepared statement's plan until the statistics of a table it reads change. Each test
here starts every cluster from the same statistics, taken while the tables are small (ANALYZE), sends
each statement often enough to be prepared and planned, then grows the tables as a busy installation
would and brings the statistics up to date, as autovacuum does after such growth. Each call must then
find a run by its key, ready work by its index and a person's work by their own assignments: a few
rows, not every run or open item of the organization (issue 7 §1: latency flat from 1k to 100k runs).
Whether the cluster's autovacuum runs, or has run before, changes nothing here.

ANALYZE sees the test's own uncommitted rows. What it writes of a table's size outlives the test's
transaction, so later tests see the tables as larger than they are, which only favours their indexes.
"""

import pytest
from django.db import connection
from django.utils import timezone

from runs.models import Run, RunStep
from tests.runs.conftest import rid
from tests.runs.test_agent_loop import ONE_STEP

POSTGRES_ONLY = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements' plans are PostgreSQL's (set DATABASE_URL)"
)

TABLES = ("runs_run", "runs_runstep")
ANALYZED = ("runs_run", "runs_runstep", "work_workitem", "work_notification", "runs_idempotencyrecord")


def analyze() -> None:
    """Bring the planner's statistics of every table a call reads up to date, as autovacuum does."""
    with connection.cursor() as cursor:
        for table in ANALYZED:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def rows_read(tables) -> dict[str, int]:
    """Rows this transaction has read from each table, by sequential and by index scans."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [list(tables)],
        )
        return dict(cursor.fetchall())


def reads_of(call, tables=TABLES) -> dict[str, int]:
    before = rows_read(tables)
    call()
    after = rows_read(tables)
    return {table: after.get(table, 0) - before.get(table, 0) for table in tables}


def one_run(agent) -> str:
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    agent("get_work", limit=5, process="one-step")
    agent("get_work", limit=5)
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    agent.write("submit", token=token, output={"result": "r"}, summary="s")
    agent("get_run", runId=run_id)
    agent("list_runs", limit=5)
    agent("list_runs", limit=5, process="one-step")
    agent("list_runs", limit=5, state="active")
    return run_id


def ok(response):
    assert response.status_code == 200, response.status_code
    return response


def bulk_runs(version, organization, count: int, **fields) -> tuple[list, dict]:
    """`count` runs of `version` added in bulk, and what each of their steps copies of them."""
    now = timezone.now()
    name = version.frontmatter["name"]
    runs = Run.objects.bulk_create(
        Run(organization=organization, version=version, process_name=name, started_by="a_0",
            data={"inputs": {}, "steps": {}}, started_at=now, updated_at=now, **fields)
        for _ in range(count)
    )
    return runs, {"organization": organization, "process_name": name, "version": version, "mode": "live"}


def add_runs(version, organization, count: int) -> None:
    """Runs in bulk, half of them with a ready agent step: the table grows, nothing analyzes it."""
    now = timezone.now()
    runs, copies = bulk_runs(version, organization, count)
    RunStep.objects.bulk_create(
        RunStep(run=run, **copies, step_id="work", position=0, kind="agent",
                state="ready" if index % 2 else "done", attempt=1, ready_since=now, ready_seq=1)
        for index, run in enumerate(runs)
    )


@POSTGRES_ONLY
def test_a_plan_made_on_small_tables_still_reads_a_few_rows_of_many(publish, agent, org):
    version = publish(ONE_STEP)
    analyze()
    # Every statement is sent often enough to be prepared and for PostgreSQL to settle on one plan.
    for _ in range(15):
        one_run(agent)
    add_runs(version, org, 3000)
    analyze()

    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"})["run"]["id"]
    request_id = rid()
    reads = {
        "get_work": reads_of(lambda: agent("get_work", limit=5)),
        "get_work by process": reads_of(lambda: agent("get_work", limit=5, process="one-step")),
        "get_run": reads_of(lambda: agent("get_run", runId=run_id)),
        "list_runs": reads_of(lambda: agent("list_runs", limit=5)),
        "list_runs by process": reads_of(lambda: agent("list_runs", limit=5, process="one-step")),
        "list_runs by state": reads_of(lambda: agent("list_runs", limit=5, state="active")),
        "claim": reads_of(lambda: agent("claim", runId=run_id, stepId="work", requestId=request_id)),
    }
    token = agent("claim", runId=run_id, stepId="work", requestId=request_id)["token"]
    reads["submit"] = reads_of(lambda: agent.write("submit", token=token, output={"result": "r"}, summary="s"))
    print("rows read", reads)
    for call, tables in reads.items():
        # A handful of rows each: the run, its steps, the page of work; not a share of 3,000 runs.
        assert all(count <= 30 for count in tables.values()), (call, reads)


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_existing_step_its_runs_process_version_and_mode(publish, agent):
    from django.db.migrations.executor import MigrationExecutor

    publish(ONE_STEP)
    run_id = agent.write("start_run", process="one-step", inputs={"ticket": "T"}, mode="test")["run"]["id"]
    before, after = [("runs", "0004_leaner_indexes")], [("runs", "0005_step_carries_run_process")]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(before)  # the columns go
        executor = MigrationExecutor(connection)
        executor.migrate(after)  # and come back, filled from the runs
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)  # the rest of the session runs on the whole schema
    assert not MigrationExecutor(connection).migration_plan(latest)
    run = Run.objects.get(pk=int(run_id.removeprefix("r_")))
    steps = list(RunStep.objects.filter(run=run))
    assert len(steps) == 2
    assert {(s.process_name, s.version_id, s.mode) for s in steps} == {("one-step", run.version_id, "test")}


PERSON_TABLES = ("runs_run", "runs_runstep", "work_workitem")


def add_items_for_others(version, organization, group, count: int) -> None:
    """Runs in bulk, each waiting on a person of another group with an open work item."""
    from runs.models import WorkItem

    now = timezone.now()
    runs, copies = bulk_runs(version, organization, count, state="waiting")
    steps = RunStep.objects.bulk_create(
        RunStep(run=run, **copies, step_id="check", position=1, kind="approve", state="waiting", attempt=1)
        for run in runs
    )
    WorkItem.objects.bulk_create(
        WorkItem(organization=organization, run=run, step=step, kind="approve", assigned_group=group, created_at=now)
        for run, step in zip(runs, steps, strict=True)
    )


@POSTGRES_ONLY
def test_a_persons_work_reads_their_own_items_not_everyone_elses(publish, agent, person_caller, org, client):
    from accounts.models import Group
    from tests.runs.test_query_counts import LOOP

    version = publish(LOOP)
    checker = person_caller("c@example.com", groups=["checkers"])
    person_caller("o@example.com", groups=["others"])
    client.force_login(checker.identity.user)

    def loop(measure: bool = False) -> dict:
        run_id = agent.write("start_run", process="loop", inputs={})["run"]["id"]
        token = agent.write("claim", runId=run_id, stepId="work")["token"]
        agent.write("submit", token=token, output={"n": 1}, summary="s")
        reads = {}

        def look(name, call):
            if measure:
                reads[name] = reads_of(call, PERSON_TABLES)
            else:
                call()

        look("get_work", lambda: checker("get_work", limit=5))
        look("inbox page", lambda: ok(client.get("/inbox/")))
        [item] = checker("get_work", limit=5)["items"]
        work_item = item["workItem"]
        look("item page", lambda: ok(client.get(f"/inbox/{work_item['id']}/")))
        look("decide", lambda: checker.write("decide", runId=run_id, workItemId=work_item["id"],
                                             snapshot=work_item["snapshot"], decision="approved"))
        return reads

    analyze()
    for _ in range(12):
        loop()
    add_items_for_others(version, org, Group.objects.get(organization=org, name="others"), 3000)
    analyze()
    reads = loop(measure=True)
    print("rows read", reads)
    for call, tables in reads.items():
        assert all(count <= 40 for count in tables.values()), (call, reads)


@POSTGRES_ONLY
def test_a_persons_notices_are_read_by_their_own_index(publish, agent, person_caller, client):
    from runs.models import Notification

    publish(ONE_STEP)
    checker = person_caller("c@example.com", groups=["checkers"])
    other = person_caller("o@example.com", groups=["others"])
    client.force_login(checker.identity.user)
    run = Run.objects.get(pk=int(one_run(agent).removeprefix("r_")))

    def notices(user, count: int, **fields) -> None:
        now = timezone.now()
        Notification.objects.bulk_create(
            Notification(user=user, run=run, step_id="work", kind="overdue", text="Late.", created_at=now, **fields)
            for _ in range(count)
        )

    notices(checker.identity.user, 2, read_at=None)
    analyze()
    for _ in range(12):
        ok(client.get("/inbox/"))
    notices(checker.identity.user, 1500, read_at=timezone.now())
    notices(other.identity.user, 1500, read_at=None)
    analyze()
    reads = reads_of(lambda: ok(client.get("/inbox/")), ["work_notification"])
    print("rows read", reads)
    assert reads["work_notification"] <= 30, reads  # the newest 20 and the 2 unread, not all 3,002


@POSTGRES_ONLY
def test_the_operators_overdue_work_reads_the_steps_overdue_now(publish, agent, person_caller, org, client):
    from accounts.models import Group
    from runs.models import WorkItem
    from tests.runs.test_query_counts import LOOP

    version = publish(LOOP)
    operator = person_caller("op@example.com", groups=["checkers"], operator=True)
    person_caller("o@example.com", groups=["others"])
    client.force_login(operator.identity.user)
    analyze()
    for _ in range(12):
        ok(client.get("/inbox/"))
    others = Group.objects.get(organization=org, name="others")
    add_items_for_others(version, org, others, 3000)  # open, not overdue
    now = timezone.now()
    runs, copies = bulk_runs(version, org, 1002, state="waiting")
    # Late once and done since: a step stays marked overdue.
    RunStep.objects.bulk_create(
        RunStep(run=run, **copies, step_id="check", position=1, kind="approve", state="done", attempt=1,
                due_at=now, overdue=True)
        for run in runs[:1000]
    )
    late = RunStep.objects.bulk_create(
        RunStep(run=run, **copies, step_id="check", position=1, kind="approve", state="waiting", attempt=1,
                due_at=now, overdue=True)
        for run in runs[1000:]
    )
    items = WorkItem.objects.bulk_create(
        WorkItem(organization=org, run=step.run, step=step, kind="approve", assigned_group=others, created_at=now)
        for step in late
    )
    analyze()
    page = {}
    reads = reads_of(lambda: page.setdefault("html", ok(client.get("/inbox/")).content.decode()), PERSON_TABLES)
    print("rows read", reads)
    for item in items:
        assert f"/inbox/w_{item.pk}/" in page["html"]  # both shown as overdue across the organization
    assert all(count <= 40 for count in reads.values()), reads
