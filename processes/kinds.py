"""The kinds of step a process may have (spec §2.2, parallel-1), and the groups of them the rules name, in spec order."""

from enum import StrEnum


class StepKind(StrEnum):
    """A step's kind, which is also the key that declares it in a step (`agent: …`, `wait_for: …`)."""

    AGENT = "agent"
    TASK = "task"
    APPROVE = "approve"
    WAIT = "wait"
    WAIT_UNTIL = "wait_until"
    WAIT_FOR = "wait_for"
    FINISH = "finish"
    PARALLEL = "parallel"  # parallel-1


# The core kinds, without the parallel-1 profile's, in the order the spec lists them.
CORE_KINDS = tuple(kind for kind in StepKind if kind is not StepKind.PARALLEL)
# A person completes these from the inbox.
PERSON_KINDS = (StepKind.TASK, StepKind.APPROVE)
# Time or an event moves these on.
WAIT_KINDS = (StepKind.WAIT, StepKind.WAIT_UNTIL, StepKind.WAIT_FOR)
# These do work that can be late (`due`) and are handed to an actor.
WORK_KINDS = (StepKind.AGENT, StepKind.TASK, StepKind.APPROVE)
# These submit typed output and evidence.
OUTPUT_KINDS = (StepKind.AGENT, StepKind.TASK)
