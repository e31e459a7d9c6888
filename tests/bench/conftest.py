"""The runs tests' fixtures, for the benchmark's stand-in for base.sql."""

from tests.runs.conftest import agent, make_agent, make_person, org, person_caller, publish  # noqa: F401
