"""hypothesis on acceptance: no input makes it raise; it only ever answers with issues (issue: hostile input)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processes.definition import compile_definition
from runs.acceptance import check_fields, check_submission

TYPES = ["string", "number", "boolean", "date", "datetime", "list", "object", "person"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
field_specs = st.recursive(
    st.sampled_from(TYPES),
    lambda inner: st.fixed_dictionaries(
        {"type": st.just("list")}, optional={"items": inner, "optional": st.booleans()}
    )
    | st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "number", "boolean"])},
        optional={"one_of": st.lists(st.text(max_size=4) | st.integers() | st.booleans(), min_size=1, max_size=3)},
    ),
    max_leaves=5,
)
declarations = st.dictionaries(st.text(min_size=1, max_size=6), field_specs, max_size=5)


@given(declared=declarations, values=st.dictionaries(st.text(max_size=6), json_values, max_size=6))
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_check_fields_never_raises_and_names_only_real_paths(declared, values):
    issues = check_fields(declared, values, "output")
    assert all(isinstance(issue, str) and issue.startswith("output.") for issue in issues)
    assert not any(issue.endswith(": not declared") for issue in issues if issue[7:-14] in declared)


@given(
    output=st.dictionaries(st.text(max_size=6), json_values, max_size=5),
    evidence=st.lists(
        st.fixed_dictionaries({"kind": st.sampled_from(["file", "link"]), "ref": st.text(min_size=1, max_size=6)}),
        max_size=4,
    ),
    summary=st.none() | st.text(max_size=10),
    next_step=st.none() | st.text(max_size=6),
    reason=st.none() | st.text(max_size=6),
    declared=declarations,
    evidence_kinds=st.lists(st.sampled_from(["file", "link"]), unique=True),
    routes=st.booleans(),
)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_check_submission_never_raises(output, evidence, summary, next_step, reason, declared, evidence_kinds, routes):
    step = {"id": "a", "agent": "x", "output": declared, "evidence": evidence_kinds}
    if routes:
        step["next"] = ["b", {"to": "c", "when": "w"}]
    definition = compile_definition({"name": "p", "description": "d", "steps": [
        step, {"id": "b", "finish": "b"}, {"id": "c", "finish": "c"}]})
    problems = {item["ref"]: "not found" for item in evidence[:1] if item["kind"] == "file"}
    issues = check_submission(definition["a"], output=output, evidence=evidence, summary=summary,
                              next_step=next_step, reason=reason, require_summary=True, file_problems=problems)
    assert all(isinstance(issue, str) for issue in issues)
    if not issues:
        assert summary and summary.strip() and (next_step in ("b", "c")) == routes
