"""Hosts of our own on one machine: network namespaces joined by two bridges, and link faults with tc netem.

Every namespace this module makes is named `<prefix>-<host>` where the prefix starts with PREFIX, so a
killed run's leftovers are found by name (`cleanup`). The root namespace is never changed: the veth
pairs are made inside the bridge namespace with their far ends put straight into the host namespaces.

    front 10.213.1.0/24   client, app nodes          (what a client reaches)
    back  10.213.2.0/24   app nodes, db, redis, timers (what a node reaches)

A host's link to a bridge is a veth pair: `<host>` in the bridge namespace, `front`/`back` in the host's.
Link faults are netem qdiscs on both ends, so both directions suffer; on a kernel without netem a cut
detaches the link from its bridge and a slow link is a token-bucket qdisc (tbf) on both ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass

PREFIX = "apnf"
CLONE_NEWNET = 0x40000000
SUBNETS = {"front": "10.213.1", "back": "10.213.2"}


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


def missing_tools() -> list[str]:
    """What this machine lacks to build the network (root, ip netns, tc, the netem qdisc)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the network harness needs root (ip netns, tc)")
    for tool in ("ip", "tc"):
        if subprocess.run(["which", tool], capture_output=True).returncode != 0:
            problems.append(f"`{tool}` is missing (install iproute2)")
    return problems


class Network:
    """The namespaces of one run; `build()` makes them, `destroy()` removes them and what runs inside."""

    def __init__(self, hosts: list[Host], tag: str | None = None):
        self.prefix = f"{PREFIX}{tag or uuid.uuid4().hex[:6]}"
        self.hosts = {host.name: host for host in hosts}
        self.bridge_ns = self.ns("br")
        self._netem: bool | None = None

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
        """Delay and lose packets on a host's link, both ways; return how.

        netem delay 200ms loss 5% where the kernel has it, else a token bucket of 256 kbit/s that queues a
        packet up to 200 ms and drops what would wait longer.
        """
        if self.netem():
            self.impair(host, side, "delay", "200ms", "loss", "5%")
            return "netem delay 200ms loss 5%"
        for namespace, device in self._ends(host, side):
            tc(namespace, "qdisc", "replace", "dev", device, "root", "tbf", "rate", "256kbit", "burst", "4kb",
               "latency", "200ms")
        return "tbf 256kbit latency 200ms"

    def heal(self, host: str, side: str) -> None:
        for namespace, device in self._ends(host, side):
            tc(namespace, "qdisc", "del", "dev", device, "root", check=False)
        ip("link", "set", self.outer(host, side), "master", side, namespace=self.bridge_ns, check=False)

    def heal_all(self) -> None:
        for host in self.hosts.values():
            for side in host.links:
                self.heal(host.name, side)

    # --- processes and removal ----------------------------------------------------------------------

    def exec_argv(self, host: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def destroy(self) -> None:
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
