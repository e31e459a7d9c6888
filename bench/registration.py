"""Open client registration under load: what 16 loops of anonymous registrations do to everyone else.

    python bench/registration.py [--loops 16] [--seconds 10] [--rate 10/m/ip]

Starts gunicorn against a fresh PostgreSQL database, measures `/healthz` idle, then again while `loops`
threads post well-formed registrations (RFC 7591) as fast as they are answered, most of them refused by
the rate limit (`--rate`, OAUTH_REGISTRATION_RATE). Prints the answers by status, and `/healthz`'s
latency idle and under load: a registration refused by the limit must cost next to nothing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Server, percentile, recreate_database, setup_django

BODY = json.dumps(
    {
        "client_name": "bench",
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        "scope": "agentprocess",
    }
)


def healthz_latencies(port: int, seconds: float) -> list[float]:
    times = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        times.append(time.perf_counter() - started)
        time.sleep(0.05)
    conn.close()
    return times


def register_loop(port: int, stop: threading.Event, statuses: Counter) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        conn.request("POST", "/identity/o/api/clients", BODY, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        statuses[response.status] += 1
        if response.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.close()


def describe(label: str, times: list[float]) -> str:
    return (
        f"  /healthz {label:<10} {len(times):>5} calls  mean {statistics.fmean(times) * 1000:8.1f} ms"
        f"  p50 {percentile(times, 0.5) * 1000:8.1f} ms  p95 {percentile(times, 0.95) * 1000:8.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", default="10/m/ip")
    args = parser.parse_args()
    url = recreate_database("bench_registration")
    setup_django(url)
    server = Server(url, threads=4, extra_env={"OAUTH_REGISTRATION_RATE": args.rate})
    try:
        idle = healthz_latencies(server.port, min(args.seconds, 3))
        stop, statuses = threading.Event(), Counter()
        loops = [
            threading.Thread(target=register_loop, args=(server.port, stop, statuses), daemon=True)
            for _ in range(args.loops)
        ]
        started = time.monotonic()
        for loop in loops:
            loop.start()
        loaded = healthz_latencies(server.port, args.seconds)
        stop.set()
        for loop in loops:
            loop.join()
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    answered = sum(statuses.values())
    print(f"{args.loops} registration loops for {elapsed:.1f} s, rate {args.rate}:")
    print(f"  registrations  {answered} ({answered / elapsed:.0f}/s): "
          + ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items())))
    print(describe("idle", idle))
    print(describe("loaded", loaded))


if __name__ == "__main__":
    main()
