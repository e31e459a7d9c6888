"""The runner as one file: `make conformance-zipapp` builds it, and a Python with nothing installed runs it."""

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from . import harness
from .test_runner import SKIPPED, statuses

ZIPAPP = "agentprocess-conformance.pyz"
COMPILED = (*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd", ".dylib", ".dll")
# What the archive holds: its entry point, the runner, and its two pure-Python dependencies.
TOP_LEVEL = {"__main__.py", "agentprocess_conformance", "yaml", "_yaml", "rfc8785"}


def plain_python() -> str:
    """The interpreter the virtualenv was made from (the Makefile's python3.11): none of the venv's packages."""
    found = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert found.exists() and sys.base_prefix != sys.prefix, (found, sys.prefix)
    return str(found)


def build(output: Path) -> None:
    done = subprocess.run(["make", "--no-print-directory", "conformance-zipapp", f"ZIPAPP={output}"], cwd=harness.ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow
def test_the_zipapp_alone_passes_against_this_server(conformance_server, tmp_path):
    base, env, prepared, _ = conformance_server
    build(tmp_path / "build" / ZIPAPP)
    names = zipfile.ZipFile(tmp_path / "build" / ZIPAPP).namelist()
    assert not [name for name in names if name.endswith(COMPILED)]
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == TOP_LEVEL
    # An empty folder with the file and a configuration, and a Python that sees nothing of the virtualenv.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(tmp_path / "build" / ZIPAPP, alone / ZIPAPP)
    # It publishes the fixtures itself, handing the server's import_process each fixture's folder.
    publish = harness.publish_command(env)
    publish["env"].update({key: env[key] for key in ("REDIS_URL", "CACHE_KEY_PREFIX") if key in env})
    (alone / "conformance.json").write_text(json.dumps(prepared.config(base, fixtures={"publish": publish})))
    python = plain_python()
    (tmp_path / "tmp").mkdir()
    environment = {"PATH": os.environ["PATH"], "HOME": str(alone), "LANG": "C.UTF-8", "TMPDIR": str(tmp_path / "tmp")}
    seen = subprocess.run([python, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"], cwd=alone,
                          env=environment, capture_output=True, text=True, timeout=60, check=True)
    assert not [entry for entry in json.loads(seen.stdout) if entry.startswith((sys.prefix, str(harness.ROOT)))], seen.stdout
    done = subprocess.run([python, "-I", ZIPAPP, "--config", "conformance.json", "--mcp", "2026-07-28",
                           "--report-json", "report.json"], cwd=alone, env=environment, capture_output=True, text=True,
                          timeout=900, check=False)
    output = done.stdout + done.stderr
    report = json.loads((alone / "report.json").read_text())
    results = statuses(report)
    failed = {check["id"]: check["message"] for check in report["checks"] if check["status"] == "failed"}
    assert done.returncode == 0 and not failed, output[-8000:]
    assert "(MCP 2026-07-28)" in output.splitlines()[0], output.splitlines()[0]
    assert {key for key, value in results.items() if value == "skipped"} == SKIPPED - {"publish.accepted"}, output[-5000:]
    assert results["publish.accepted"] == results["publish.hash"] == results["publish.version"] == "passed"
    assert {"mcp", "describe", "publication", "agents", "leases", "people", "ending", "waits", "idempotency",
            "isolation", "modes", "parallel", "rest", "answers"} <= {check["section"] for check in report["checks"]}
    mcp = {key: value for key, value in results.items() if key.startswith("mcp.")}
    assert mcp["mcp.discover"] == mcp["mcp.stateless_tools"] == mcp["mcp.stateless_headers"] == "passed", mcp
    assert set(mcp.values()) == {"passed"}, mcp
    # The fixtures, inside the archive, were handed out as files of a temporary folder, removed at the end.
    assert not list((tmp_path / "tmp").iterdir())
    assert sorted(path.name for path in alone.iterdir()) == [ZIPAPP, "conformance.json", "report.json"]
