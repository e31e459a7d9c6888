"""Hosts of our own on one machine: network namespaces joined by two bridges, and link faults with tc netem.

Every namespace this module makes is named `<prefix>-<host>` where the prefix starts with PREFIX, so a
killed run's leftovers are found by name (`cleanup`). The root namespace is never changed: the veth
pairs are made inside the bridge namespace with their far ends put straight into the host namespaces.

    front 10.213.1.0/24   client, app nodes          (what a client reaches)
    back  10.213.2.0/24   app nodes, db, redis, timers (what a node reaches)

A host's link to a bridge is a veth pair: `<host>` in the bridge namespace, `front`/`back` in the host's.
Link faults are netem qdiscs on both ends, so both directions suffer. A kernel built without netem
(`tc` says "Specified qdisc kind is unknown") gets the same faults another way, in the bridge namespace
only: a cut detaches the link from its bridge; a slow link sends the packets the bridge forwards to or
from it (iptables FORWARD, `physdev`) through an iptables `statistic --mode random --probability 0.05`
DROP and then to a netfilter queue that tests/faults/delay.py holds 200 ms per packet: each direction
is 200 ms late and loses 5%, as `netem delay 200ms loss 5%` on both ends would.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

PREFIX = "apnf"
CLONE_NEWNET = 0x40000000
SUBNETS = {"front": "10.213.1", "back": "10.213.2"}
ROOT = Path(__file__).resolve().parents[2]
DELAY_MS = 200
LOSS = "0.05"


@dataclass(frozen=True)
class Host:
    name: str
    links: dict  # side ("front"/"back") -> last octet


def ip(*args: str, check: bool = True, namespace: str | None = None) -> subprocess.CompletedProcess:
    argv = ["ip", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done


def tc(namespace: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    argv = ["ip", "netns", "exec", namespace, "tc", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done


def iptables(namespace: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    argv = ["ip", "netns", "exec", namespace, "iptables", "-w", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done


def missing_tools() -> list[str]:
    """What this machine lacks to build the network (root, ip netns, tc; iptables where netem is missing)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the network harness needs root (ip netns, tc)")
        return problems
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is missing (install iproute2)")
    if not problems and not netem_available() and shutil.which("iptables") is None:
        problems.append("the kernel has no netem qdisc and `iptables` is missing to delay and lose packets "
                        "without it: apt-get install iptables")
    return problems


def netem_available() -> bool:
    """Whether the kernel has the netem qdisc, tried on the loopback of a namespace made for the probe."""
    probe = f"{PREFIX}probe{os.getpid()}"
    ip("netns", "add", probe)
    try:
        return tc(probe, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms", check=False).returncode == 0
    finally:
        ip("netns", "del", probe, check=False)


class Network:
    """The namespaces of one run; `build()` makes them, `destroy()` removes them and what runs inside."""

    def __init__(self, hosts: list[Host], tag: str | None = None):
        self.prefix = f"{PREFIX}{tag or uuid.uuid4().hex[:6]}"
        self.hosts = {host.name: host for host in hosts}
        self.bridge_ns = self.ns("br")
        self._netem: bool | None = None
        self.delayers: dict[tuple[str, str], subprocess.Popen] = {}
        self.closed = False  # set once removal began: nothing may start in the namespaces any more
        self.slowed = {"delayed": 0, "lost": 0}  # packets, over every link slowed without netem
        # One netfilter queue number per link, for the links slowed without netem.
        self.queues = {(host.name, side): n for n, (host, side) in
                       enumerate(((h, side) for h in hosts for side in h.links), start=1)}

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def address(self, host: str, side: str) -> str:
        return f"{SUBNETS[side]}.{self.hosts[host].links[side]}"

    def build(self) -> None:
        ip("netns", "add", self.bridge_ns)
        ip("link", "set", "lo", "up", namespace=self.bridge_ns)
        for side, _subnet in SUBNETS.items():
            ip("link", "add", side, "type", "bridge", namespace=self.bridge_ns)
            ip("link", "set", side, "up", namespace=self.bridge_ns)
        for host in self.hosts.values():
            name = self.ns(host.name)
            ip("netns", "add", name)
            ip("link", "set", "lo", "up", namespace=name)
            for side, octet in host.links.items():
                outer = self.outer(host.name, side)
                ip("link", "add", outer, "type", "veth", "peer", "name", side, "netns", name, namespace=self.bridge_ns)
                ip("link", "set", outer, "master", side, namespace=self.bridge_ns)
                ip("link", "set", outer, "up", namespace=self.bridge_ns)
                ip("addr", "add", f"{SUBNETS[side]}.{octet}/24", "dev", side, namespace=name)
                ip("link", "set", side, "up", namespace=name)

    @staticmethod
    def outer(host: str, side: str) -> str:
        return f"{side[0]}-{host}"[:15]

    # --- link faults ------------------------------------------------------------------------------

    def _ends(self, host: str, side: str) -> list[tuple[str, str]]:
        return [(self.ns(host), side), (self.bridge_ns, self.outer(host, side))]

    def netem(self) -> bool:
        """Whether the kernel has the netem qdisc (a kernel built without sch_netem has not)."""
        if self._netem is None:
            probe = tc(self.bridge_ns, "qdisc", "replace", "dev", "lo", "root", "netem", "delay", "1ms", check=False)
            self._netem = probe.returncode == 0
            tc(self.bridge_ns, "qdisc", "del", "dev", "lo", "root", check=False)
        return self._netem

    def impair(self, host: str, side: str, *netem: str) -> None:
        """Put `tc netem <netem…>` on both ends of a host's link (replacing any earlier impairment)."""
        for namespace, device in self._ends(host, side):
            tc(namespace, "qdisc", "replace", "dev", device, "root", "netem", *netem)

    def cut(self, host: str, side: str) -> str:
        """Drop every packet on a host's link, both ways; return how.

        netem loss 100% where the kernel has it, else the link's bridge end leaves the bridge: the host's
        interface stays up with its address and routes, and what it sends goes nowhere (no error, no reset).
        """
        if self.netem():
            self.impair(host, side, "loss", "100%")
            return "netem loss 100%"
        ip("link", "set", self.outer(host, side), "nomaster", namespace=self.bridge_ns)
        return "bridge port detached"

    def slow(self, host: str, side: str) -> str:
        """Delay every packet on a host's link by 200 ms and lose 5%, each way; return how.

        `netem delay 200ms loss 5%` on both ends where the kernel has netem. Else, in the bridge namespace,
        every packet the bridge forwards from or to the link's port passes a chain of its own: an iptables
        `statistic` match drops one in twenty at random, and the rest go to a netfilter queue that a
        tests/faults/delay.py process holds 200 ms each before letting them go in order.
        """
        if self.netem():
            self.impair(host, side, "delay", f"{DELAY_MS}ms", "loss", "5%")
            return f"netem delay {DELAY_MS}ms loss 5%"
        queue, chain, port = self.queues[(host, side)], self.chain(host, side), self.outer(host, side)
        delayer = subprocess.Popen(self.exec_argv("br", [sys.executable, "-m", "tests.faults.delay", "--queue",
                                                         str(queue), "--ms", str(DELAY_MS)]),
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.delayers[(host, side)] = delayer
        said = delayer.stdout.readline().strip()
        if said != "ready":
            raise RuntimeError(f"the delay queue {queue} did not start: {said} {delayer.stdout.read()[-1000:]}")
        iptables(self.bridge_ns, "-N", chain)
        iptables(self.bridge_ns, "-A", chain, "-m", "statistic", "--mode", "random", "--probability", LOSS,
                 "-j", "DROP")
        iptables(self.bridge_ns, "-A", chain, "-j", "NFQUEUE", "--queue-num", str(queue), "--queue-bypass")
        for way in ("--physdev-in", "--physdev-out"):
            iptables(self.bridge_ns, "-A", "FORWARD", "-m", "physdev", way, port, "-j", chain)
        return (f"iptables statistic drop {LOSS} and a netfilter queue held {DELAY_MS}ms "
                "(tests/faults/delay.py), each way")

    @staticmethod
    def chain(host: str, side: str) -> str:
        return f"slow-{side[0]}-{host}"[:28]

    def heal(self, host: str, side: str) -> None:
        for namespace, device in self._ends(host, side):
            tc(namespace, "qdisc", "del", "dev", device, "root", check=False)
        ip("link", "set", self.outer(host, side), "master", side, namespace=self.bridge_ns, check=False)
        delayer = self.delayers.pop((host, side), None)
        if delayer is not None:
            chain, port = self.chain(host, side), self.outer(host, side)
            listed = iptables(self.bridge_ns, "-L", chain, "-n", "-v", "-x", check=False).stdout.splitlines()
            for line in listed[2:]:
                fields = line.split()
                if len(fields) > 2 and fields[0].isdigit():
                    self.slowed["lost" if fields[2] == "DROP" else "delayed"] += int(fields[0])
            for way in ("--physdev-in", "--physdev-out"):
                iptables(self.bridge_ns, "-D", "FORWARD", "-m", "physdev", way, port, "-j", chain, check=False)
            iptables(self.bridge_ns, "-F", chain, check=False)
            iptables(self.bridge_ns, "-X", chain, check=False)
            delayer.terminate()  # lets what it still holds go at once
            try:
                delayer.wait(10)
            except subprocess.TimeoutExpired:
                delayer.kill()
                delayer.wait(10)
            delayer.stdout.close()

    def heal_all(self) -> None:
        for host in self.hosts.values():
            for side in host.links:
                self.heal(host.name, side)

    # --- processes and removal ----------------------------------------------------------------------

    def exec_argv(self, host: str, argv: list[str]) -> list[str]:
        if self.closed:
            raise RuntimeError(f"the namespaces {self.prefix}-* are being removed")
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def destroy(self) -> None:
        self.closed = True
        remove(self.prefix)


def namespaces(prefix: str = PREFIX) -> list[str]:
    done = ip("netns", "list", check=False)
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    return [name for name in names if name.startswith(prefix)]


def remove(prefix: str = PREFIX) -> list[str]:
    """Kill every process in the namespaces named with `prefix` and delete the namespaces; return their names."""
    found = namespaces(prefix)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = set()
        for name in found:
            listed = ip("netns", "pids", name, check=False).stdout.split()
            pids.update(int(pid) for pid in listed if pid.isdigit() and int(pid) != os.getpid())
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while pids and time.monotonic() < deadline:
            pids = {pid for pid in pids if _alive(pid)}
            time.sleep(0.1)
    for name in found:
        ip("netns", "del", name, check=False)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


_libc = ctypes.CDLL(None, use_errno=True)


def enter(namespace: str) -> None:
    """Move the calling thread (only it) into a namespace: its sockets then live on that host."""
    fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns {namespace}: {os.strerror(errno)}")
    finally:
        os.close(fd)
