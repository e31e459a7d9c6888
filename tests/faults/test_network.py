"""Faults across a real network, the short version of `python -m tests.faults.network run`.

Two app nodes, PostgreSQL, Redis and the timers each on a host of their own (network namespaces), agents
and people driving runs through both nodes while a seeded nemesis partitions a node from the database,
slows a link, kills a node, restarts PostgreSQL, cuts Redis off and loses answers the server sent. After
the heal the checker (tests/faults/checker.py) holds the history to the spec: acknowledged writes kept,
refused writes without effect, replays answered alike (§3.4, §5), one holder per step, no token past
its lease, declared order, first decision wins, rejections rewinding exactly the later steps (§3.1),
held events consumed oldest first (§3.6), and every run ending. Needs root, iproute2, PostgreSQL 15
binaries and redis-server (and iptables on a kernel without netem): a machine without them fails these
tests with what is missing.

It starts its own PostgreSQL and Redis inside the namespaces and touches no other.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.faults import netns, network

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def services_left_running():
    """These tests start and stop their own PostgreSQL and Redis; the machine's are never touched."""


@pytest.fixture
def machine_ready():
    problems = network.missing()
    assert not problems, "the network fault tests cannot run here: " + "; ".join(problems)


def root_namespace() -> str:
    """The root namespace's interfaces, addresses, routes and rules, to show that a run left them alone."""
    done = [subprocess.run(argv, capture_output=True, text=True).stdout for argv in
            (["ip", "-o", "link"], ["ip", "-o", "addr"], ["ip", "route"], ["ip", "rule"])]
    return "\n".join(done)


def test_faults_across_a_network_keep_every_guarantee(tmp_path, machine_ready):
    before = root_namespace()
    figures = network.run(minutes=1, seed=2026, drain_seconds=150, scale=0.5, out=tmp_path / "network")
    network.print_figures(figures)
    assert figures["violation list"] == [], f"history and logs kept in {tmp_path / 'network'}"
    assert set(figures["faults injected"]) == set(network.FAULTS), figures["faults injected"]
    assert figures["most faults at once"] >= 2, figures["fault log"]
    assert figures["retried (attempts after the first, same requestId)"] > 0
    assert figures["answers dropped"] > 0 and figures["runs ended"] > 0
    for node, answered in figures["answered by node"].items():
        assert answered.get("agents", 0) > 0 and answered.get("people", 0) > 0, (node, figures["answered by node"])
    assert netns.namespaces(figures["namespaces"]) == []
    assert root_namespace() == before


def echo(net: netns.Network, count: int) -> tuple[float, float]:
    """Send `count` UDP datagrams from host a to an echo on host b; the loss and the median round trip."""
    ready, sent, back = threading.Event(), {}, {}
    server_address = (net.address("b", "front"), 9999)

    def serve():
        netns.enter(net.ns("b"))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
            server.bind(server_address)
            server.settimeout(0.5)
            ready.set()
            while not done.is_set():
                try:
                    data, peer = server.recvfrom(64)
                except TimeoutError:
                    continue
                server.sendto(data, peer)

    def measure():
        netns.enter(net.ns("a"))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.settimeout(0.003)
            for n in range(count):
                sent[n] = time.monotonic()
                client.sendto(str(n).encode(), server_address)
                drain(client)
            last = time.monotonic()
            # A datagram not back 2 s after the last one went out is lost (the slow link adds 0.4 s).
            while len(back) < count and time.monotonic() < last + 2:
                drain(client)

    def drain(client):
        """Read what came back until nothing comes for the socket's timeout (a few ms)."""
        try:
            while True:
                data = client.recv(64)
                back.setdefault(int(data), time.monotonic())
        except TimeoutError:
            pass

    done = threading.Event()
    server = threading.Thread(target=serve)
    server.start()
    ready.wait(10)
    try:
        client = threading.Thread(target=measure)
        client.start()
        client.join()
    finally:
        done.set()
        server.join()
    rtts = [back[n] - sent[n] for n in back]
    return 1 - len(back) / count, statistics.median(rtts)


def test_a_slow_link_is_200_ms_late_and_loses_5_percent_each_way(machine_ready):
    # With netem or without it (iptables statistic and a netfilter queue, tests/faults/netns.py).
    net = netns.Network([netns.Host("a", {"front": 10}), netns.Host("b", {"front": 11})])
    try:
        net.build()
        loss, rtt = echo(net, 300)
        assert loss < 0.02 and rtt < 0.05, (loss, rtt)
        how = net.slow("b", "front")
        loss, rtt = echo(net, 1000)
        # 200 ms each way; 5% lost each way, so 1 - 0.95² = 9.75% of round trips (± 4 standard deviations).
        assert 0.39 < rtt < 0.5, (how, rtt)
        assert 0.06 < loss < 0.14, (how, loss)
        net.heal("b", "front")
        if not net.netem():
            # The chain's own counters: one packet in twenty dropped, the rest held in the queue.
            assert 0.03 < net.slowed["lost"] / (net.slowed["lost"] + net.slowed["delayed"]) < 0.07, net.slowed
        loss, rtt = echo(net, 300)
        assert loss < 0.02 and rtt < 0.05, (loss, rtt)
    finally:
        net.destroy()
    assert not [name for name in netns.namespaces() if name.startswith(net.prefix)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_removes_everything_it_made(sig, machine_ready):
    before = root_namespace()
    process = subprocess.Popen([sys.executable, "-m", "tests.faults.network", "run", "--minutes", "10", "--seed", "3"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = process.stdout.readline()  # "namespaces apnf…-*, work in /tmp/apnf-…"
    prefix, workdir = first.split()[1].removesuffix("-*,"), Path(first.split()[-1])
    try:
        lines = [first]
        for line in process.stdout:
            lines.append(line)
            if line.startswith("hosts up"):
                break
        assert lines[-1].startswith("hosts up"), "".join(lines)[-3000:]
        started = {int(pid) for name in netns.namespaces(prefix)
                   for pid in netns.ip("netns", "pids", name).stdout.split()}
        assert len(started) >= 6, started  # PostgreSQL, Redis, two gunicorns, worker, beat
        os.kill(process.pid, sig)
        rest = process.stdout.read()
        assert process.wait(180) == 130, "".join(lines) + rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            netns.remove(prefix)
    assert f"interrupted: removed {prefix}-*" in rest
    assert netns.namespaces(prefix) == []
    assert [pid for pid in started if Path(f"/proc/{pid}").exists()] == []
    assert not workdir.exists()
    assert root_namespace() == before
