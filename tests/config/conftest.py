"""The engine tests' fixtures, shared: people, agents, publishing."""

from tests.runs import conftest as engine_fixtures

agent = engine_fixtures.agent
make_agent = engine_fixtures.make_agent
make_person = engine_fixtures.make_person
org = engine_fixtures.org
publish = engine_fixtures.publish
