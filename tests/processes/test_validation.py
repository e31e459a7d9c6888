"""Validation of PROCESS.md frontmatter: the fixtures, one refused document per rule, and several at once."""

import math
import textwrap

import pytest

from processes.management.commands.demo_data import find_fixtures
from processes.parsing import parse_process
from processes.spec import FIELD_TYPES, KIND_KEYS, NAME_PATTERN, STEP_ID_PATTERN, parse_duration
from processes.validation import (
    profiles_used,
    required_systems,
    role_names,
    validate_process,
)

FIXTURES = find_fixtures()  # the repository's copy, or $AGENTPROCESS_FIXTURES
PROFILE_FIXTURES = {"major-incident": "parallel-1", "vendor-check": "check-1"}
CORE_FIXTURES = sorted(path.name for path in FIXTURES.iterdir() if path.name not in PROFILE_FIXTURES)
HEAD = "name: x\ndescription: d\n"


def load(text: str, *, head: bool = True) -> dict:
    """Parse a frontmatter written as YAML, failing the test if the parser refuses it."""
    yaml_text = (HEAD if head else "") + textwrap.dedent(text).strip("\n") + "\n"
    result = parse_process(f"---\n{yaml_text}---\n")
    assert result.issues == []
    return result.frontmatter


def fixture(name: str) -> dict:
    """Parse one conformance fixture."""
    result = parse_process((FIXTURES / name / "PROCESS.md").read_bytes())
    assert result.issues == []
    return result.frontmatter


# conformance/README.md: the ten core fixtures publish; the two profile fixtures need their profile.


def test_there_are_ten_core_fixtures():
    assert len(CORE_FIXTURES) == 10


@pytest.mark.parametrize("name", CORE_FIXTURES)
def test_core_fixture_is_valid_without_profiles(name):
    assert validate_process(fixture(name), folder_name=name, profiles=frozenset()) == []


@pytest.mark.parametrize(("name", "profile"), sorted(PROFILE_FIXTURES.items()))
def test_profile_fixture_is_refused_naming_its_profile(name, profile):
    issues = validate_process(fixture(name), folder_name=name, profiles=frozenset())
    assert len(issues) == 1
    assert profile in issues[0]
    assert "which this server does not offer" in issues[0]


@pytest.mark.parametrize(("name", "profile"), sorted(PROFILE_FIXTURES.items()))
def test_profile_fixture_is_valid_with_its_profile(name, profile):
    assert validate_process(fixture(name), folder_name=name, profiles=frozenset({profile})) == []


def test_profile_fixtures_exact_refusals():
    assert validate_process(fixture("major-incident")) == [
        "steps[1] (respond).parallel: needs the parallel-1 profile, which this server does not offer"
    ]
    assert validate_process(
        fixture("vendor-check"), check_unavailable_reason="no evaluator is configured"
    ) == [
        "steps[0] (check_vendor).check: needs the check-1 profile, which this server does not offer "
        "(no evaluator is configured)"
    ]


def test_fixtures_with_both_profiles_enabled():
    both = frozenset({"parallel-1", "check-1"})
    for name in [*CORE_FIXTURES, *PROFILE_FIXTURES]:
        assert validate_process(fixture(name), folder_name=name, profiles=both) == [], name


# spec §4.2: a process that needs a tool the server does not offer is refused.


def test_file_evidence_needs_upload():
    issues = validate_process(fixture("contract-review"), tools=frozenset({"describe"}))
    assert issues == [
        "steps[0] (prepare).evidence: file evidence needs the upload tool, which this server does not offer"
    ]


def test_wait_for_needs_send_event():
    tools = frozenset({"upload"})
    assert validate_process(fixture("customer-offboarding"), tools=tools) == [
        "steps[4] (settlement_event).wait_for: needs the send_event tool, which this server does not offer"
    ]


def case(case_id: str, text: str, expected: str, *, head: bool = True, **options):
    """Build one row of the refusal table."""
    return pytest.param(text, head, options, expected, id=case_id)


END = "  - {id: end, finish: done}"
P1 = {"profiles": frozenset({"parallel-1"})}
C1 = {"profiles": frozenset({"check-1"})}


def fork(branches: str, *, before: str = "", after: str = "") -> str:
    """Write a process with a parallel step 'fork' whose branches are given, then review and end."""
    return (
        "steps:\n"
        + (before or "  - {id: start, agent: Open the bridge.}\n")
        + "  - {id: fork, parallel: [left, right], next: review}\n"
        + textwrap.indent(textwrap.dedent(branches).strip("\n"), "  ")
        + "\n"
        + (after or "  - {id: review, person: lead, approve: Close it., on_reject: fork}\n")
        + END
    )


BRANCHES = """
  - {id: left, agent: Do the left part., next: join}
  - {id: right, agent: Do the right part., next: join}
"""


def ask(question: str) -> str:
    """Write a one-step process whose agent step carries the given check."""
    return (
        "steps:\n  - id: a\n    agent: Do it.\n    check:\n"
        + textwrap.indent(textwrap.dedent(question).strip("\n"), "      ")
        + "\n"
        + END
    )


REFUSALS = [
    # spec §2.1: name
    case("name-missing", f"description: d\nsteps:\n{END}", "name: required", head=False),
    case(
        "name-not-string",
        f"name: 5\ndescription: d\nsteps:\n{END}",
        "name: must be a string, not a number",
        head=False,
    ),
    case(
        "name-pattern",
        f"name: Foo_Bar\ndescription: d\nsteps:\n{END}",
        "name: 'Foo_Bar' must be lowercase letters and digits in words joined by single hyphens",
        head=False,
    ),
    case(
        "name-double-hyphen",
        f"name: a--b\ndescription: d\nsteps:\n{END}",
        "name: 'a--b' must be lowercase letters and digits in words joined by single hyphens",
        head=False,
    ),
    case(
        "name-too-long",
        f"name: {'a' * 65}\ndescription: d\nsteps:\n{END}",
        "name: is longer than 64 characters",
        head=False,
    ),
    case(
        "name-not-folder",
        f"steps:\n{END}",
        "name: 'x' does not match the folder name 'supplier'",
        folder_name="supplier",
    ),
    # spec §2.1: description and steps
    case("description-missing", f"name: x\nsteps:\n{END}", "description: required", head=False),
    case(
        "description-blank",
        f"name: x\ndescription: '  '\nsteps:\n{END}",
        "description: must not be empty",
        head=False,
    ),
    case(
        "description-not-string",
        f"name: x\ndescription: [a]\nsteps:\n{END}",
        "description: must be a string, not a list",
        head=False,
    ),
    case("steps-missing", "inputs: {}", "steps: required"),
    case("steps-empty", "steps: []", "steps: must hold at least one step"),
    case("steps-not-list", "steps: go", "steps: must be a list of steps, not a string"),
    # spec §2.1: unknown fields anywhere are refused (the schema's extras are not in the spec)
    case(
        "unknown-data-sources",
        f"data_sources: [{{key: crm, operations: [read]}}]\nsteps:\n{END}",
        "data_sources: unknown field; the frontmatter has only name, description, inputs, steps and requires",
    ),
    case(
        "unknown-emails",
        f"emails: {{templates: [a]}}\nsteps:\n{END}",
        "emails: unknown field; the frontmatter has only name, description, inputs, steps and requires",
    ),
    case(
        "unknown-files",
        f"files: true\nsteps:\n{END}",
        "files: unknown field; the frontmatter has only name, description, inputs, steps and requires",
    ),
    case(
        "merge-key-is-plain-key",
        f"<<: {{name: y}}\nsteps:\n{END}",
        "'<<': unknown field; the frontmatter has only name, description, inputs, steps and requires",
    ),
    # implementing.md Step 1: requires has only systems, names matching the name pattern, each once
    case(
        "requires-not-mapping",
        f"requires: [crm]\nsteps:\n{END}",
        "requires: must be a mapping with systems, not a list",
    ),
    case(
        "requires-unknown",
        f"requires: {{systems: [crm], roles: [a]}}\nsteps:\n{END}",
        "requires.roles: unknown field; requires has only systems",
    ),
    case("requires-systems-missing", f"requires: {{}}\nsteps:\n{END}", "requires.systems: required"),
    case(
        "requires-systems-not-list",
        f"requires: {{systems: crm}}\nsteps:\n{END}",
        "requires.systems: must be a list of system names, not a string",
    ),
    case(
        "requires-systems-empty",
        f"requires: {{systems: []}}\nsteps:\n{END}",
        "requires.systems: must name at least one system",
    ),
    case(
        "requires-system-pattern",
        f"requires: {{systems: [Sanctions]}}\nsteps:\n{END}",
        "requires.systems[0]: 'Sanctions' must be lowercase letters and digits in words joined by single "
        "hyphens, at most 64 characters",
    ),
    case(
        "requires-system-not-string",
        f"requires: {{systems: [7]}}\nsteps:\n{END}",
        "requires.systems[0]: must be a string, not a number",
    ),
    case(
        "requires-system-twice",
        f"requires: {{systems: [crm, erp, crm]}}\nsteps:\n{END}",
        "requires.systems[2]: 'crm' is listed more than once",
    ),
    # spec §2.3: fields
    case(
        "inputs-not-mapping",
        f"inputs: [a]\nsteps:\n{END}",
        "inputs: must be a mapping of field names to types, not a list",
    ),
    case(
        "field-unknown-type",
        f"inputs: {{a: money}}\nsteps:\n{END}",
        "inputs.a: 'money' is not a type; the types are string, number, boolean, date, datetime, list, object "
        "and person",
    ),
    case(
        "field-not-type-or-object",
        f"inputs: {{a: 5}}\nsteps:\n{END}",
        "inputs.a: must be a type name or a field object with type, not a number",
    ),
    case(
        "field-name-empty", f"inputs: {{'': string}}\nsteps:\n{END}", "inputs: field names must not be empty"
    ),
    case(
        "field-type-missing", f"inputs: {{a: {{description: x}}}}\nsteps:\n{END}", "inputs.a.type: required"
    ),
    case(
        "field-type-unknown",
        f"inputs: {{amount: {{type: int}}}}\nsteps:\n{END}",
        "inputs.amount.type: 'int' is not a type; the types are string, number, boolean, date, datetime, list, "
        "object and person",
    ),
    case(
        "field-unknown-key",
        f"inputs: {{a: {{type: string, min: 1}}}}\nsteps:\n{END}",
        "inputs.a.min: unknown field; a field has only type, description, optional, one_of and items",
    ),
    case(
        "field-optional-yes-is-a-string",
        f"inputs: {{a: {{type: string, optional: yes}}}}\nsteps:\n{END}",
        "inputs.a.optional: must be true or false, not 'yes'",
    ),
    case(
        "field-description-not-string",
        f"inputs: {{a: {{type: string, description: 5}}}}\nsteps:\n{END}",
        "inputs.a.description: must be a string, not a number",
    ),
    case(
        "one-of-wrong-type-number",
        f"inputs: {{a: {{type: number, one_of: [1, two]}}}}\nsteps:\n{END}",
        "inputs.a.one_of[1]: 'two' is not a number",
    ),
    case(
        "one-of-wrong-type-string",
        f"inputs: {{a: {{type: string, one_of: [low, true]}}}}\nsteps:\n{END}",
        "inputs.a.one_of[1]: true is not a string",
    ),
    case(
        "one-of-wrong-type-boolean",
        f"inputs: {{a: {{type: boolean, one_of: [true, no]}}}}\nsteps:\n{END}",
        "inputs.a.one_of[1]: 'no' is not a boolean",
    ),
    case(
        "one-of-on-date",
        f"inputs: {{a: {{type: date, one_of: [2026-01-01]}}}}\nsteps:\n{END}",
        "inputs.a.one_of: allowed only on string, number and boolean fields, not on a date field",
    ),
    case(
        "one-of-empty",
        f"inputs: {{a: {{type: string, one_of: []}}}}\nsteps:\n{END}",
        "inputs.a.one_of: must hold at least one value",
    ),
    case(
        "one-of-not-list",
        f"inputs: {{a: {{type: string, one_of: low}}}}\nsteps:\n{END}",
        "inputs.a.one_of: must be a non-empty list of allowed values, not a string",
    ),
    case(
        "items-not-on-list",
        f"inputs: {{a: {{type: string, items: string}}}}\nsteps:\n{END}",
        "inputs.a.items: allowed only on list fields, not on a string field",
    ),
    case(
        "items-unknown-type",
        f"inputs: {{a: {{type: list, items: money}}}}\nsteps:\n{END}",
        "inputs.a.items: 'money' is not a type; the types are string, number, boolean, date, datetime, list, "
        "object and person",
    ),
    case(
        "items-nested-field-object",
        f"inputs: {{a: {{type: list, items: {{type: list, items: {{type: text}}}}}}}}\nsteps:\n{END}",
        "inputs.a.items.items.type: 'text' is not a type; the types are string, number, boolean, date, "
        "datetime, list, object and person",
    ),
    case(
        "output-field-type",
        "steps:\n  - {id: a, agent: Do it., output: {total: money}}\n" + END,
        "steps[0] (a).output.total: 'money' is not a type; the types are string, number, boolean, date, "
        "datetime, list, object and person",
    ),
    case(
        "output-not-mapping",
        "steps:\n  - {id: a, agent: Do it., output: [total]}\n" + END,
        "steps[0] (a).output: must be a mapping of field names to types, not a list",
    ),
    # spec §2.2: step shape and ids
    case(
        "step-not-mapping",
        f"steps:\n  - draft\n{END}",
        "steps[0]: must be a mapping with an id and one kind key, not a string",
    ),
    case("step-id-missing", f"steps:\n  - {{agent: Do it.}}\n{END}", "steps[0].id: required"),
    case(
        "step-id-not-string",
        f"steps:\n  - {{id: 5, agent: Do it.}}\n{END}",
        "steps[0].id: must be a string, not a number",
    ),
    case(
        "step-id-pattern",
        f"steps:\n  - {{id: Draft, agent: Do it.}}\n{END}",
        "steps[0] (Draft).id: 'Draft' must start with a lowercase letter and hold only lowercase letters, "
        "digits, _ and -, at most 64 characters",
    ),
    case(
        "step-id-too-long",
        f"steps:\n  - {{id: {'a' * 65}, agent: Do it.}}\n{END}",
        f"steps[0] ({'a' * 64}…).id: '{'a' * 40}…' must start with a lowercase letter and hold only lowercase "
        "letters, digits, _ and -, at most 64 characters",
    ),
    case(
        "step-id-duplicate",
        "steps:\n  - {id: a, agent: Do it.}\n  - {id: a, agent: Again.}\n" + END,
        "steps[1] (a).id: 'a' is already the id of steps[0] (a)",
    ),
    case(
        "step-no-kind",
        f"steps:\n  - {{id: a, next: end}}\n{END}",
        "steps[0] (a): needs one kind key: agent, task, approve, wait, wait_until, wait_for or finish",
    ),
    case(
        "step-two-kinds",
        "steps:\n  - {id: a, agent: Do it., finish: done}\n",
        "steps[0] (a): has 2 kind keys (agent, finish); a step has exactly one",
    ),
    case(
        "step-unknown-key",
        f"steps:\n  - {{id: a, agent: Do it., retries: 3}}\n{END}",
        "steps[0] (a).retries: unknown field",
    ),
    # spec §2.2: kind values
    case(
        "agent-blank",
        f"steps:\n  - {{id: a, agent: ''}}\n{END}",
        "steps[0] (a).agent: must not be blank",
    ),
    case(
        "task-not-string",
        f"steps:\n  - {{id: a, person: clerk, task: [do, it]}}\n{END}",
        "steps[0] (a).task: must be the instructions, a non-empty string, not a list",
    ),
    case(
        "approve-not-string",
        f"steps:\n  - {{id: a, person: boss, approve: 5}}\n{END}",
        "steps[0] (a).approve: must be what is being approved, a non-empty string, not a number",
    ),
    case(
        "finish-null",
        "steps:\n  - {id: end, finish: null}\n",
        "steps[0] (end).finish: must be the run's outcome, a non-empty string, not null",
    ),
    case(
        "wait-words",
        f"steps:\n  - {{id: w, wait: 5 minutes}}\n{END}",
        "steps[0] (w).wait: '5 minutes' is not a duration; write a whole number from 1 followed by m, h or d, "
        "like 30m",
    ),
    case(
        "wait-zero",
        f"steps:\n  - {{id: w, wait: 0m}}\n{END}",
        "steps[0] (w).wait: '0m' is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
    ),
    case(
        "wait-number",
        f"steps:\n  - {{id: w, wait: 30}}\n{END}",
        "steps[0] (w).wait: 30 is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
    ),
    case(
        "wait-weeks",
        f"steps:\n  - {{id: w, wait: 2w}}\n{END}",
        "steps[0] (w).wait: '2w' is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
    ),
    case(
        "due-too-long",
        f"steps:\n  - {{id: a, agent: Do it., due: 99999999d}}\n{END}",
        "steps[0] (a).due: '99999999d' is longer than 100 years",
    ),
    case(
        "wait-until-not-path",
        f"inputs: {{start: datetime}}\nsteps:\n  - {{id: w, wait_until: start}}\n{END}",
        "steps[0] (w).wait_until: must be a path to a datetime field, inputs.<field> or "
        "steps.<id>.output.<field>, not 'start'",
    ),
    case(
        "wait-until-undeclared",
        f"steps:\n  - {{id: w, wait_until: inputs.start}}\n{END}",
        "steps[0] (w).wait_until: 'inputs.start' names no declared input field 'start'",
    ),
    case(
        "wait-until-date-not-datetime",
        f"inputs: {{start: date}}\nsteps:\n  - {{id: w, wait_until: inputs.start}}\n{END}",
        "steps[0] (w).wait_until: 'inputs.start' is a date field, not a datetime field",
    ),
    case(
        "wait-until-no-such-step",
        f"steps:\n  - {{id: w, wait_until: steps.plan.output.at}}\n{END}",
        "steps[0] (w).wait_until: 'steps.plan.output.at' names no step 'plan'",
    ),
    case(
        "wait-until-no-such-output",
        "steps:\n  - {id: plan, agent: Plan., output: {when: datetime}}\n"
        f"  - {{id: w, wait_until: steps.plan.output.at}}\n{END}",
        "steps[1] (w).wait_until: 'steps.plan.output.at': step 'plan' declares no output field 'at'",
    ),
    case(
        "wait-for-event-name",
        f"steps:\n  - {{id: w, wait_for: Invoice Paid}}\n{END}",
        "steps[0] (w).wait_for: 'Invoice Paid' is not an event name; event names start with a lowercase "
        "letter and hold only lowercase letters, digits, _ and -",
    ),
    # spec §2.2: optional keys only where the kind allows them
    case(
        "output-on-approve",
        f"steps:\n  - {{id: a, person: boss, approve: Approve it., output: {{x: string}}}}\n{END}",
        "steps[0] (a).output: not allowed on approve steps; it applies to agent and task steps",
    ),
    case(
        "evidence-on-wait",
        f"steps:\n  - {{id: w, wait: 1h, evidence: [link]}}\n{END}",
        "steps[0] (w).evidence: not allowed on wait steps; it applies to agent and task steps",
    ),
    case(
        "person-on-agent",
        f"steps:\n  - {{id: a, agent: Do it., person: clerk}}\n{END}",
        "steps[0] (a).person: not allowed on agent steps; it applies to task and approve steps",
    ),
    case(
        "on-reject-on-task",
        f"steps:\n  - {{id: a, person: clerk, task: Do it., on_reject: a}}\n{END}",
        "steps[0] (a).on_reject: not allowed on task steps; it applies to approve steps",
    ),
    case(
        "due-on-wait",
        f"steps:\n  - {{id: w, wait: 1h, due: 2h}}\n{END}",
        "steps[0] (w).due: not allowed on wait steps; it applies to agent, task and approve steps",
    ),
    case(
        "timeout-on-wait-until",
        f"inputs: {{at: datetime}}\nsteps:\n  - {{id: w, wait_until: inputs.at, timeout: 1d}}\n{END}",
        "steps[0] (w).timeout: not allowed on wait_until steps; it applies to wait_for steps",
    ),
    case(
        "on-timeout-on-agent",
        f"steps:\n  - {{id: a, agent: Do it., on_timeout: end}}\n{END}",
        "steps[0] (a).on_timeout: not allowed on agent steps; it applies to wait_for steps",
    ),
    case(
        "finish-with-next",
        "steps:\n  - {id: end, finish: done, next: end}\n",
        "steps[0] (end).next: a finish step has no next",
    ),
    case(
        "task-needs-person",
        f"steps:\n  - {{id: t, task: Do it.}}\n{END}",
        "steps[0] (t).person: required on task steps",
    ),
    case(
        "approve-needs-person",
        f"steps:\n  - {{id: a, approve: Approve it.}}\n{END}",
        "steps[0] (a).person: required on approve steps",
    ),
    case(
        "timeout-bad-duration",
        f"steps:\n  - {{id: w, wait_for: paid, timeout: soon}}\n{END}",
        "steps[0] (w).timeout: 'soon' is not a duration; write a whole number from 1 followed by m, h or d, "
        "like 30m",
    ),
    case(
        "due-bad-duration",
        f"steps:\n  - {{id: a, agent: Do it., due: 1.5h}}\n{END}",
        "steps[0] (a).due: '1.5h' is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
    ),
    # spec §5: evidence kinds
    case(
        "evidence-unknown-kind",
        f"steps:\n  - {{id: a, agent: Do it., evidence: [pdf]}}\n{END}",
        "steps[0] (a).evidence[0]: 'pdf' is not an evidence kind; use file or link",
    ),
    case(
        "evidence-twice",
        f"steps:\n  - {{id: a, agent: Do it., evidence: [link, file, link]}}\n{END}",
        "steps[0] (a).evidence[2]: 'link' is listed more than once",
    ),
    case(
        "evidence-not-list",
        f"steps:\n  - {{id: a, agent: Do it., evidence: file}}\n{END}",
        "steps[0] (a).evidence: must be a list of evidence kinds (file, link), not a string",
    ),
    case(
        "evidence-file-without-upload",
        f"steps:\n  - {{id: a, agent: Do it., evidence: [file]}}\n{END}",
        "steps[0] (a).evidence: file evidence needs the upload tool, which this server does not offer",
        tools=frozenset({"describe", "send_event"}),
    ),
    case(
        "wait-for-without-send-event",
        f"steps:\n  - {{id: w, wait_for: paid}}\n{END}",
        "steps[0] (w).wait_for: needs the send_event tool, which this server does not offer",
        tools=frozenset({"upload"}),
    ),
    # spec §2.2: person values
    case(
        "person-not-string",
        f"steps:\n  - {{id: t, person: [a], task: Do it.}}\n{END}",
        "steps[0] (t).person: must be a role name, initiator, or a path to a person field, not a list",
    ),
    case(
        "person-blank",
        f"steps:\n  - {{id: t, person: ' ', task: Do it.}}\n{END}",
        "steps[0] (t).person: must not be blank",
    ),
    case(
        "person-path-shape",
        f"steps:\n  - {{id: t, person: finance.approver, task: Do it.}}\n{END}",
        "steps[0] (t).person: must be a path to a person field, inputs.<field> or steps.<id>.output.<field>, "
        "not 'finance.approver'; role names cannot contain dots",
    ),
    case(
        "person-path-undeclared",
        f"steps:\n  - {{id: t, person: inputs.manager, task: Do it.}}\n{END}",
        "steps[0] (t).person: 'inputs.manager' names no declared input field 'manager'",
    ),
    case(
        "person-path-not-person",
        f"inputs: {{manager: string}}\nsteps:\n  - {{id: t, person: inputs.manager, task: Do it.}}\n{END}",
        "steps[0] (t).person: 'inputs.manager' is a string field, not a person field",
    ),
    case(
        "person-output-path-not-person",
        "steps:\n  - {id: plan, agent: Plan., output: {buddy: {type: string}}}\n"
        f"  - {{id: t, person: steps.plan.output.buddy, task: Do it.}}\n{END}",
        "steps[1] (t).person: 'steps.plan.output.buddy' is a string field, not a person field",
    ),
    # spec §2.2: references name existing steps
    case(
        "next-no-such-step",
        f"steps:\n  - {{id: a, agent: Do it., next: ned}}\n{END}",
        "steps[0] (a).next: no step named 'ned'",
    ),
    case(
        "next-not-string",
        f"steps:\n  - {{id: a, agent: Do it., next: 5}}\n{END}",
        "steps[0] (a).next: must be a step id or a list of routes, not a number",
    ),
    case(
        "on-reject-no-such-step",
        "steps:\n  - {id: draft, agent: Draft.}\n  - {id: b, agent: B.}\n  - {id: c, agent: C.}\n"
        f"  - {{id: approve, person: boss, approve: Approve it., on_reject: draftt}}\n{END}",
        "steps[3] (approve).on_reject: no step named 'draftt'",
    ),
    case(
        "on-reject-not-string",
        f"steps:\n  - {{id: a, person: boss, approve: Approve it., on_reject: [a]}}\n{END}",
        "steps[0] (a).on_reject: must be a step id, not a list",
    ),
    case(
        "on-timeout-no-such-step",
        f"steps:\n  - {{id: w, wait_for: paid, timeout: 1d, on_timeout: chase}}\n{END}",
        "steps[0] (w).on_timeout: no step named 'chase'",
    ),
    # spec §2.2 and §3.2: route lists
    case(
        "routes-on-approve",
        "steps:\n  - {id: a, person: boss, approve: Approve it., next: [b, end]}\n  - {id: b, agent: B.}\n"
        + END,
        "steps[0] (a).next: a list of routes is allowed only on agent and task steps, not on approve steps",
    ),
    case(
        "routes-on-wait",
        "steps:\n  - {id: w, wait: 1h, next: [b, end]}\n  - {id: b, agent: B.}\n" + END,
        "steps[0] (w).next: a list of routes is allowed only on agent and task steps, not on wait steps",
    ),
    case(
        "routes-one",
        f"steps:\n  - {{id: a, agent: Do it., next: [end]}}\n{END}",
        "steps[0] (a).next: a list of routes needs two or more routes",
    ),
    case(
        "route-when-blank",
        "steps:\n  - {id: a, agent: Do it., next: [{to: b, when: ' '}, end]}\n  - {id: b, agent: B.}\n" + END,
        "steps[0] (a).next[0].when: must not be blank",
    ),
    case(
        "route-when-missing",
        "steps:\n  - {id: a, agent: Do it., next: [{to: b}, end]}\n  - {id: b, agent: B.}\n" + END,
        "steps[0] (a).next[0].when: required; write the route as a plain step id if it needs no condition",
    ),
    case(
        "route-when-not-string",
        "steps:\n  - {id: a, agent: Do it., next: [{to: b, when: 5}, end]}\n  - {id: b, agent: B.}\n" + END,
        "steps[0] (a).next[0].when: must be words saying when to take this route, not a number",
    ),
    case(
        "route-to-missing",
        "steps:\n  - {id: a, agent: Do it., next: [{when: Always}, end]}\n" + END,
        "steps[0] (a).next[0].to: required",
    ),
    case(
        "route-unknown-key",
        "steps:\n  - {id: a, agent: Do it., next: [{to: b, when: x, if: y}, end]}\n  - {id: b, agent: B.}\n"
        + END,
        "steps[0] (a).next[0].if: unknown field; a route has only to and when",
    ),
    case(
        "route-twice",
        "steps:\n  - {id: a, agent: Do it., next: [end, {to: end, when: Again}]}\n" + END,
        "steps[0] (a).next[1]: 'end' is already a route of this step",
    ),
    case(
        "route-no-such-step",
        f"steps:\n  - {{id: a, agent: Do it., next: [end, nope]}}\n{END}",
        "steps[0] (a).next[1]: no step named 'nope'",
    ),
    case(
        "route-wrong-type",
        f"steps:\n  - {{id: a, agent: Do it., next: [end, 5]}}\n{END}",
        "steps[0] (a).next[1]: must be a step id or a mapping with to and when, not a number",
    ),
    # spec §2.2: reachability, the last step, no loops
    case(
        "unreachable",
        "steps:\n  - {id: a, agent: Do it., next: end}\n  - {id: lost, agent: Never.}\n" + END,
        "steps[1] (lost): is not reachable from the first step",
    ),
    case(
        "last-step-not-finish",
        "steps:\n  - {id: a, agent: Do it.}\n",
        "steps[0] (a): is the last step and not a finish, so it must name next",
    ),
    case(
        "loop-next",
        "steps:\n  - {id: a, agent: A.}\n  - {id: b, agent: B., next: a}\n" + END,
        "steps[1] (b).next: going to 'a' makes a loop; only on_reject may go back",
    ),
    case(
        "loop-self",
        "steps:\n  - {id: a, agent: A., next: [a, end]}\n" + END,
        "steps[0] (a).next[0]: going to 'a' makes a loop; only on_reject may go back",
    ),
    case(
        "loop-on-timeout",
        "steps:\n  - {id: a, agent: A.}\n  - {id: w, wait_for: paid, timeout: 1d, on_timeout: a}\n" + END,
        "steps[1] (w).on_timeout: going to 'a' makes a loop; only on_reject may go back",
    ),
    case(
        "loop-through-following-step",
        "steps:\n  - {id: a, agent: A., next: [c, b]}\n  - {id: b, agent: B.}\n  - {id: c, agent: C., next: b}\n"
        + END,
        "steps[1] (b): continuing to the following step 'c' makes a loop; only on_reject may go back",
    ),
    # parallel-1 §2, without the profile: one issue naming it
    case(
        "parallel-without-profile",
        fork(BRANCHES),
        "steps[1] (fork).parallel: needs the parallel-1 profile, which this server does not offer",
    ),
    case(
        "join-without-profile",
        "steps:\n  - {id: a, agent: A., next: join}\n" + END,
        "steps[0] (a).next: 'join' needs the parallel-1 profile, which this server does not offer",
    ),
    # parallel-1 §1 and §2, with the profile
    case(
        "parallel-one-entry",
        "steps:\n  - {id: fork, parallel: [left], next: end}\n  - {id: left, agent: L., next: join}\n" + END,
        "steps[0] (fork).parallel: must list two or more branch entries",
        **P1,
    ),
    case(
        "parallel-not-list",
        "steps:\n  - {id: fork, parallel: left, next: end}\n  - {id: left, agent: L., next: join}\n" + END,
        "steps[0] (fork).parallel: must be a list of two or more step ids, the branch entries, not a string",
        **P1,
    ),
    case(
        "parallel-no-such-entry",
        "steps:\n  - {id: fork, parallel: [left, rihgt], next: end}\n  - {id: left, agent: L., next: join}\n"
        + END,
        "steps[0] (fork).parallel[1]: no step named 'rihgt'",
        **P1,
    ),
    case(
        "parallel-entry-twice",
        "steps:\n  - {id: fork, parallel: [left, left], next: end}\n  - {id: left, agent: L., next: join}\n"
        + END,
        "steps[0] (fork).parallel[1]: 'left' is listed more than once",
        **P1,
    ),
    case(
        "parallel-lists-itself",
        "steps:\n  - {id: fork, parallel: [left, fork], next: end}\n  - {id: left, agent: L., next: join}\n"
        + END,
        "steps[0] (fork).parallel[1]: a parallel step cannot list itself",
        **P1,
    ),
    case(
        "parallel-takes-only-next",
        fork(BRANCHES).replace("next: review}", "next: review, due: 1h}"),
        "steps[1] (fork).due: a parallel step takes only next",
        **P1,
    ),
    case(
        "branch-step-names-next",
        fork("""
          - {id: left, agent: Do the left part.}
          - {id: right, agent: Do the right part., next: join}
        """),
        "steps[2] (left): is in a branch, so it must name next: a step of the branch or join",
        **P1,
    ),
    case(
        "branch-never-joins",
        fork("""
          - {id: left, agent: Do the left part., next: left_two}
          - {id: left_two, agent: More., next: left}
          - {id: right, agent: Do the right part., next: join}
        """),
        "steps[2] (left): never reaches join; every step in a branch must lead to join",
        **P1,
    ),
    case(
        "branch-to-finish",
        fork("""
          - {id: left, agent: Do the left part., next: end}
          - {id: right, agent: Do the right part., next: join}
        """),
        "steps[2] (left).next: a branch cannot contain the finish 'end'; end the branch with join",
        **P1,
    ),
    case(
        "branch-to-parallel-step",
        fork("""
          - {id: left, agent: Do the left part., next: [join, fork]}
          - {id: right, agent: Do the right part., next: join}
        """),
        "steps[2] (left).next[1]: a branch cannot go back to its parallel step 'fork'",
        **P1,
    ),
    case(
        "branch-nested-parallel",
        fork("""
          - {id: left, parallel: [right, other], next: join}
          - {id: right, agent: Do the right part., next: join}
          - {id: other, agent: Other., next: join}
        """),
        "steps[1] (fork).parallel[0]: a branch cannot contain the parallel step 'left'; parallel-1 does not nest",
        **P1,
    ),
    case(
        "branch-shared-step",
        fork("""
          - {id: left, agent: Do the left part., next: shared}
          - {id: right, agent: Do the right part., next: shared}
          - {id: shared, agent: Both., next: join}
        """),
        "steps[4] (shared): is in more than one branch (from 'left' and 'right')",
        **P1,
    ),
    case(
        "route-into-branch-from-outside",
        fork(BRANCHES, before="  - {id: start, agent: Open., next: [fork, right]}\n"),
        "steps[0] (start).next[1]: goes into the branch step 'right' (in the branch through "
        "steps[1] (fork).parallel[1]); only the parallel step starts a branch",
        **P1,
    ),
    case(
        "default-into-branch",
        fork(BRANCHES).replace(
            "{id: fork, parallel: [left, right], next: review}", "{id: fork, parallel: [left, right]}"
        ),
        "steps[1] (fork): continues by default into the branch step 'left'; name next",
        **P1,
    ),
    case(
        "on-reject-into-branch",
        fork(BRANCHES, after="  - {id: review, person: lead, approve: Close it., on_reject: right}\n"),
        "steps[4] (review).on_reject: cannot return into the branch step 'right'; return to the parallel step "
        "or before it",
        **P1,
    ),
    case(
        "on-reject-to-other-branch",
        fork("""
          - {id: left, person: lead, approve: Left done., on_reject: right, next: join}
          - {id: right, agent: Do the right part., next: join}
        """),
        "steps[2] (left).on_reject: inside a branch, on_reject must return to a step in the same branch",
        **P1,
    ),
    case(
        "join-outside-branch",
        fork(BRANCHES, after="  - {id: review, person: lead, approve: Close it., next: join}\n"),
        "steps[4] (review).next: join is allowed only inside a branch",
        **P1,
    ),
    case(
        "join-reserved-id",
        fork(
            BRANCHES,
            after="  - {id: review, person: lead, approve: Close it., next: join}\n  - {id: join, finish: x}\n",
        ),
        "steps[5] (join).id: 'join' is reserved by the parallel-1 profile for the end of a branch",
        **P1,
    ),
    case(
        "parallel-kind-listed-with-profile",
        "steps:\n  - {id: a, next: end}\n" + END,
        "steps[0] (a): needs one kind key: agent, task, approve, wait, wait_until, wait_for, finish or parallel",
        **P1,
    ),
    # check-1 §2, without the profile: one issue naming it
    case(
        "check-without-profile",
        ask("- ask: Is it right?"),
        "steps[0] (a).check: needs the check-1 profile, which this server does not offer",
    ),
    case(
        "check-without-evaluator",
        ask("- ask: Is it right?"),
        "steps[0] (a).check: needs the check-1 profile, which this server does not offer (no evaluator is "
        "configured)",
        check_unavailable_reason="no evaluator is configured",
    ),
    case(
        "advisory-without-profile",
        f"steps:\n  - {{id: a, agent: Do it., advisory: true}}\n{END}",
        "steps[0] (a).advisory: needs the check-1 profile, which this server does not offer",
    ),
    # check-1 §2, with the profile: the key
    case(
        "check-on-approve",
        f"steps:\n  - {{id: a, person: boss, approve: Approve it., check: Is it right}}\n{END}",
        "steps[0] (a).check: not allowed on approve steps; it applies to agent and task steps",
        **C1,
    ),
    case(
        "check-blank",
        f"steps:\n  - {{id: a, agent: Do it., check: ' '}}\n{END}",
        "steps[0] (a).check: must not be blank",
        **C1,
    ),
    case(
        "check-empty-list",
        f"steps:\n  - {{id: a, agent: Do it., check: []}}\n{END}",
        "steps[0] (a).check: must hold at least one question",
        **C1,
    ),
    case(
        "check-wrong-type",
        f"steps:\n  - {{id: a, agent: Do it., check: 5}}\n{END}",
        "steps[0] (a).check: must be a yes/no question (a string) or a list of questions, not a number",
        **C1,
    ),
    case(
        "question-not-mapping",
        ask("- Is it right?"),
        "steps[0] (a).check[0]: must be a mapping with ask, not a string",
        **C1,
    ),
    case("question-ask-missing", ask("- pass: 0.9"), "steps[0] (a).check[0].ask: required", **C1),
    case("question-ask-blank", ask("- ask: ''"), "steps[0] (a).check[0].ask: must not be blank", **C1),
    case(
        "question-unknown-key",
        ask("- {ask: Is it right, weight: 2}"),
        "steps[0] (a).check[0].weight: unknown field",
        **C1,
    ),
    case(
        "question-one-of-and-levels",
        ask("- {ask: Is it right, one_of: {a: A, b: B}, levels: [x, y], pass: [a]}"),
        "steps[0] (a).check[0]: has both one_of and levels; a question is yes/no, a choice or a rubric",
        **C1,
    ),
    case(
        "yes-no-pass-range",
        ask("- {ask: Is it right, pass: 1.5}"),
        "steps[0] (a).check[0].pass: must be a number from 0 to 1 on a yes/no question, not 1.5",
        **C1,
    ),
    case(
        "yes-no-pass-list",
        ask("- {ask: Is it right, pass: [yes]}"),
        "steps[0] (a).check[0].pass: must be a number from 0 to 1 on a yes/no question, not a list",
        **C1,
    ),
    case(
        "yes-no-fail-range",
        ask("- {ask: Is it right, fail: -0.1}"),
        "steps[0] (a).check[0].fail: must be a number from 0 to 1 on a yes/no question, not -0.1",
        **C1,
    ),
    case(
        "yes-no-fail-not-below-pass",
        ask("- {ask: Is it right, pass: 0.5, fail: 0.5}"),
        "steps[0] (a).check[0].fail: must be below pass (0.5)",
        **C1,
    ),
    case(
        "yes-no-unsure",
        ask("- {ask: Is it right, unsure: [maybe]}"),
        "steps[0] (a).check[0].unsure: allowed only on choice questions (with one_of)",
        **C1,
    ),
    case(
        "yes-no-confidence",
        ask("- {ask: Is it right, confidence: 0.8}"),
        "steps[0] (a).check[0].confidence: allowed only on choice and rubric questions",
        **C1,
    ),
    case(
        "choice-one-answer",
        ask("- {ask: Which one, one_of: {a: A}, pass: [a]}"),
        "steps[0] (a).check[0].one_of: must have two or more answers",
        **C1,
    ),
    case(
        "choice-one-of-list",
        ask("- {ask: Which one, one_of: [a, b], pass: [a]}"),
        "steps[0] (a).check[0].one_of: must map two or more answer names to descriptions, not a list",
        **C1,
    ),
    case(
        "choice-description-not-string",
        ask("- {ask: Which one, one_of: {a: 1, b: B}, pass: [a]}"),
        "steps[0] (a).check[0].one_of.a: must be a description of the answer, not a number",
        **C1,
    ),
    case(
        "choice-pass-missing",
        ask("- {ask: Which one, one_of: {a: A, b: B}}"),
        "steps[0] (a).check[0].pass: required on a choice question: the list of answer names that pass",
        **C1,
    ),
    case(
        "choice-pass-number",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: 0.9}"),
        "steps[0] (a).check[0].pass: must be a list of answer names from one_of, not 0.9",
        **C1,
    ),
    case(
        "choice-pass-empty",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: []}"),
        "steps[0] (a).check[0].pass: must name at least one answer",
        **C1,
    ),
    case(
        "choice-pass-unknown-answer",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: [c]}"),
        "steps[0] (a).check[0].pass[0]: 'c' is not an answer in one_of",
        **C1,
    ),
    case(
        "choice-unsure-unknown-answer",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: [a], unsure: [c]}"),
        "steps[0] (a).check[0].unsure[0]: 'c' is not an answer in one_of",
        **C1,
    ),
    case(
        "choice-unsure-overlaps-pass",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: [a], unsure: [a]}"),
        "steps[0] (a).check[0].unsure: 'a' is also in pass",
        **C1,
    ),
    case(
        "choice-fail",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: [a], fail: 0.2}"),
        "steps[0] (a).check[0].fail: allowed only on yes/no questions (without one_of or levels)",
        **C1,
    ),
    case(
        "choice-confidence-range",
        ask("- {ask: Which one, one_of: {a: A, b: B}, pass: [a], confidence: 2}"),
        "steps[0] (a).check[0].confidence: must be a number from 0 to 1, not 2",
        **C1,
    ),
    case(
        "rubric-one-level",
        ask("- {ask: How good is it, levels: [bad], pass: 0}"),
        "steps[0] (a).check[0].levels: has 1 levels; a rubric has 2 to 10",
        **C1,
    ),
    case(
        "rubric-eleven-levels",
        ask(f"- {{ask: How good is it, levels: [{', '.join(f'l{n}' for n in range(11))}], pass: 1}}"),
        "steps[0] (a).check[0].levels: has 11 levels; a rubric has 2 to 10",
        **C1,
    ),
    case(
        "rubric-levels-not-list",
        ask("- {ask: How good is it, levels: bad, pass: 0}"),
        "steps[0] (a).check[0].levels: must be a list of 2 to 10 level descriptions, worst first, not a string",
        **C1,
    ),
    case(
        "rubric-level-not-string",
        ask("- {ask: How good is it, levels: [bad, 2], pass: 0}"),
        "steps[0] (a).check[0].levels[1]: must be a description of the level, not a number",
        **C1,
    ),
    case(
        "rubric-pass-missing",
        ask("- {ask: How good is it, levels: [bad, good]}"),
        "steps[0] (a).check[0].pass: required on a rubric question: the level, from 0, at or above which it "
        "passes",
        **C1,
    ),
    case(
        "rubric-pass-out-of-range",
        ask("- {ask: How good is it, levels: [bad, ok, good], pass: 3}"),
        "steps[0] (a).check[0].pass: 3 is not a level; the levels are 0 to 2",
        **C1,
    ),
    case(
        "rubric-pass-not-integer",
        ask("- {ask: How good is it, levels: [bad, good], pass: 0.5}"),
        "steps[0] (a).check[0].pass: must be a level number (0, 1, …), not 0.5",
        **C1,
    ),
    case(
        "rubric-unsure",
        ask("- {ask: How good is it, levels: [bad, good], pass: 1, unsure: [bad]}"),
        "steps[0] (a).check[0].unsure: allowed only on choice questions (with one_of)",
        **C1,
    ),
    case(
        "rubric-confidence-range",
        ask("- {ask: How good is it, levels: [bad, good], pass: 1, confidence: -1}"),
        "steps[0] (a).check[0].confidence: must be a number from 0 to 1, not -1",
        **C1,
    ),
    case(
        "advisory-yes-is-a-string",
        f"steps:\n  - {{id: a, agent: Do it., check: Is it right, advisory: yes}}\n{END}",
        "steps[0] (a).advisory: must be true or false, not 'yes'",
        **C1,
    ),
    case(
        "advisory-without-check",
        f"steps:\n  - {{id: a, agent: Do it., advisory: true}}\n{END}",
        "steps[0] (a).advisory: allowed only beside check",
        **C1,
    ),
    # spec §6 rule 5: the frontmatter must have a canonical JSON form to be hashed
    case(
        "integer-beyond-canonical-json",
        f"inputs: {{tier: {{type: number, one_of: [9007199254740992]}}}}\nsteps:\n{END}",
        "inputs.tier.one_of[0]: 9007199254740992 is beyond ±9007199254740991, the largest integers canonical "
        "JSON holds exactly; quote it if it is text",
    ),
    case(
        "lone-surrogate",
        f'name: x\ndescription: "\\ud800"\nsteps:\n{END}',
        "description: holds a lone surrogate, which is not valid Unicode",
        head=False,
    ),
]


@pytest.mark.parametrize(("text", "head", "options", "expected"), REFUSALS)
def test_refusal(text, head, options, expected):
    issues = validate_process(load(text, head=head), **options)
    assert expected in issues, "\n".join(issues)


def test_refusal_ids_are_unique():
    ids = [param.id for param in REFUSALS]
    assert len(ids) == len(set(ids))


# Every problem in one answer: spec §2 and implementing.md Step 1 ("report every issue at once").


def test_several_problems_in_the_frontmatter_are_all_reported():
    frontmatter = load(
        """
        name: Bad Name
        description: ''
        emails: {templates: [a]}
        inputs:
          amount: money
          manager: {type: string, optional: maybe}
        requires: {systems: [crm, crm]}
        steps:
          - {id: a, agent: Do it.}
        """,
        head=False,
    )
    assert validate_process(frontmatter, folder_name="bad-name") == [
        "emails: unknown field; the frontmatter has only name, description, inputs, steps and requires",
        "name: 'Bad Name' must be lowercase letters and digits in words joined by single hyphens",
        "name: 'Bad Name' does not match the folder name 'bad-name'",
        "description: must not be empty",
        "inputs.amount: 'money' is not a type; the types are string, number, boolean, date, datetime, list, "
        "object and person",
        "inputs.manager.optional: must be true or false, not 'maybe'",
        "requires.systems[1]: 'crm' is listed more than once",
        "steps[0] (a): is the last step and not a finish, so it must name next",
    ]


def test_several_problems_in_the_steps_are_all_reported():
    frontmatter = load(
        """
        inputs: {start: date}
        steps:
          - id: draft
            agent: Draft it.
            person: writer
            evidence: [pdf]
          - id: draft
            wait_until: inputs.start
          - id: approve
            approve: Approve the draft.
            on_reject: draftt
            next: [draft, done]
          - id: lost
            wait: 0m
          - id: done
            finish: published
            next: draft
        """
    )
    issues = validate_process(frontmatter)
    expected = [
        "steps[0] (draft).person: not allowed on agent steps; it applies to task and approve steps",
        "steps[0] (draft).evidence[0]: 'pdf' is not an evidence kind; use file or link",
        "steps[1] (draft).id: 'draft' is already the id of steps[0] (draft)",
        "steps[1] (draft).wait_until: 'inputs.start' is a date field, not a datetime field",
        "steps[2] (approve).on_reject: no step named 'draftt'",
        "steps[2] (approve).next: a list of routes is allowed only on agent and task steps, not on approve steps",
        "steps[2] (approve).person: required on approve steps",
        "steps[3] (lost).wait: '0m' is not a duration; write a whole number from 1 followed by m, h or d, like 30m",
        "steps[4] (done).next: a finish step has no next",
        "steps[3] (lost): is not reachable from the first step",
    ]
    for issue in expected:
        assert issue in issues, "\n".join(issues)


def test_several_problems_with_both_profiles_are_all_reported():
    frontmatter = load(
        """
        steps:
          - id: start
            agent: Open.
            check:
              - {ask: Which one, one_of: {a: A}, pass: [b]}
              - {ask: How good is it, levels: [bad, good], pass: 2}
          - {id: fork, parallel: [left, right], next: review, person: lead}
          - {id: left, agent: Left.}
          - {id: right, agent: Right., next: end}
          - {id: review, person: lead, approve: Close., on_reject: left, advisory: true}
          - {id: end, finish: done}
        """
    )
    issues = validate_process(frontmatter, profiles=frozenset({"parallel-1", "check-1"}))
    expected = [
        "steps[0] (start).check[0].one_of: must have two or more answers",
        "steps[0] (start).check[0].pass[0]: 'b' is not an answer in one_of",
        "steps[0] (start).check[1].pass: 2 is not a level; the levels are 0 to 1",
        "steps[1] (fork).person: a parallel step takes only next",
        "steps[4] (review).advisory: not allowed on approve steps; it applies to agent and task steps",
        "steps[2] (left): is in a branch, so it must name next: a step of the branch or join",
        "steps[3] (right).next: a branch cannot contain the finish 'end'; end the branch with join",
        "steps[4] (review).on_reject: cannot return into the branch step 'left'; return to the parallel step "
        "or before it",
    ]
    for issue in expected:
        assert issue in issues, "\n".join(issues)


def test_without_profiles_each_missing_profile_is_reported_once():
    frontmatter = fixture("major-incident")
    frontmatter["steps"][0]["check"] = "Is the bridge open?"
    frontmatter["steps"][2]["check"] = "Is service restored?"
    assert validate_process(frontmatter) == [
        "steps[0] (activate).check: needs the check-1 profile, which this server does not offer",
        "steps[1] (respond).parallel: needs the parallel-1 profile, which this server does not offer",
    ]


# Accepted documents: the rules must not refuse what the spec allows.


@pytest.mark.parametrize(
    ("text", "options"),
    [
        pytest.param(f"steps:\n{END}", {}, id="one-finish"),
        pytest.param(
            "inputs: {at: {type: datetime, optional: true, description: When}}\n"
            f"steps:\n  - {{id: w, wait_until: inputs.at}}\n{END}",
            {},
            id="wait-until-input",
        ),
        pytest.param(
            "steps:\n  - {id: plan, agent: Plan., output: {at: datetime, who: person}}\n"
            "  - {id: w, wait_until: steps.plan.output.at}\n"
            "  - {id: t, person: steps.plan.output.who, task: Go.}\n" + END,
            {},
            id="paths-into-step-output",
        ),
        pytest.param(
            "steps:\n  - {id: a, agent: Do., next: [{to: b, when: Often}, end]}\n  - {id: b, person: initiator, "
            "task: Do., next: end}\n" + END,
            {},
            id="routes-and-initiator",
        ),
        pytest.param(
            "steps:\n  - {id: a, agent: Do.}\n  - {id: r, person: boss, approve: Approve it., on_reject: a, due: 1d}\n"
            + END,
            {},
            id="on-reject-goes-back",
        ),
        pytest.param(
            "steps:\n  - {id: w, wait_for: paid, timeout: 30d, on_timeout: chase, next: end}\n"
            "  - {id: chase, person: ar, task: Chase.}\n" + END,
            {},
            id="wait-for-timeout",
        ),
        pytest.param(
            "steps:\n  - {id: join, agent: Join the call.}\n" + END,
            {},
            id="join-is-a-plain-id-in-core",
        ),
        pytest.param(
            f"inputs: {{x: {{type: list, items: {{type: string, one_of: [a, b]}}}}}}\nsteps:\n{END}",
            {},
            id="items-field-object",
        ),
        pytest.param(
            f"requires: {{systems: [crm, erp-2]}}\nsteps:\n{END}",
            {},
            id="requires-systems",
        ),
        pytest.param(
            "steps:\n  - {id: a, agent: Do., check: Is it right, advisory: false}\n" + END,
            C1,
            id="check-short-form",
        ),
        pytest.param(
            fork("""
              - {id: left, agent: Left., next: left_two}
              - {id: left_two, person: lead, approve: Left done., on_reject: left, next: join}
              - {id: right, wait_for: ready, timeout: 1h, on_timeout: join, next: join}
            """),
            P1,
            id="branch-with-rework-and-timeout",
        ),
    ],
)
def test_accepted(text, options):
    assert validate_process(load(text), **options) == []


# validate_process never raises on odd shapes (the property tests go further).


@pytest.mark.parametrize(
    "frontmatter",
    [
        {},
        {"steps": None},
        {"steps": [None, 1, "x", [], {}]},
        {"name": None, "description": None, "inputs": None, "requires": None},
        {1: 2, None: 3},
        {"steps": [{"id": "a", "agent": "x", "next": {"to": "a"}}]},
        {"steps": [{"id": "a", "parallel": [1, None, {}], "next": ["a", "a"]}]},
        {"inputs": {"a": {"type": "list", "items": {"type": "list", "items": [1]}}}},
        {"description": float("nan"), "steps": [{"id": "a", "finish": math.inf}]},
        {"name": {"x"}, "steps": [{"id": ("t",), "agent": b"bytes"}]},
    ],
)
def test_odd_shapes_give_issues_not_exceptions(frontmatter):
    issues = validate_process(frontmatter, profiles=frozenset({"parallel-1", "check-1"}))
    assert issues
    assert all(isinstance(issue, str) for issue in issues)


def test_non_mapping_frontmatter():
    assert validate_process(["steps"]) == [
        "frontmatter: must be a mapping with name, description and steps, not a list"
    ]


def test_non_finite_float_and_foreign_types_are_refused_for_hashing():
    frontmatter = load(f"steps:\n{END}")
    frontmatter["inputs"] = {"a": {"type": "number", "one_of": [math.inf]}}
    frontmatter["steps"][0]["finish"] = b"done"
    issues = validate_process(frontmatter)
    assert "inputs.a.one_of[0]: inf is not a finite number, which canonical JSON cannot hold" in issues
    assert "steps[0] (end).finish: holds a bytes, which is not a JSON value" in issues


def test_self_containing_mapping_is_refused_not_recursed_forever():
    frontmatter = load(f"steps:\n{END}")
    frontmatter["steps"][0]["loop"] = frontmatter
    issues = validate_process(frontmatter)
    assert any("nested more than 100 levels deep" in issue for issue in issues)


# The helpers the engine and publisher use.


def test_patterns_and_constants():
    assert NAME_PATTERN.match("supplier-onboarding")
    assert not NAME_PATTERN.match("supplier-onboarding\n")
    assert not NAME_PATTERN.match("-a")
    assert STEP_ID_PATTERN.match("check_vendor")
    assert not STEP_ID_PATTERN.match("1step")
    assert KIND_KEYS == ("agent", "task", "approve", "wait", "wait_until", "wait_for", "finish")
    assert len(FIELD_TYPES) == 8


def test_role_names_in_step_order():
    assert role_names(fixture("contract-review")) == [
        "legal-reviewer",
        "finance-reviewer",
        "authorized-signatory",
    ]
    assert role_names(fixture("expense-reimbursement")) == ["accounts-payable"]
    assert role_names({"steps": [{"person": " "}, {"person": 5}, "x", {"person": "a"}, {"person": "a"}]}) == [
        "a"
    ]
    assert role_names({"steps": "x"}) == []


def test_required_systems():
    assert required_systems(fixture("vendor-check")) == ["sanctions-screening"]
    assert required_systems(fixture("invoice-approval")) == []
    assert required_systems({"requires": {"systems": ["a", 1, "a", "b"]}}) == ["a", "b"]


def test_profiles_used():
    assert profiles_used(fixture("major-incident")) == {"parallel-1"}
    assert profiles_used(fixture("vendor-check")) == {"check-1"}
    assert profiles_used(fixture("invoice-approval")) == set()
    assert profiles_used({"steps": [{"id": "a", "next": "join"}]}) == {"parallel-1"}
    assert profiles_used({"steps": [{"id": "join", "next": "join"}]}) == set()
    assert profiles_used({"steps": [{"advisory": True}]}) == {"check-1"}
    assert profiles_used([]) == set()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30m", 1800),
        ("4h", 14400),
        ("3d", 259200),
        ("1m", 60),
        ("36500d", 36500 * 86400),
        ("0m", None),
        ("05m", None),
        ("30", None),
        ("30s", None),
        ("30M", None),
        (" 30m", None),
        ("30m\n", None),
        ("1.5h", None),
        ("-1d", None),
        ("36501d", None),
        ("9" * 40 + "d", None),
        (30, None),
        (None, None),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds
