"""config.sql builds the same model instances the ORM would, from the same rows."""

import pytest
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
