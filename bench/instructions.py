"""The instructions a tool call costs against the floor's, counted by valgrind: the same figure on a busy machine.

    python bench/instructions.py [--runs 20] [--warmup 10]

CPU time on a shared machine moves by more than most changes to the code do; the count of
instructions a request makes does not. This drives the scenarios of bench/inproc.py (one-step,
five-step, floor) through Django's WSGI handler in one process run under valgrind's callgrind, which
counts the instructions of this process alone (not PostgreSQL's, not the kernel's). Each request is
made from inside a C function nothing else on the path calls (`functools.reduce` for the floor,
`bisect.bisect_left`'s key for one-step, `itertools.starmap` for five-step), and callgrind writes its
count out as each of them is entered and left (`--dump-before`, `--dump-after`), so every request's
count is its own. It prints each tool's instructions per call, each scenario's, and their ratio to
the floor's. Two runs of the same code agree to about half a percent.

The process runs with PYTHONHASHSEED=0, with the bearer token remembered for the whole run
(TOKEN_CACHE_SECONDS), and with the objects made before the measured requests frozen out of the
garbage collector's passes (gc.freeze), so no request pays for what came before it. Its database is
made and migrated first, outside valgrind. Instructions leave out what a request waits for and what
the kernel does for it (the floor's five round trips against a tool call's one), so a ratio here is
higher than the same code's ratio by CPU time (bench/inproc.py). A run takes a few minutes.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import recreate_database, setup_django

# The C functions each scenario's requests are made inside, and callgrind's names for them.
MARKERS = {"floor": "functools_reduce", "one-step": "_bisect_bisect_left", "five-step": "starmap_next"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="measured runs of each scenario (floor: 8 requests each)")
    parser.add_argument("--warmup", type=int, default=10, help="runs of each scenario before measuring")
    parser.add_argument("--database", default="bench_instructions", help="the database to create (dropped first)")
    parser.add_argument("--measure", metavar="FILE", help=argparse.SUPPRESS)  # the run under valgrind
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    os.environ["ROOT_URLCONF"] = "bench.urls"
    url = recreate_database(args.database)
    setup_django(url)
    from bench.agents import prepare

    credentials = prepare(1)[0]
    from django.db import connections

    connections.close_all()
    with tempfile.TemporaryDirectory() as out:
        setup = Path(out) / "setup.json"
        setup.write_text(json.dumps({"url": url, "credentials": credentials}))
        triggers = [f"--dump-{when}={marker}" for marker in MARKERS.values() for when in ("before", "after")]
        env = {**os.environ, "PYTHONHASHSEED": "0", "TOKEN_CACHE_SECONDS": str(10**6)}
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out", *triggers, sys.executable,
             __file__, "--measure", str(setup), "--runs", str(args.runs), "--warmup", str(args.warmup)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        if done.returncode:
            raise SystemExit(f"the run under valgrind failed ({done.returncode}):\n{done.stderr[-4000:]}")
        report(Path(out), json.loads((Path(out) / "labels.json").read_text()), args.runs)


def measure(args) -> None:
    """Under valgrind: warm up, then make each measured request inside its scenario's marker."""
    import bisect
    import gc
    import itertools
    import random

    setup = json.loads(Path(args.measure).read_text())
    os.environ["ROOT_URLCONF"] = "bench.urls"
    os.environ["DATABASE_URL"] = setup["url"]
    os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler

    from bench import inproc

    handler = WSGIHandler()
    caller = inproc.Caller(handler, inproc.access_token(handler, *setup["credentials"]), 0)
    random.seed(1)
    for _ in range(args.warmup):
        for scenario in inproc.SCENARIOS.values():
            scenario(caller)
    gc.collect()
    gc.freeze()

    sent = inproc.request
    labels: list[list[str]] = []  # (scenario, tool) of each measured request, in order
    current = [""]

    def request(handler, path, *rest):
        labels.append([current[0], path.rsplit("/", 1)[1]])
        call = functools.partial(sent, handler, path, *rest)
        if current[0] == "floor":
            return functools.reduce(lambda _acc, _item: call(), [None], None)
        if current[0] == "one-step":
            answers = []
            bisect.bisect_left([0], 0, key=lambda _item: answers.append(call()) or 0)
            return answers[0]
        return next(itertools.starmap(call, [()]))

    inproc.request = request
    for _ in range(args.runs):
        for name, scenario in inproc.SCENARIOS.items():
            current[0] = name
            scenario(caller)
    Path(args.measure).with_name("labels.json").write_text(json.dumps(labels))


def report(out: Path, labels: list, runs: int) -> None:
    """Each dump written as a marker was left is one request's count; they come in the requests' order."""
    names = {marker: name for name, marker in MARKERS.items()}
    counts = []
    for path in sorted(out.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:])):
        head = path.read_text(errors="replace")[:4000]
        trigger = re.search(r"^desc: Trigger: --dump-after=(\S+)", head, re.M)
        total = re.search(r"^summary: (\d+)", head, re.M)
        if trigger and total and trigger.group(1) in names:
            counts.append((names[trigger.group(1)], int(total.group(1))))
    counts = counts[-len(labels):]
    if [name for name, _n in counts] != [scenario for scenario, _tool in labels]:
        raise SystemExit("the dumps do not follow the requests: a marker was entered on the path itself")
    by_tool, by_scenario = defaultdict(list), defaultdict(list)
    for (scenario, tool), (_name, n) in zip(labels, counts, strict=True):
        by_tool[scenario, tool].append(n)
        by_scenario[scenario].append(n)

    def mean(values):
        return sum(values) / len(values)

    floor = mean(by_scenario["floor"])
    print(f"{runs} runs of each scenario under callgrind, in one process; instructions of this process per request\n")
    print(f"  {'scenario':<11}{'tool':<12}{'calls':>7}{'instructions':>15}{'× floor':>10}")
    for scenario in ("one-step", "five-step"):
        for (name, tool), values in sorted(by_tool.items()):
            if name == scenario:
                print(f"  {scenario:<11}{tool:<12}{len(values):>7}{mean(values):>15,.0f}{mean(values) / floor:>10.3f}")
    print()
    for scenario in ("floor", "one-step", "five-step"):
        values = by_scenario[scenario]
        print(f"  {scenario:<11}{'(per call)':<12}{len(values):>7}{mean(values):>15,.0f}{mean(values) / floor:>10.3f}")


if __name__ == "__main__":
    main()
