"""Property tests: no input makes the parser or the validator raise, and hashing is stable."""

import copy
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processes.hashing import content_hash
from processes.management.commands.demo_data import find_fixtures
from processes.parsing import ParseResult, parse_process
from processes.spec import FIELD_TYPES, KIND_KEYS, QUESTION_KEYS, STEP_KEYS, TOP_LEVEL_KEYS
from processes.validation import validate_process

FIXTURES = find_fixtures()  # the repository's copy, or $AGENTPROCESS_FIXTURES
FIXTURE_TEXTS = {path.name: (path / "PROCESS.md").read_text(encoding="utf-8") for path in FIXTURES.iterdir()}
BOTH = frozenset({"parallel-1", "check-1"})
FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

YAML_PIECES = [
    "---",
    "...",
    "\n",
    "\r\n",
    "  ",
    "\t",
    "- ",
    ": ",
    ":",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "&a ",
    "*a",
    "!!str ",
    "!!int ",
    "!x ",
    "! ",
    "'",
    '"',
    "\\u0041",
    "# c",
    "|",
    ">-",
    "%YAML 1.2",
    "yes",
    "no",
    "on",
    "0o17",
    "0x1F",
    "017",
    "1:30",
    ".inf",
    ".nan",
    "1e999",
    "2026-10-06",
    "~",
    "null",
    "true",
    "<<",
    "name",
    "steps",
    "id",
    "a",
    "é",
    "\x00",
    "\ufeff",
    "\u2028",
]
yaml_like = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map("".join)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(
        [*FIELD_TYPES, *KIND_KEYS, "join", "initiator", "inputs.a", "steps.a.output.b", "30m", ""]
    )
)
keys = st.text(max_size=10) | st.sampled_from(
    [*TOP_LEVEL_KEYS, *STEP_KEYS, *QUESTION_KEYS, "to", "when", "type"]
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=5),
    max_leaves=30,
)
profiles = st.frozensets(st.sampled_from(["parallel-1", "check-1", "other-1"]))
tools = st.none() | st.frozensets(st.sampled_from(["upload", "send_event", "describe"]))

STEP_IDS = ["a", "b", "c", "d", "e", "join"]
step_ref = st.sampled_from([*STEP_IDS, "nope", 5, None])
routes = st.lists(
    step_ref | st.fixed_dictionaries({"to": step_ref}, optional={"when": st.sampled_from(["x", " "])})
)
steps_like = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(STEP_IDS)},
        optional={
            "agent": st.just("Do it."),
            "task": st.just("Do it."),
            "approve": st.just("OK."),
            "finish": st.just("done"),
            "wait": st.sampled_from(["1h", "0m", 3]),
            "wait_for": st.just("paid"),
            "parallel": st.lists(step_ref, max_size=4),
            "person": st.sampled_from(["lead", "initiator", "inputs.who", "a.b"]),
            "next": step_ref | routes,
            "on_reject": step_ref,
            "on_timeout": step_ref,
            "timeout": st.just("1d"),
            "check": st.just("Right") | st.lists(json_values, max_size=3),
            "advisory": st.booleans(),
        },
    ),
    min_size=1,
    max_size=8,
)


def _is_parse_result(result: object) -> bool:
    """Say whether a parse result keeps its contract."""
    return (
        isinstance(result, ParseResult)
        and isinstance(result.body, str)
        and all(isinstance(issue, str) for issue in result.issues)
        and (result.frontmatter is None if result.issues else isinstance(result.frontmatter, dict))
    )


def _is_issue_list(issues: object) -> bool:
    """Say whether a validation answer is a list of placed issue strings."""
    return isinstance(issues, list) and all(isinstance(issue, str) and ": " in issue for issue in issues)


# spec §2.1 and issue 2 §3: the parser answers with issues, never with an exception.


@FAST
@given(st.text())
def test_parser_never_raises_on_text(text):
    assert _is_parse_result(parse_process(text))


@FAST
@given(st.binary())
def test_parser_never_raises_on_bytes(data):
    assert _is_parse_result(parse_process(data))


@FAST
@given(yaml_like)
def test_parser_never_raises_on_yaml_like_frontmatter(text):
    assert _is_parse_result(parse_process(f"---\n{text}\n---\nbody"))


@FAST
@given(st.text())
def test_body_is_kept_exactly(body):
    # Hypothesis text has no lone surrogates, so every such document is valid UTF-8.
    result = parse_process("---\nname: x\n---\n" + body)
    assert result.issues == []
    assert result.body == body


# spec §2 and issue 2 §4: the validator answers with issues for any shape.


@FAST
@given(st.dictionaries(keys, json_values, max_size=6), profiles, tools)
def test_validator_never_raises_on_arbitrary_mappings(frontmatter, enabled, offered):
    assert _is_issue_list(validate_process(frontmatter, profiles=enabled, tools=offered))


@FAST
@given(json_values)
def test_validator_never_raises_on_any_json_value(value):
    assert _is_issue_list(validate_process(value))


@FAST
@given(steps_like, profiles)
def test_validator_never_raises_on_random_step_graphs(steps, enabled):
    frontmatter = {"name": "x", "description": "d", "inputs": {"who": "person"}, "steps": steps}
    issues = validate_process(frontmatter, profiles=enabled | {"parallel-1"})
    assert _is_issue_list(issues)
    assert len(issues) == len(set(issues))


@st.composite
def mutated_fixtures(draw):
    """Take a fixture's frontmatter and drop keys, change values and add keys at random places."""
    name = draw(st.sampled_from(sorted(FIXTURE_TEXTS)))
    frontmatter = copy.deepcopy(parse_process(FIXTURE_TEXTS[name]).frontmatter)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        container = frontmatter
        while True:
            children = list(container.items()) if isinstance(container, dict) else list(enumerate(container))
            nested = [child for _, child in children if isinstance(child, dict | list) and child]
            if not nested or draw(st.booleans()):
                break
            container = draw(st.sampled_from(nested))
        action = draw(st.sampled_from(["drop", "change", "add"]))
        if isinstance(container, dict):
            if action == "add" or not container:
                container[draw(keys)] = draw(json_values)
            else:
                key = draw(st.sampled_from(sorted(container, key=repr)))
                if action == "drop":
                    del container[key]
                else:
                    container[key] = draw(json_values)
        elif action == "add" or not container:
            container.append(draw(json_values))
        else:
            index = draw(st.integers(min_value=0, max_value=len(container) - 1))
            if action == "drop":
                del container[index]
            else:
                container[index] = draw(json_values)
    return name, frontmatter


@FAST
@given(mutated_fixtures(), profiles, tools)
def test_validator_never_raises_on_mutated_fixtures(mutated, enabled, offered):
    name, frontmatter = mutated
    issues = validate_process(frontmatter, folder_name=name, profiles=enabled, tools=offered)
    assert _is_issue_list(issues)


# spec §6 rule 5: a valid process hashes the same however often and however it is spelled.


@FAST
@given(st.sampled_from(sorted(FIXTURE_TEXTS)))
def test_reparsing_a_valid_fixture_gives_the_same_hash(name):
    first = parse_process(FIXTURE_TEXTS[name])
    assert validate_process(first.frontmatter, folder_name=name, profiles=BOTH) == []
    again = parse_process(FIXTURE_TEXTS[name].encode("utf-8"))
    assert content_hash(again.frontmatter, again.body) == content_hash(first.frontmatter, first.body)


@FAST
@given(
    st.sampled_from(sorted(FIXTURE_TEXTS)),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=20, max_value=200),
)
def test_respelling_a_valid_fixture_gives_the_same_hash(name, flow, sort_keys, width):
    first = parse_process(FIXTURE_TEXTS[name])
    respelled = yaml.safe_dump(
        first.frontmatter, default_flow_style=flow, sort_keys=sort_keys, width=width, allow_unicode=True
    )
    again = parse_process(f"---\n{respelled}---\n{first.body}")
    assert again.issues == []
    assert content_hash(again.frontmatter, again.body) == content_hash(first.frontmatter, first.body)


# Processes that publish: agent steps with typed outputs, a person step, a finish; any text in them.
# YAML 1.2's core schema reads these as numbers; PyYAML (YAML 1.1) writes some of them unquoted (1e3, 0o7).
CORE_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+"
                         r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")
PLAIN_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda text: text.strip() and not CORE_NUMBER.fullmatch(text.strip()))
FIELD_NAMES = st.from_regex(r"\A[a-z][a-z0-9_]{0,8}\Z")
SCALAR_TYPES = st.sampled_from(["string", "number", "boolean", "date", "datetime", "person"])


@st.composite
def publishable_processes(draw) -> str:
    steps = []
    for index in range(draw(st.integers(min_value=1, max_value=5))):
        step = {"id": f"s{index}"}
        if draw(st.booleans()):
            step["agent"] = draw(PLAIN_TEXT)
        else:
            step["person"] = "reviewers"
            step["task"] = draw(PLAIN_TEXT)
        outputs = draw(st.dictionaries(FIELD_NAMES, SCALAR_TYPES, max_size=4))
        if outputs:
            step["output"] = outputs
        steps.append(step)
    steps.append({"id": "done", "finish": draw(st.sampled_from(["ok", "done", "approved"]))})
    frontmatter = {"name": "generated", "description": draw(PLAIN_TEXT), "steps": steps}
    if draw(st.booleans()):
        frontmatter["inputs"] = draw(st.dictionaries(FIELD_NAMES, SCALAR_TYPES, min_size=1, max_size=3))
    dumped = yaml.safe_dump(frontmatter, allow_unicode=True, sort_keys=draw(st.booleans()),
                            default_flow_style=draw(st.booleans()), width=draw(st.integers(20, 200)))
    body = draw(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\r"), max_size=200))
    return f"---\n{dumped}---\n{body}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(publishable_processes())
def test_a_published_version_parses_again_to_its_hash(org, text):
    # spec §2.4: a version's hash is of its content; the text the server stored must give it back.
    from processes.publishing import import_process
    from processes.validation import role_names

    roles = role_names(parse_process(text).frontmatter)
    outcome = import_process(organization=org, text=text, bindings={role: role for role in roles}, publish=True)
    assert outcome.status in ("published", "unchanged"), outcome.issues
    version = outcome.version
    again = parse_process(version.source)
    assert again.issues == []
    assert content_hash(again.frontmatter, again.body) == version.sha256
    assert again.frontmatter == version.frontmatter and again.body == version.body
    assert content_hash(version.frontmatter, version.body) == version.sha256
