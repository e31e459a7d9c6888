"""bench/opcodes.py counts each function's own bytecode steps and calls: the figures a change is judged by."""

import sys

from bench.opcodes import Counted


def _leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total


def _caller():
    return _leaf(50) + _leaf(50)


def test_each_function_is_counted_its_own_steps_and_calls():
    counted = Counted()
    sys.settrace(counted.trace)
    try:
        _caller()
    finally:
        sys.settrace(None)
    steps, calls = counted.by_name(counted.steps, 1), counted.by_name(counted.calls, 1)
    leaf, caller = (next(name for name in steps if name.endswith(f"({f.__name__})")) for f in (_leaf, _caller))
    assert leaf.startswith("tests/bench/test_opcodes.py:")  # named from the checkout's root
    assert (calls[leaf], calls[caller]) == (2, 1)
    # The loops' steps are the leaf's own, not its caller's: a hundred turns against a handful.
    assert steps[leaf] > 100 > steps[caller] > 0
    assert counted.by_name(counted.steps, 2)[leaf] == steps[leaf] / 2  # per request
