from tests.runs.conftest import agent, make_agent, make_person, org, other_org, person_caller, publish  # noqa: F401
