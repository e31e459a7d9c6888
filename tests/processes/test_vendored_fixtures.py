from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[2] / "conformance" / "fixtures"
PROTOCOL = Path(__file__).resolve().parents[3] / "shared" / "agentprocess" / "conformance" / "fixtures"


def test_vendored_fixtures_equal_the_protocols():
    if not PROTOCOL.exists():
        pytest.skip("the protocol repository is not beside this one")
    ours = {p.relative_to(HERE): p.read_bytes() for p in HERE.rglob("PROCESS.md")}
    theirs = {p.relative_to(PROTOCOL): p.read_bytes() for p in PROTOCOL.rglob("PROCESS.md")}
    assert ours == theirs
    assert len(ours) == 12
