"""base.sql.optimistic: a write read without a lock and applied by one statement only past its guard."""

import pytest
from django.db import connection, transaction

from accounts.models import Agent, Organization
from base import sql

pytestmark = pytest.mark.postgres


@pytest.fixture
def agent(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("optimistic writes need PostgreSQL's data-modifying WITH (DATABASE_URL is not PostgreSQL)")
    org = Organization.objects.create(slug="cas-org", name="CAS org")
    return Agent.objects.create(organization=org, name="first")


def _write(agent, *, read_name: str, new_name: str, orgs=(), after=None):
    """Rename `agent` if its name is still `read_name`, inserting `orgs` with it; `after` runs once applied."""
    with sql.optimistic(), sql.deferred():
        sql.guard(Agent, agent.pk, {"name": new_name}, {"name": read_name})
        for slug in orgs:
            sql.insert_later(Organization(slug=slug, name=slug.upper()))
        if after:
            sql.on_commit(after)


def test_a_write_past_its_guard_applies_every_part_without_a_transaction_block(agent):
    done = []
    _write(agent, read_name="first", new_name="second", orgs=["b-org", "a-org"], after=lambda: done.append(1))
    assert Agent.objects.get(pk=agent.pk).name == "second"
    # Rows of one table go as one INSERT, keyed in the order written, each value cast to its column.
    added = list(Organization.objects.filter(slug__in=["a-org", "b-org"]).order_by("pk"))
    assert [o.slug for o in added] == ["b-org", "a-org"] and all(o.created_at for o in added)
    assert done == [1]
    assert not connection.in_atomic_block and connection.get_autocommit()


def test_a_guard_that_finds_its_row_moved_writes_nothing_and_runs_no_callback(agent):
    Agent.objects.filter(pk=agent.pk).update(name="moved")  # another write came between
    done = []
    with pytest.raises(sql.Moved):
        _write(agent, read_name="first", new_name="second", orgs=["lost-org"], after=lambda: done.append(1))
    assert Agent.objects.get(pk=agent.pk).name == "moved"
    assert not Organization.objects.filter(slug="lost-org").exists()
    assert done == []


def test_two_writers_that_read_the_same_row_apply_once(agent):
    _write(agent, read_name="first", new_name="by-one", orgs=["one-org"])
    with pytest.raises(sql.Moved):
        _write(agent, read_name="first", new_name="by-two", orgs=["two-org"])
    assert Agent.objects.get(pk=agent.pk).name == "by-one"
    assert list(Organization.objects.filter(slug__in=["one-org", "two-org"]).values_list("slug", flat=True)) == [
        "one-org"
    ]


def test_a_write_sent_at_once_or_a_lock_is_refused_before_it_reaches_the_database(agent):
    with pytest.raises(sql.NeedsLock), sql.optimistic(), sql.deferred():
        Organization.objects.create(slug="at-once", name="At once")
    assert not Organization.objects.filter(slug="at-once").exists()
    with pytest.raises(sql.NeedsLock), sql.optimistic(), sql.deferred():
        sql.fetch_many([(sql.select_text(Agent, "t.id = %s", "FOR UPDATE"), [agent.pk]),
                        (sql.select_text(Agent, "t.id = %s"), [agent.pk])])
    # changes with nothing to guard them
    with pytest.raises(sql.NeedsLock), sql.optimistic(), sql.deferred():
        sql.insert_later(Organization(slug="unguarded", name="Unguarded"))
    assert not Organization.objects.filter(slug="unguarded").exists()
    Organization.objects.create(slug="after", name="After")  # the connection is as it was


def test_a_guard_of_rows_found_guards_new_rows_only(agent):
    # It finds a row without comparing it to anything read: an UPDATE standing on it could lose a write.
    found = ("SELECT 1 FROM accounts_agent WHERE id = %s", [agent.pk])
    with pytest.raises(sql.NeedsLock, match="changed a row"), sql.optimistic(new_rows=True), sql.deferred():
        sql.guard_found(*found)
        sql.insert_later(Organization(slug="beside", name="Beside"))
        sql.update(Agent, agent.pk, {"name": "unguarded"})
    assert Agent.objects.get(pk=agent.pk).name == "first"
    assert not Organization.objects.filter(slug="beside").exists()
    with sql.optimistic(new_rows=True), sql.deferred():
        sql.guard_found(*found)
        sql.insert_later(Organization(slug="beside", name="Beside"))
    assert Organization.objects.filter(slug="beside").exists()


def test_reads_go_through_and_an_unguardable_statement_is_refused_at_the_end(agent):
    with pytest.raises(sql.NeedsLock, match="no guarded form"), sql.optimistic(), sql.deferred():
        assert Agent.objects.get(pk=agent.pk).name == "first"
        sql.guard(Agent, agent.pk, {"name": "second"}, {"name": "first"})
        sql.execute("DELETE FROM accounts_agent WHERE id = %s", [agent.pk])
    assert Agent.objects.get(pk=agent.pk).name == "first"


def test_inside_a_callers_transaction_it_keeps_that_transaction_usable_and_waits_for_its_commit(agent):
    done = []
    with transaction.atomic():
        with pytest.raises(sql.NeedsLock), sql.optimistic(), sql.deferred():
            Organization.objects.create(slug="refused", name="Refused")
        _write(agent, read_name="first", new_name="second", after=lambda: done.append(1))
        assert done == []  # applied in the caller's transaction, which has not committed
        assert Agent.objects.get(pk=agent.pk).name == "second"
    assert done == [1]
    assert not Organization.objects.filter(slug="refused").exists()


def test_outside_optimistic_a_guard_is_a_plain_update(agent):
    with transaction.atomic(), sql.deferred():
        sql.guard(Agent, agent.pk, {"name": "plain"}, {"name": "not what it is"})  # the lock guards it
    assert Agent.objects.get(pk=agent.pk).name == "plain"


def _answer_without_writing(agent, *, read_name: str, error: Exception | None = None):
    """An optimistic write that read `agent` as named `read_name` and answers without a guard."""
    with sql.optimistic(), sql.deferred():
        sql.expect(Agent, agent.pk, {"name": read_name})
        if error is not None:
            raise error


def test_an_answer_without_a_guard_stands_only_on_rows_still_as_read(agent):
    # Reads in autocommit are not one snapshot: an error or a no-op decided on a row that moved since
    # could mix two moments, so the write is read and decided again (Moved) instead of answered.
    _answer_without_writing(agent, read_name="first")
    with pytest.raises(LookupError):
        _answer_without_writing(agent, read_name="first", error=LookupError("refused"))
    Agent.objects.filter(pk=agent.pk).update(name="moved")  # another write came between the reads
    with pytest.raises(sql.Moved):
        _answer_without_writing(agent, read_name="first")
    with pytest.raises(sql.Moved):
        _answer_without_writing(agent, read_name="first", error=LookupError("refused"))
    assert Agent.objects.get(pk=agent.pk).name == "moved"
