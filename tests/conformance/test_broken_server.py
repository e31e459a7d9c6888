"""Every check can fail: behind a proxy that breaks three rules, exactly the checks of those rules fail."""

import pytest

from .broken_proxy import FAULTS, Faults, broken_proxy

# Each fault and the checks that hold a server to the rule it breaks.
EXPECTED = {
    "already_decided": {"people.already_decided", "people.first_decision_wins"},
    "newest_first": {"wait.oldest_first"},
    "token_leak": {"agent.token_private"},
}


@pytest.mark.slow
def test_the_runner_fails_exactly_the_checks_of_the_broken_rules(conformance_server, run_runner):
    base, _, prepared, _ = conformance_server
    with broken_proxy(base, Faults(FAULTS)) as proxy:
        status, report, output = run_runner(prepared.config(proxy))
    failed = {check["id"] for check in report["checks"] if check["status"] == "failed"}
    assert status == 1, output[-5000:]
    assert failed == set().union(*EXPECTED.values()), output[-8000:]
    assert report["summary"]["failed"] == len(failed)
    messages = {check["id"]: check["message"] for check in report["checks"]}
    assert "stale" in messages["people.already_decided"]
    assert "{'sequence': 2}" in messages["wait.oldest_first"]
    assert "FAIL  no claim token ever appears in get_run" in output
