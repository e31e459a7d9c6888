"""Where a tool call's Python goes beyond the floor's, function by function, counted in bytecode steps.

    python bench/opcodes.py [--scenario five-step] [--runs 6] [--top 40]

CPU time on a shared machine moves by more than most changes to the code do, and an instruction count
(bench/instructions.py) says how much a request costs but not where. This counts the bytecode
instructions Python executes for each request (sys.settrace's opcode events), by the function that
executes them, after a warm-up, for the scenario's requests and for the floor's (bench/inproc.py's
scenarios, through Django's WSGI handler in this process). The count is the same on every run of
the same code on any machine, so a change's effect shows exactly; what it leaves out is the work done
in C (the driver, JSON, dicts), which bench/instructions.py counts.

It prints each tool's steps per request and their ratio to the floor's, then the functions whose own
steps per request exceed the floor's most, with how many more calls per request each takes.
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, recreate_database, setup_django

# Where installed packages and the standard library are, left out of the names printed.
PLACES = (sysconfig.get_paths()["purelib"] + "/", sysconfig.get_paths()["stdlib"] + "/", str(ROOT) + "/")


class Counted:
    """Steps of Python per function (its own), and calls per function, over the requests made inside."""

    def __init__(self):
        self.steps: Counter = Counter()
        self.calls: Counter = Counter()
        self.names: dict = {}  # a code object: its name as printed

    def name(self, code) -> str:
        name = self.names.get(code)
        if name is None:
            path = code.co_filename
            for place in PLACES:
                path = path.replace(place, "")
            name = self.names[code] = f"{path}:{code.co_firstlineno}({code.co_name})"
        return name

    def trace(self, frame, event, _arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            self.steps[frame.f_code] += 1
        elif event == "call":
            self.calls[frame.f_code] += 1
        return self.trace

    def by_name(self, counter: Counter, requests: int) -> dict:
        out: Counter = Counter()
        for code, n in counter.items():
            out[self.name(code)] += n / requests
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="five-step", choices=["one-step", "five-step"])
    parser.add_argument("--runs", type=int, default=6, help="counted runs of the scenario (the floor: as many)")
    parser.add_argument("--warmup", type=int, default=20, help="runs of each scenario before counting")
    parser.add_argument("--top", type=int, default=40, help="functions to print")
    parser.add_argument("--database", default="bench_opcodes", help="the database to create (dropped first)")
    args = parser.parse_args()

    import os

    os.environ["ROOT_URLCONF"] = "bench.urls"
    os.environ["TOKEN_CACHE_SECONDS"] = str(10**6)  # the token checked once, as on a warm path
    setup_django(recreate_database(args.database))
    from django.core.handlers.wsgi import WSGIHandler

    from bench import inproc
    from bench.agents import prepare

    handler = WSGIHandler()
    caller = inproc.Caller(handler, inproc.access_token(handler, *prepare(1)[0]), 0)
    random.seed(1)
    for _ in range(args.warmup):
        for scenario in inproc.SCENARIOS.values():
            scenario(caller)

    sent = inproc.request
    counted = {"floor": Counted(), args.scenario: Counted()}
    per_tool: Counter = Counter()
    requests: Counter = Counter()
    current = [""]

    def request(handler, path, *rest):
        tool = path.rsplit("/", 1)[1]
        counts = counted[current[0]]
        before = sum(counts.steps.values())
        sys.settrace(counts.trace)
        try:
            return sent(handler, path, *rest)
        finally:
            sys.settrace(None)
            per_tool[current[0], tool] += sum(counts.steps.values()) - before
            requests[current[0], tool] += 1

    inproc.request = request
    for _ in range(args.runs):
        for name in counted:
            current[0] = name
            inproc.SCENARIOS[name](caller)

    total = {name: sum(n for (scenario, _t), n in requests.items() if scenario == name) for name in counted}
    floor = sum(counted["floor"].steps.values()) / total["floor"]
    print(f"{args.runs} runs of {args.scenario} and of the floor; Python's bytecode steps per request\n")
    print(f"  {'tool':<14}{'requests':>9}{'steps':>10}{'× floor':>10}")
    for (scenario, tool), n in sorted(per_tool.items()):
        if scenario != "floor":
            print(f"  {tool:<14}{requests[scenario, tool]:>9}{n / requests[scenario, tool]:>10,.0f}"
                  f"{n / requests[scenario, tool] / floor:>10.3f}")
    mean = sum(counted[args.scenario].steps.values()) / total[args.scenario]
    print(f"  {'(per call)':<14}{total[args.scenario]:>9}{mean:>10,.0f}{mean / floor:>10.3f}")
    print(f"  {'floor':<14}{total['floor']:>9}{floor:>10,.0f}{1:>10.3f}\n")

    ours, theirs = counted[args.scenario], counted["floor"]
    steps = ours.by_name(ours.steps, total[args.scenario])
    base = theirs.by_name(theirs.steps, total["floor"])
    calls = ours.by_name(ours.calls, total[args.scenario])
    base_calls = theirs.by_name(theirs.calls, total["floor"])
    excess = sorted(((steps.get(k, 0) - base.get(k, 0), k) for k in set(steps) | set(base)), reverse=True)
    print(f"  the functions whose own steps per request exceed the floor's most (of {mean - floor:,.0f} in all)\n")
    print(f"  {'steps':>8}{'calls':>8}  function")
    for more, name in excess[: args.top]:
        print(f"  {more:>8,.0f}{calls.get(name, 0) - base_calls.get(name, 0):>8.2f}  {name}")


if __name__ == "__main__":
    main()
