"""The runner's acceptance test: every planted fault (tests/conformance/planted.py) fails at least one check.

The runner runs once per fault, behind a proxy that plants it, on only the sections the fault concerns
(describe, publication and the closing schema checks always run). The score is printed: each fault,
whether it was caught, and by which checks.
"""

import json
import time

import pytest

from . import harness
from .broken_proxy import broken_proxy
from .planted import PLANTED


@pytest.mark.slow
def test_every_planted_fault_fails_a_check_that_says_why(conformance_server, run_runner, tmp_path):
    base, _, prepared, _ = conformance_server
    # The people are signed in once, here, and given to every run as headers: a sign-in costs a password hash.
    people = {name: harness.session_headers(base, email, harness.PASSWORD + name)
              for name, email, *_ in (*harness.PEOPLE, harness.OTHER_PERSON)}
    (tmp_path / "people.json").write_text(json.dumps(people))
    adapter = {"kind": "headers", "file": str(tmp_path / "people.json")}
    score, missed = [], []
    for planted in PLANTED:
        arguments = [argument for section in planted.sections for argument in ("--section", section)]
        started = time.monotonic()
        with broken_proxy(base, planted.fault()) as proxy:
            status, report, output = run_runner(prepared.config(proxy, people_adapter=adapter), *arguments)
        failed = {check["id"]: check for check in report["checks"] if check["status"] == "failed"}
        caught = sorted(planted.expected & set(failed))
        score.append(f"{planted.name:26} {time.monotonic() - started:5.1f} s  {'caught' if caught else 'MISSED'} by "
                     f"{', '.join(sorted(failed)) or 'nothing'}")
        if not caught or status != 1:
            missed.append(f"{planted.name}: failed {sorted(failed)}, expected one of {sorted(planted.expected)}\n"
                          f"{output[-3000:]}")
            continue
        # The report says why: the exchanges that led to the failure, credentials redacted.
        exchanges = failed[caught[0]].get("exchanges") or []
        assert exchanges, f"{planted.name}: {caught[0]} failed without the exchanges that led to it"
        assert all({"method", "path", "status", "request", "response"} <= set(exchange) for exchange in exchanges)
        assert prepared.agents[0]["client_secret"] not in str(report), f"{planted.name}: a secret in the report"
        assert "last exchange: " in output, output[-3000:]
    print(f"\nplanted faults: {len(PLANTED)}, caught: {len(PLANTED) - len(missed)}")
    print("\n".join(score))
    assert not missed, "\n\n".join(missed)
