"""config.sql builds the same model instances the ORM would, from the same rows."""

import pytest
from django.core.exceptions import ValidationError
from django.db.models.signals import post_init

from accounts.models import Agent, Organization
from config import sql


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


def test_a_model_with_init_listeners_is_built_through_its_init(agent, monkeypatch):
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(listener, sender=Agent)
    monkeypatch.setattr(sql, "_plain_attnames", sql._plain_attnames.__wrapped__)  # ask afresh, not cached
    try:
        [row] = _rows(Agent, agent.pk)
        built = sql.build(Agent, row)
    finally:
        post_init.disconnect(listener, sender=Agent)
    assert seen == [built]


# Batch statements prepared on the connection (PostgreSQL only: elsewhere statements go one by one).


@pytest.fixture
def postgres(agent):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("batch statements are prepared only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    connection.ensure_connection()
    return connection


def _server_statements(connection) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'ap\\_%%'")
        return {row[0] for row in cursor.fetchall()}


def _name_and_ids(pk):
    # Two statements, so they go as one batch.
    return sql.fetch_many(
        [
            (sql.select_text(Agent, "t.id = %s AND t.name <> %s"), [pk, "100% not this"]),
            ("SELECT %s::int + 1", [41]),
        ]
    )


def test_a_batch_statement_sent_often_is_prepared_once_and_answers_alike(postgres, agent):
    # The database parses and plans a prepared statement once per connection, not on every call.
    first = _name_and_ids(agent.pk)
    for _ in range(sql._Prepared.of(postgres.connection).threshold + 2):
        assert _name_and_ids(agent.pk) == first
    prepared = _server_statements(postgres)
    assert any("t.name <> $2" in text for text in prepared), prepared  # `%%` became `%`, `%s` became `$n`
    assert sum("$1::int + 1" in text for text in prepared) == 1


def test_a_batch_writes_every_value_as_psycopgs_mogrify_would(postgres, agent):
    # The batch binds values itself, with one transformer for all its statements: quotes,
    # backslashes, non-ASCII, JSON and bytes must reach the database unchanged (Django reads jsonb as text).
    import datetime as dt
    import decimal

    from django.test.utils import CaptureQueriesContext
    from psycopg import ClientCursor
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
    raw = ClientCursor(postgres.connection)
    for _ in range(sql._Prepared.of(postgres.connection).threshold + 2):  # as plain text, then prepared
        with CaptureQueriesContext(postgres) as captured:
            assert sql.fetch_many(statements) == expected
        sent = captured[-1]["sql"]
        first = sent.split(";\n")[0]
        if first.startswith("EXECUTE"):
            name = first[len("EXECUTE "):first.index("(")]
            assert first == raw.mogrify(f"EXECUTE {name}({', '.join(['%s'] * len(values))})", values)
        else:
            assert first == raw.mogrify(text, values)
    assert sent.startswith("EXECUTE")


def test_batches_go_on_working_after_psycopg_deallocates_everything(postgres, agent):
    # A rollback while psycopg holds prepared statements of its own makes it send DEALLOCATE ALL,
    # which removes the batch statements too: the next batch must not name one that is gone.
    from django.db import transaction

    threshold = sql._Prepared.of(postgres.connection).threshold
    for _ in range(threshold + 1):
        _name_and_ids(agent.pk)
        Agent.objects.filter(pk=agent.pk).exists()  # a single statement psycopg prepares itself
    assert postgres.connection._prepared._names, "psycopg prepared nothing of its own"
    assert _server_statements(postgres)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        _name_and_ids(agent.pk)
        raise ZeroDivisionError  # roll back
    assert not _server_statements(postgres)
    for _ in range(threshold + 1):
        assert _name_and_ids(agent.pk)[1] == [(42,)]
    assert _server_statements(postgres)


def test_a_statement_postgres_cannot_prepare_costs_the_transaction_nothing(postgres, agent):
    # `%s IS NULL` gives PREPARE no type for its parameter; inside a transaction the failed PREPARE
    # is undone by its savepoint and the statement goes as text.
    from django.db import transaction

    statements = [("SELECT 1 WHERE %s IS NULL", [None]), ("SELECT %s::int", [7])]
    with transaction.atomic():
        Agent.objects.filter(pk=agent.pk).update(name="inside")
        for _ in range(sql._Prepared.of(postgres.connection).threshold + 2):
            assert sql.fetch_many(statements) == [[(1,)], [(7,)]]
        assert Agent.objects.get(pk=agent.pk).name == "inside"  # the transaction is alive
    assert "SELECT 1 WHERE %s IS NULL" in sql._unpreparable


def test_a_connection_whose_statements_vanish_recovers_on_the_next_batch(postgres, agent):
    # One batch fails (and its transaction rolls back, as a request's would); the next one works.
    from django.db import DatabaseError, transaction

    for _ in range(sql._Prepared.of(postgres.connection).threshold + 1):
        _name_and_ids(agent.pk)
    with postgres.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # behind psycopg's back
    postgres.connection._prepared.clear()  # psycopg's own are gone too
    with pytest.raises(DatabaseError, match="does not exist"), transaction.atomic():
        _name_and_ids(agent.pk)
    assert _name_and_ids(agent.pk)[1] == [(42,)]


def test_a_failed_prepare_at_the_start_of_a_transaction_costs_it_nothing(transactional_db):
    # The first statement of an outermost atomic block: psycopg has not begun the transaction yet.
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("batch statements are prepared only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    org = Organization.objects.create(slug="sql-start", name="SQL start")
    statements = [("SELECT 2 WHERE %s IS NULL", [None]), ("SELECT COUNT(*) FROM accounts_organization WHERE slug = %s", ["sql-start"])]
    connection.ensure_connection()
    for _ in range(sql._Prepared.of(connection.connection).threshold + 2):
        with transaction.atomic():
            assert sql.fetch_many(statements) == [[(2,)], [(1,)]]
            Organization.objects.filter(pk=org.pk).update(name="renamed")
    assert Organization.objects.get(pk=org.pk).name == "renamed"
    assert "SELECT 2 WHERE %s IS NULL" in sql._unpreparable


def test_with_preparing_turned_off_batches_go_as_plain_text(postgres, agent):
    # DATABASE_PREPARE_THRESHOLD=0, as behind a transaction-mode pooler, which would hand a
    # statement prepared on one server connection to a client on another.
    from django.test.utils import CaptureQueriesContext

    raw = postgres.connection
    before = raw.prepare_threshold
    raw.prepare_threshold = None
    try:
        with CaptureQueriesContext(postgres) as captured:
            for _ in range(8):
                assert _name_and_ids(agent.pk)[1] == [(42,)]
    finally:
        raw.prepare_threshold = before
    assert captured and not any("EXECUTE" in query["sql"] for query in captured), captured[-1]["sql"]
    assert "EXECUTE" in _executed_after_warming(postgres, agent)


def _executed_after_warming(postgres, agent) -> str:
    from django.test.utils import CaptureQueriesContext

    for _ in range(sql._Prepared.of(postgres.connection).threshold + 1):
        _name_and_ids(agent.pk)
    with CaptureQueriesContext(postgres) as captured:
        _name_and_ids(agent.pk)
    return captured[-1]["sql"]


def _commands_sent(monkeypatch) -> list[bytes]:
    """The commands psycopg sends on its own, outside any query (BEGIN, COMMIT, ROLLBACK), as they go."""
    from psycopg._connection_base import BaseConnection

    sent, original = [], BaseConnection._exec_command

    def recording(self, command, *args, **kwargs):
        sent.append(command if isinstance(command, bytes) else str(command).encode())
        return original(self, command, *args, **kwargs)

    monkeypatch.setattr(BaseConnection, "_exec_command", recording)
    return sent


def test_a_batch_that_starts_a_transaction_carries_its_begin(transactional_db, monkeypatch):
    # One round trip fewer per write: the lock and reads go with the BEGIN that psycopg would send alone.
    from django.db import connection, transaction
    from psycopg import pq

    if connection.vendor != "postgresql":
        pytest.skip("batches exist only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    org = Organization.objects.create(slug="sql-begin", name="Before")
    connection.ensure_connection()
    sent = _commands_sent(monkeypatch)
    with transaction.atomic():
        rows = sql.fetch_many([("SELECT name FROM accounts_organization WHERE id = %s FOR UPDATE", [org.pk]),
                               ("SELECT %s::int", [3])])
        assert rows == [[("Before",)], [(3,)]]  # the results start at the first statement, not at BEGIN
        assert connection.connection.info.transaction_status == pq.TransactionStatus.INTRANS
        Organization.objects.filter(pk=org.pk).update(name="After")
    assert not any(command.startswith(b"BEGIN") for command in sent), sent
    assert Organization.objects.get(pk=org.pk).name == "After"


def test_a_transaction_begun_by_a_batch_rolls_back_whole(transactional_db, monkeypatch):
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("batches exist only on PostgreSQL (DATABASE_URL is not PostgreSQL)")
    org = Organization.objects.create(slug="sql-undo", name="Kept")
    connection.ensure_connection()
    sent = _commands_sent(monkeypatch)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        with sql.deferred():  # two UPDATEs: one batch, the transaction's first query
            sql.update(Organization, org.pk, {"name": "Lost"})
            sql.update(Organization, org.pk, {"slug": "sql-lost"})
        assert Organization.objects.get(pk=org.pk).name == "Lost"
        raise ZeroDivisionError
    assert Organization.objects.get(pk=org.pk).name == "Kept"
    assert b"ROLLBACK" in sent
    # A batch whose statement fails leaves a transaction that the atomic block rolls back, as any other.
    with pytest.raises(Exception, match="division by zero"), transaction.atomic():
        sql._send([("UPDATE accounts_organization SET name = %s WHERE id = %s", ["Lost", org.pk]),
                   ("SELECT 1 / %s::int", [0])])
    assert Organization.objects.get(pk=org.pk).name == "Kept"
    assert sql.fetch_many([("SELECT %s::int", [5]), ("SELECT %s::int", [6])]) == [[(5,)], [(6,)]]


def _every_model_field():
    from django.apps import apps

    return [field for model in apps.get_models() for field in model._meta.concrete_fields]


def test_a_plain_value_goes_to_the_database_as_the_orm_would_send_it(db):
    # config.sql skips get_db_prep_save where it would make nothing new of the value; the driver
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
                    sql._db_value(field, value, connection)
                continue
            fast = sql._db_value(field, value, connection)
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
            assert sql._db_value(created, naive, connection) is not naive


def test_a_batch_reads_timestamps_as_django_would(postgres):
    # A batch reads timestamptz with psycopg's own loader only where that gives what Django's loader
    # gives: Django's zone and the session's both UTC.
    import datetime as dt

    from django.db import transaction

    query = [("SELECT %s::timestamptz", ["2026-01-01T00:00:00+02:00"]), ("SELECT now()", [])]
    [[(moment,)], _now] = sql.fetch_many(query)
    assert moment == dt.datetime(2025, 12, 31, 22, 0, tzinfo=dt.UTC) and moment.tzinfo is dt.UTC
    assert sql._utc(postgres, postgres.connection)
    with transaction.atomic():
        with postgres.cursor() as cursor:
            cursor.execute("SET LOCAL TIME ZONE 'Asia/Kathmandu'")
        assert not sql._utc(postgres, postgres.connection)
        [[(moment,)], _now] = sql.fetch_many(query)
        with postgres.cursor() as cursor:
            cursor.execute(*query[0])
            [(as_the_orm_reads,)] = cursor.fetchall()
        # Django's loader, as the ORM reads (which takes the session for UTC, as Django sets it).
        assert moment == as_the_orm_reads and moment.tzinfo is as_the_orm_reads.tzinfo
        assert moment != dt.datetime(2025, 12, 31, 22, 0, tzinfo=dt.UTC)  # psycopg's would differ here
