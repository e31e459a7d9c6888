"""Hold every packet of a netfilter queue for a fixed time, then let it go: link delay without tc netem.

    ip netns exec <namespace> python -m tests.faults.delay --queue 1 --ms 200

An nftables rule in the namespace (`queue num 1 bypass`, tests/faults/netns.py) hands each packet to
this process, which keeps it for `--ms` milliseconds and then accepts it, in arrival order, so every
packet is late by the same time and none is reordered. It speaks nfnetlink_queue directly over a
netlink socket (no libnetfilter_queue): bind the queue, copy metadata only, read each packet's id,
answer a batch verdict for every packet whose time came. On SIGTERM or SIGINT it lets every held
packet go at once and exits. It prints `ready` once the queue is bound.
"""

from __future__ import annotations

import argparse
import collections
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_GSO = 0x1, 0x4
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
NF_ACCEPT = 1
QUEUE_LENGTH = 8192


def attribute(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def message(msg: int, queue: int, attributes: bytes, flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attributes
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body


class Queue:
    """One bound nfnetlink queue in the calling process's network namespace."""

    def __init__(self, number: int):
        self.number = number
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        self.seq = 0

    def configure(self) -> None:
        """Bind the queue, ask for metadata only, let packets through if the queue overflows."""
        flags = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO
        for attrs in (
            attribute(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, 0)),
            attribute(NFQA_CFG_PARAMS, struct.pack(">IB", 0, NFQNL_COPY_META)),
            attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", QUEUE_LENGTH)),
            attribute(NFQA_CFG_MASK, struct.pack(">I", flags)) + attribute(NFQA_CFG_FLAGS, struct.pack(">I", flags)),
        ):
            self.seq += 1
            self.sock.send(message(NFQNL_MSG_CONFIG, self.number, attrs, NLM_F_REQUEST | NLM_F_ACK, self.seq))
            self._acknowledged(self.seq)

    def _acknowledged(self, seq: int) -> None:
        while True:
            data = self.sock.recv(65536)
            for kind, msg_seq, payload in self._messages(data):
                if kind == NLMSG_ERROR and msg_seq == seq:
                    (error,) = struct.unpack_from("=i", payload)
                    if error:
                        raise OSError(-error, f"nfnetlink_queue {self.number}: {os.strerror(-error)}")
                    return

    @staticmethod
    def _messages(data: bytes):
        offset = 0
        while offset + 16 <= len(data):
            length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data, offset)
            if length < 16:
                return
            yield kind, seq, data[offset + 16:offset + length]
            offset += (length + 3) & ~3

    def packets(self, data: bytes) -> list[int]:
        """The ids of the queued packets in one read."""
        ids = []
        for kind, _seq, payload in self._messages(data):
            if kind != (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                continue
            offset = 4  # past the nfgenmsg
            while offset + 4 <= len(payload):
                length, attr = struct.unpack_from("=HH", payload, offset)
                if length < 4:
                    break
                if attr & 0x3FFF == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from(">I", payload, offset + 4)[0])
                offset += (length + 3) & ~3
        return ids

    def accept_through(self, packet_id: int) -> None:
        """Accept every queued packet whose id is at most `packet_id` (one batch verdict)."""
        self.sock.send(message(NFQNL_MSG_VERDICT_BATCH, self.number,
                               attribute(NFQA_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, packet_id))))


def hold(queue: Queue, seconds: float) -> None:
    held: collections.deque = collections.deque()  # (when to let go, packet id), in arrival order
    stopping = []

    def stop(_signum, _frame):
        stopping.append(True)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        wait = max(0.0, held[0][0] - time.monotonic()) if held else 1.0
        try:
            readable, _, _ = select.select([queue.sock], [], [], wait)
        except InterruptedError:
            continue
        if readable:
            try:
                data = queue.sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                data = b""
            now = time.monotonic()
            held.extend((now + seconds, packet_id) for packet_id in queue.packets(data))
        now, last = time.monotonic(), None
        while held and held[0][0] <= now:
            last = held.popleft()[1]
        if last is not None:
            queue.accept_through(last)
    if held:
        queue.accept_through(held[-1][1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.delay", description=__doc__.split("\n")[0])
    parser.add_argument("--queue", type=int, required=True, help="the netfilter queue number to bind")
    parser.add_argument("--ms", type=float, default=200, help="how long each packet is held (default 200)")
    args = parser.parse_args(argv)
    queue = Queue(args.queue)
    queue.configure()
    print("ready", flush=True)
    hold(queue, args.ms / 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
