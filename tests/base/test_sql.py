"""base.sql builds the same model instances the ORM would, from the same rows."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models.signals import post_init

from accounts.models import Agent, Organization
from base import adapting, backend, keys, sending, sql
from runs.models import Run


@pytest.fixture
def agent(db):
    org = Organization.objects.create(slug="sql-org", name="SQL org")
    return Agent.objects.create(organization=org, name="builder")


def _rows(model, pk):
    return sql.fetch_many([(sql.select_text(model, "t.id = %s"), [pk])])[0]


def test_a_built_row_matches_the_orms_instance(agent):
    [row] = _rows(Agent, agent.pk)
    built = sql.build(Agent, row)
    loaded = Agent.objects.get(pk=agent.pk)
    for field in Agent._meta.concrete_fields:
        assert getattr(built, field.attname) == getattr(loaded, field.attname), field.name
    assert built._state.adding is False and built._state.db == "default"
    assert built.organization.slug == "sql-org"  # relations load as on an ORM instance
    built.name = "renamed"
    built.save(update_fields=["name"])  # an UPDATE, not an INSERT: the row is known to exist
    assert Agent.objects.get(pk=agent.pk).name == "renamed"


def test_a_null_key_builds_nothing(agent):
    [row] = _rows(Agent, agent.pk)
    index = Agent._meta.concrete_fields.index(Agent._meta.pk)
    assert sql.build(Agent, tuple(None if i == index else v for i, v in enumerate(row))) is None


def test_a_model_with_init_listeners_is_built_through_its_init(agent):
    # Rows become instances through Model.from_db, so whatever listens to a model's init hears them.
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(listener, sender=Agent)
    try:
        [row] = _rows(Agent, agent.pk)
        built = sql.build(Agent, row)
    finally:
        post_init.disconnect(listener, sender=Agent)
    assert seen == [built]


def test_only_columns_with_converters_are_converted_and_a_short_row_is_refused(db):
    fields = Run._meta.concrete_fields
    names = [field.attname for field in fields]
    plain = {i for i, f in enumerate(fields) if not backend.column_converters(f, Run._meta.db_table, connection)[1]}
    assert plain  # most columns have no converter on any backend
    # A column with converters gets None (every converter passes it), the others a marker object.
    raw = [object() if i in plain else None for i in range(len(names))]
    raw[names.index("data")] = '{"amount": [1, 2]}'  # JSON arrives as text; its converter parses it
    converted = sql.convert(Run, raw)
    assert converted[names.index("data")] == {"amount": [1, 2]}
    assert all(converted[i] is raw[i] for i in plain)  # left as the driver gave them, not even copied
    with pytest.raises(ValueError, match="columns"):
        sql.convert(Run, raw[:-1])


def test_an_insert_runs_pre_save_where_the_field_has_one_and_takes_a_saved_relations_key(db):
    org = Organization(slug="inserted-org", name="Inserted")
    assert org.created_at is None
    sql.insert(org)  # created_at is auto_now_add: its pre_save sets it, as save() would
    assert org.created_at is not None
    stored = Organization.objects.get(pk=org.pk)
    assert stored.created_at == org.created_at and stored.name == "Inserted"
    later = Organization(slug="later-org", name="Later")
    agent = Agent(organization=later, name="late")  # set before the organization had a key
    assert agent.organization_id is None
    sql.insert(later)
    sql.insert(agent)  # the key is taken from the instance, as save() would
    assert Agent.objects.get(pk=agent.pk).organization_id == later.pk


# Several statements in one round trip (PostgreSQL only: elsewhere statements go one by one).


@pytest.fixture
def postgres(agent):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("statements are batched only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    connection.ensure_connection()
    return connection


def _prepared(connection) -> set[str]:
    """The statements prepared on this connection, as PostgreSQL lists them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


BATCH = [
    (sql.select_text(Agent, "t.id = %s AND t.name <> %s"), None),
    ("SELECT %s::int + 1", [41]),
]


def _name_and_ids(pk):
    # Two statements, so they go as one batch.
    return sql.fetch_many([(BATCH[0][0], [pk, "100% not this"]), BATCH[1]])


def test_several_statements_go_in_one_round_trip_and_answer_as_one_by_one(postgres, agent):
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(postgres) as captured:
        together = _name_and_ids(agent.pk)
    assert len(captured) == 1  # one query holds both statements
    alone = [sql.fetch_many([(BATCH[0][0], [agent.pk, "100% not this"])])[0], sql.fetch_many([BATCH[1]])[0]]
    assert together == alone and together[1] == [(42,)]


def test_a_single_statement_sent_often_is_prepared_by_psycopg(postgres, agent):
    # A statement alone is bound on the server, and psycopg prepares it once it has run
    # prepare_threshold times on the connection: the database parses and plans it once.
    for _ in range(postgres.connection.prepare_threshold + 2):
        assert sql.select(Agent, "t.id = %s AND t.name <> %s", [agent.pk, "not this"])[0].pk == agent.pk
    assert any("t.name <> $2" in text for text in _prepared(postgres)), _prepared(postgres)


def test_every_value_reaches_the_database_unchanged(postgres, agent):
    # A batch binds its values on the client, as psycopg's ClientCursor.mogrify writes them: quotes,
    # backslashes, non-ASCII, JSON, bytes and placeholders in text must arrive unchanged.
    import datetime as dt
    import decimal

    from psycopg.types.json import Jsonb

    values = [
        "it's a \\ back'slash; DROP TABLE x; --", 2**40, True, None,
        dt.datetime(2026, 12, 4, 7, 30, 1, 123456, tzinfo=dt.UTC), Jsonb({"q": "a'b\\c", "ü": [1, None]}),
        b"\x00\xff'", decimal.Decimal("12.50"), "ünïcödé ✓",
    ]
    text = "SELECT %s::text, %s::int8, %s::bool, %s::text, %s::timestamptz, %s::jsonb, %s::bytea, %s::numeric, %s"
    statements = [(text, values), ("SELECT %s::text", ["%s %% $1"])]
    expected = [
        [("it's a \\ back'slash; DROP TABLE x; --", 2**40, True, None,
          dt.datetime(2026, 12, 4, 7, 30, 1, 123456, tzinfo=dt.UTC), '{"q": "a\'b\\\\c", "ü": [1, null]}',
          b"\x00\xff'", decimal.Decimal("12.50"), "ünïcödé ✓")],
        [("%s %% $1",)],
    ]
    assert sql.fetch_many(statements) == expected
    assert [sql.fetch_many([statement])[0] for statement in statements] == expected  # bound on the server alike


def test_batches_go_on_working_after_a_rollback(postgres, agent):
    # After a rollback psycopg empties the connection's prepared statements (DEALLOCATE ALL); batches
    # name none of them, and single statements are prepared again.
    from django.db import transaction

    for _ in range(postgres.connection.prepare_threshold + 1):
        _name_and_ids(agent.pk)
        Agent.objects.filter(pk=agent.pk).exists()
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        _name_and_ids(agent.pk)
        raise ZeroDivisionError  # roll back
    for _ in range(postgres.connection.prepare_threshold + 2):
        assert _name_and_ids(agent.pk)[1] == [(42,)]
        assert Agent.objects.filter(pk=agent.pk).exists()


def test_with_preparing_turned_off_nothing_is_prepared(postgres, agent):
    # DATABASE_PREPARE_THRESHOLD=0, as behind a transaction-mode pooler, which would hand a
    # statement prepared on one server connection to a client on another.
    raw = postgres.connection
    before = raw.prepare_threshold
    raw.prepare_threshold = None
    try:
        with postgres.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
        for _ in range(8):
            assert _name_and_ids(agent.pk)[1] == [(42,)]
            assert sql.select(Agent, "t.id = %s", [agent.pk])
        assert not _prepared(postgres)
    finally:
        raw.prepare_threshold = before


def test_a_failed_batch_rolls_its_transaction_back_whole(transactional_db):
    from django.db import DatabaseError, connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("batches exist only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    org = Organization.objects.create(slug="sql-undo", name="Kept")
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        with sql.deferred():  # two UPDATEs: one batch, the transaction's first statements
            sql.update(Organization, org.pk, {"name": "Lost"})
            sql.update(Organization, org.pk, {"slug": "sql-lost"})
        assert Organization.objects.get(pk=org.pk).name == "Lost"
        raise ZeroDivisionError
    assert Organization.objects.get(pk=org.pk).name == "Kept"
    # A batch whose statement fails raises a database error, and the atomic block rolls back.
    with pytest.raises(DatabaseError, match="division by zero"), transaction.atomic(), sql.deferred():
        sql.update(Organization, org.pk, {"name": "Lost"})
        sql.update(Organization, org.pk, {"slug": "sql-lost"})
        sql.fetch_many([("SELECT 1 / %s::int", [0]), ("SELECT 1", [])])
    assert Organization.objects.get(pk=org.pk).name == "Kept"
    assert sql.fetch_many([("SELECT %s::int", [5]), ("SELECT %s::int", [6])]) == [[(5,)], [(6,)]]


def _every_model_field():
    from django.apps import apps

    return [field for model in apps.get_models() for field in model._meta.concrete_fields]


def test_a_plain_value_goes_to_the_database_as_the_orm_would_send_it(db):
    # base.sql skips get_db_prep_save where it would make nothing new of the value; the driver
    # must then write the very literal the ORM's value gives, for every field of every model.
    import datetime as dt

    import psycopg
    from django.db import connection

    samples = [0, 7, -3, 2**40, True, False, "", "it's", "100%", None,
               dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC),
               dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))]
    skipped = checked = 0
    for field in _every_model_field():
        for value in samples:
            try:
                orm = field.get_db_prep_save(value, connection)
            except (TypeError, ValueError, ValidationError):
                with pytest.raises((TypeError, ValueError, ValidationError)):  # refused alike
                    adapting.db_value(field, value, connection)
                continue
            fast = adapting.db_value(field, value, connection)
            if fast is not value:
                skipped += 1
                continue  # went through get_db_prep_save, as the ORM does
            checked += 1
            if connection.vendor == "postgresql":
                literal = psycopg.ClientCursor(connection.connection).mogrify
                assert literal("%s", [fast]) == literal("%s", [orm]), (field, value)
            else:
                assert fast == orm and type(fast) is type(orm), (field, value)
    assert checked and skipped  # both ways were taken
    # A naive datetime keeps the ORM's warning and is made aware: it goes through the field.
    class NoOffset(dt.tzinfo):
        def utcoffset(self, moment):
            return None

    created = Organization._meta.get_field("created_at")
    for naive in (dt.datetime(2026, 1, 2, 3, 4, 5), dt.datetime(2026, 1, 2, tzinfo=NoOffset())):
        with pytest.warns(RuntimeWarning, match="naive datetime"):
            assert adapting.db_value(created, naive, connection) is not naive


def test_a_choices_member_goes_as_the_plain_text_or_number_it_stands_for(db):
    # A choice's member, a guarded state among them, is sent as the plain str or int it stands for:
    # the driver writes the very literal it writes for the member, and finds the plain type's
    # dumper without walking the member's class at every statement.
    import psycopg
    from django.db import models

    from runs.models import Mode, Run, RunStep, StepState

    class Level(models.IntegerChoices):
        LOW = 1

    state = RunStep._meta.get_field("state")
    assert adapting.passes(state) is str  # a StateField prepares its values as any CharField
    cases = [(state, StepState.CLAIMED), (Run._meta.get_field("mode"), Mode.LIVE),
             (RunStep._meta.get_field("attempt"), Level.LOW)]
    for field, member in cases:
        orm = field.get_db_prep_save(member, connection)
        sent = adapting.db_value(field, member, connection)
        fields = adapting.with_kinds([field])
        assert type(sent) in (str, int) and sent == orm, (field, member, type(sent))
        assert type(adapting.prepped(fields, [member], connection)[0]) is type(sent)
        if connection.vendor == "postgresql":
            literal = psycopg.ClientCursor(connection.connection).mogrify
            assert literal("%s", [sent]) == literal("%s", [orm])

    class Shouting(models.CharField):  # prepares its values its own way: not taken for a plain text field
        def get_prep_value(self, value):
            return super().get_prep_value(value).upper()

    loud = Shouting(max_length=10)
    loud.set_attributes_from_name("loud")
    assert adapting.passes(loud) is None
    assert adapting.db_value(loud, StepState.READY, connection) == "READY"


def test_a_statements_values_are_prepped_each_as_alone_whatever_types_came_before(db):
    # adapting.prepped learns, for each combination of value types a statement meets, which values it
    # hands to _prep; every combination, in either order, must give what db_value gives each value alone.
    import datetime as dt

    import psycopg

    from runs.models import RunStep, StepState

    names = ("attempt", "state", "due_at", "handoff", "step_id", "overdue")
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    rows = [
        [1, "ready", None, None, "a", False],
        [True, StepState.READY, moment, {"b": [1, 2.5]}, "b", 0],
        [2**40, "done", moment.astimezone(dt.UTC), [], "", True],
        [None, None, None, {"c": None}, None, None],
    ]

    def spelled(values):
        if connection.vendor == "postgresql":
            literal = psycopg.ClientCursor(connection.connection).mogrify
            return [literal("%s", [value]) for value in values]
        return [(type(value), value) for value in values]

    for order in (rows, rows[::-1]):
        fields = adapting.with_kinds([RunStep._meta.get_field(name) for name in names])
        for values in order * 2:
            alone = [adapting.db_value(field, value, connection) for (field, _k, _p), value in zip(fields, values, strict=True)]
            assert spelled(adapting.prepped(fields, values, connection)) == spelled(alone), values
    with pytest.raises(ValueError, match="5 values for 6 fields"):
        adapting.prepped(fields, rows[0][:5], connection)


def test_a_batch_reads_timestamps_as_django_would(postgres):
    # A batch reads timestamptz with psycopg's own loader only where that gives what Django's loader
    # gives: Django's zone and the session's both UTC.
    import datetime as dt

    from django.db import transaction

    query = [("SELECT %s::timestamptz", ["2026-01-01T00:00:00+02:00"]), ("SELECT now()", [])]
    [[(moment,)], _now] = sql.fetch_many(query)
    assert moment == dt.datetime(2025, 12, 31, 22, 0, tzinfo=dt.UTC) and moment.tzinfo is dt.UTC
    assert sending._utc(postgres)
    with transaction.atomic():
        with postgres.cursor() as cursor:
            cursor.execute("SET LOCAL TIME ZONE 'Asia/Kathmandu'")
        assert not sending._utc(postgres)
        [[(moment,)], _now] = sql.fetch_many(query)
        with postgres.cursor() as cursor:
            cursor.execute(*query[0])
            [(as_the_orm_reads,)] = cursor.fetchall()
        # Django's loader, as the ORM reads (which takes the session for UTC, as Django sets it).
        assert moment == as_the_orm_reads and moment.tzinfo is as_the_orm_reads.tzinfo
        assert moment != dt.datetime(2025, 12, 31, 22, 0, tzinfo=dt.UTC)  # psycopg's would differ here


def test_a_small_batch_of_writes_goes_as_one_prepared_statement(postgres, agent):
    # A write's UPDATEs and INSERTs, within psycopg's statement limits, are one statement: one round
    # trip, bound on the server and prepared once its text repeats.
    from django.db import transaction
    from django.test.utils import CaptureQueriesContext

    for turn in range(postgres.connection.prepare_threshold + 2):
        with CaptureQueriesContext(postgres) as captured, transaction.atomic(), sql.deferred():
            sql.update(Agent, agent.pk, {"name": f"turn {turn}"})
            sql.insert_later(Agent(organization_id=agent.organization_id, name=f"new {turn}"))
        sent = [query["sql"][:8] for query in captured if "SAVEPOINT" not in query["sql"]]
        assert sent == ["WITH w0 "], captured.captured_queries
    assert Agent.objects.get(pk=agent.pk).name == f"turn {turn}"
    assert any(text.startswith("WITH w0 AS (UPDATE") for text in _prepared(postgres)), _prepared(postgres)


def test_rows_written_in_one_statement_keep_their_order_and_their_references(postgres, agent, monkeypatch):
    # Rows of one table go as one INSERT of several rows, so their keys follow the order they were
    # written in; a row may point at one inserted in the same batch (foreign keys are checked at the
    # statement's end); a row updated twice is written once, with the later values.
    from django.db import transaction
    from django.test.utils import CaptureQueriesContext

    with transaction.atomic(), sql.deferred():
        org = Organization(slug="sql-batch", name="Batch")
        org.pk = sql.fetch_many([keys.next_ids(Organization, 1)])[0][0][0]
        sql.insert_later(org)
        for name in ("first", "second", "third"):
            sql.insert_later(Agent(organization_id=org.pk, name=name))
        sql.update(Agent, agent.pk, {"name": "once"})
        sql.update(Agent, agent.pk, {"name": "twice", "is_active": False})
    names = list(Agent.objects.filter(organization_id=org.pk).order_by("pk").values_list("name", flat=True))
    assert names == ["first", "second", "third"]
    agent.refresh_from_db()
    assert (agent.name, agent.is_active) == ("twice", False)
    # A batch of more values than psycopg keeps a parsed `%s` statement for still goes as one statement,
    # sent with numbered placeholders; one beyond what a statement can bind at all goes as one simple
    # query of its statements, with the same effect.
    for limit in (sending.ONE_STATEMENT_PARAMS, 20):
        monkeypatch.setattr(sending, "ONE_STATEMENT_PARAMS", limit)
        with CaptureQueriesContext(postgres) as captured, transaction.atomic(), sql.deferred():
            for number in range(60):
                sql.insert_later(Agent(organization_id=org.pk, name=f"many {limit} {number}"))
        sent = [query["sql"][:8] for query in captured if "SAVEPOINT" not in query["sql"]]
        assert sent == (["WITH w0 "] if limit > 20 else ["INSERT I"]), sent
        many = list(Agent.objects.filter(name__startswith=f"many {limit} ").order_by("pk").values_list("name", flat=True))
        assert many == [f"many {limit} {number}" for number in range(60)]

def test_a_write_beyond_psycopgs_kept_statements_is_one_prepared_statement(postgres, agent):
    # A write's statement with more than 50 values (or longer than 4096 characters) is one that psycopg
    # neither keeps parsed nor prepares when written with `%s`; sent with numbered placeholders it is
    # prepared once its text repeats, like any other.
    from django.db import transaction

    names = [f"agent with a long name number {number:04d} " + "x" * 60 for number in range(30)]
    for turn in range(postgres.connection.prepare_threshold + 2):
        with transaction.atomic(), sql.deferred():
            sql.update(Agent, agent.pk, {"name": f"turn {turn}"})
            for name in names:
                sql.insert_later(Agent(organization_id=agent.organization_id, name=f"{turn} {name}"))
    assert Agent.objects.filter(name__startswith=f"{turn} agent with").count() == 30
    prepared = [text for text in _prepared(postgres) if text.startswith("WITH w0 AS (UPDATE")]
    assert any("$242)" in text for text in prepared), prepared  # 2 + 30 rows of 8 values


def test_numbered_placeholders_keep_every_literal_percent():
    assert sending.numbered("SELECT %s, '100%%', %s WHERE x LIKE 'a%%s'") == "SELECT $1, '100%', $2 WHERE x LIKE 'a%s'"


def test_a_written_value_with_percent_signs_arrives_unchanged(postgres, agent):
    from django.db import transaction

    with transaction.atomic(), sql.deferred():
        sql.update(Agent, agent.pk, {"name": "100% %s $1 %%"})
        sql.insert_later(Agent(organization_id=agent.organization_id, name="%(name)s"))
    assert Agent.objects.get(pk=agent.pk).name == "100% %s $1 %%"
    assert Agent.objects.filter(name="%(name)s").exists()


def test_a_large_batch_goes_on_a_cursor_of_its_own_and_the_next_batch_still_works(postgres):
    # A connection keeps one cursor for its batches, which holds on to the last text it sent: a batch
    # longer than KEPT_QUERY_TEXT with its values bound goes on a cursor of its own, closed after.
    big = "x" * (sending.KEPT_QUERY_TEXT + 10)
    for _ in range(2):
        assert sql.fetch_many([("SELECT length(%s)", [big]), ("SELECT %s::int", [1])]) == [[(len(big),)], [(1,)]]
        assert sql.fetch_many([("SELECT %s::int", [2]), ("SELECT %s::text", ["three"])]) == [[(2,)], [("three",)]]


def test_a_writes_statement_goes_on_the_connections_cursor_for_writes_and_bytes_on_one_of_their_own(postgres, agent):
    # A write's one statement goes on the cursor the connection keeps for writes, which keeps the adapters
    # it has looked up; reads keep a cursor of their own. A statement that sends bytes (an uploaded file)
    # goes on a new cursor, closed after, which holds on to nothing once the write is done.
    from django.db import transaction

    used = []

    def wrapper(execute, text, params, many, context):
        if "SAVEPOINT" not in text:  # the test's own transaction's
            used.append(context["cursor"].cursor)
        return execute(text, params, many, context)

    with postgres.execute_wrapper(wrapper):
        for turn in range(2):
            with transaction.atomic(), sql.deferred():
                sql.update(Agent, agent.pk, {"name": f"turn {turn}"})
                sql.insert_later(Agent(organization_id=agent.organization_id, name=f"new {turn}"))
        read = sql.fetch("SELECT %s::int", [1])
        row = sending.send_one("SELECT %s::text, length(%s::bytea)", ["name", b"\x00 file"], first_row=True)
        assert row == ("name", 6)
    assert read == [(1,)] and Agent.objects.get(pk=agent.pk).name == "turn 1"
    first, second, reading, with_bytes = used
    assert first is second and not first.closed  # kept from one write to the next
    assert reading is not first  # reads keep their own
    assert with_bytes is not first and with_bytes.closed


def test_a_long_statement_is_numbered_without_being_kept():
    text = "SELECT " + ", ".join(["%s"] * 3000) + ", '100%%'"
    assert len(text) > sending.KEPT_NUMBERED_TEXT
    numbered = sending.numbered(text)
    assert numbered.startswith("SELECT $1, $2, ") and numbered.endswith("$3000, '100%'")
