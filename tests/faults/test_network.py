"""Faults across a real network, the short version of `python -m tests.faults.network run`.

Two app nodes, PostgreSQL, Redis and the timers each on a host of their own (network namespaces), agents
and people driving runs through both nodes while a seeded nemesis partitions a node from the database,
slows a link, kills a node, restarts PostgreSQL, cuts Redis off and loses answers the server sent. After
the heal the checker (tests/faults/checker.py) holds the history to the spec: acknowledged writes kept,
refused writes without effect, replays answered alike (§3.4, §5), one holder per step, no token past
its lease, declared order, first decision wins, rejections rewinding exactly the later steps (§3.1),
held events consumed oldest first (§3.6), and every run ending. Needs root, iproute2, PostgreSQL 15
binaries and redis-server: a machine without them fails this test with what is missing.

It starts its own PostgreSQL and Redis inside the namespaces and touches no other.
"""

from __future__ import annotations

import pytest

from tests.faults import network

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def services_left_running():
    """This test starts and stops its own PostgreSQL and Redis; the machine's are never touched."""


def test_faults_across_a_network_keep_every_guarantee(tmp_path):
    problems = network.missing()
    assert not problems, "the network fault test cannot run here: " + "; ".join(problems)
    figures = network.run(minutes=1, seed=2026, drain_seconds=150, scale=0.5, out=tmp_path / "network")
    network.print_figures(figures)
    assert figures["violation list"] == [], f"history and logs kept in {tmp_path / 'network'}"
    assert set(figures["faults injected"]) == set(network.FAULTS), figures["faults injected"]
    assert figures["retried (attempts after the first, same requestId)"] > 0
    assert figures["answers dropped"] > 0 and figures["runs ended"] > 0
