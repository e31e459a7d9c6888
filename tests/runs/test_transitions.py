"""The step-state transition table, read without a database (spec §3.5)."""

import pytest

from runs.engine import STEP_TRANSITIONS, IllegalTransition, LoadedRun, set_state
from runs.models import RunStep, StepState

STATES = [None, *StepState.values]


def test_every_state_has_a_row_and_terminal_states_go_nowhere():
    assert set(STEP_TRANSITIONS) == set(STATES)
    assert STEP_TRANSITIONS[StepState.FAILED] == frozenset()
    assert STEP_TRANSITIONS[StepState.CANCELLED] == frozenset()


@pytest.mark.parametrize(("start", "end"), [(a, b) for a in STATES for b in STATES])
def test_set_state_allows_exactly_the_table(start, end):
    row = RunStep(step_id="s", state=start)
    txn = LoadedRun(run=None, definition=None, steps={"s": row}, now=None)
    if end in STEP_TRANSITIONS[start]:
        set_state(txn, row, end)
        assert row.state == end and "s" in txn.dirty
    else:
        with pytest.raises(IllegalTransition):
            set_state(txn, row, end)


def test_a_claim_only_comes_from_ready_and_a_ready_step_is_never_done_without_a_claim():
    assert {s for s, targets in STEP_TRANSITIONS.items() if StepState.CLAIMED in targets} == {StepState.READY}
    assert StepState.DONE not in STEP_TRANSITIONS[StepState.READY]
