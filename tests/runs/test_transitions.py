"""The transition tables of runs, steps and work items, read and tried without a database (spec §3.5)."""

import pytest

from runs.models import Run, RunStep, StepState, WorkItem
from runs.transitions import (
    ITEM_TRANSITIONS,
    RUN_TRANSITIONS,
    STEP_TRANSITIONS,
    IllegalTransition,
    RunState,
    WorkItemState,
    allowed,
    move,
)

STATES = [None, *StepState.values]


def test_every_state_has_a_row_and_terminal_states_go_nowhere():
    assert set(STEP_TRANSITIONS) == set(STATES)
    assert STEP_TRANSITIONS[StepState.FAILED] == frozenset()
    assert STEP_TRANSITIONS[StepState.CANCELLED] == frozenset()


@pytest.mark.parametrize(("start", "end"), [(a, b) for a in STATES for b in STATES])
def test_a_step_moves_exactly_as_its_table_says(start, end):
    row = RunStep(step_id="s", state=start)
    if end in STEP_TRANSITIONS[start]:
        move(row, end)
        assert row.state == end
    else:
        with pytest.raises(IllegalTransition):
            move(row, end)
        assert row.state == start


def test_a_claim_only_comes_from_ready_and_a_ready_step_is_never_done_without_a_claim():
    assert {s for s, targets in STEP_TRANSITIONS.items() if StepState.CLAIMED in targets} == {StepState.READY}
    assert StepState.DONE not in STEP_TRANSITIONS[StepState.READY]


@pytest.mark.parametrize(("model", "table"), [(Run, RUN_TRANSITIONS), (WorkItem, ITEM_TRANSITIONS)])
def test_runs_and_items_move_exactly_as_their_tables_say(model, table):
    for start in table:
        for end in table:
            obj = model(state=start)
            assert allowed(obj, end) is (end in table[start])
            if end in table[start]:
                move(obj, end)
                assert obj.state == end
            else:
                with pytest.raises(IllegalTransition):
                    move(obj, end)
                assert obj.state == start


def test_ended_runs_and_decided_items_go_nowhere():
    assert RUN_TRANSITIONS[RunState.ENDED] == RUN_TRANSITIONS[RunState.CANCELLED] == frozenset()
    assert ITEM_TRANSITIONS[WorkItemState.DECIDED] == ITEM_TRANSITIONS[WorkItemState.REMOVED] == frozenset()


@pytest.mark.parametrize("obj", [Run(state=RunState.ACTIVE), RunStep(state=StepState.READY),
                                 WorkItem(state=WorkItemState.OPEN)], ids=["run", "step", "item"])
def test_a_state_assigned_around_the_table_raises(obj):
    before = obj.state
    with pytest.raises(IllegalTransition, match=r"changed through runs\.transitions\.move"):
        obj.state = "done"
    assert obj.state == before
