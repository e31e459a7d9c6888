"""docs/conformance.md as a reader follows it: its configuration examples, and its recipe run as written.

The recipe ("Against this server, in five minutes") is three shell blocks: the server in one terminal,
then in another the short set-up with its run, then the second organization with another run. The slow
test runs them unchanged, in a folder that stands for the checkout (each of its entries a link to this
one's, so that the files the recipe writes land there), with a port and a var/ folder of its own.
"""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml
from agentprocess_conformance import config, framework, scenarios

from tests.config.nodes import free_port

from .harness import ROOT

DOC = ROOT / "docs" / "conformance.md"
RECIPE = "## Against this server, in five minutes"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M)
HEREDOC = re.compile(r"^cat >>? conformance\.yaml <<EOF\n(.*?)^EOF$", re.S | re.M)
# What the checkout holds that the recipe must not see or change: the server's own data, and what it writes.
NOT_LINKED = {".git", "var", "dist", "conformance.yaml"}
SUMMARY = re.compile(r"^(\d+) checks: (\d+) passed, (\d+) failed, (\d+) skipped$", re.M)


def recipe_blocks() -> list[str]:
    text = DOC.read_text()
    start = text.index(RECIPE)
    return SHELL_BLOCK.findall(text[start:text.index("\n## ", start + len(RECIPE))])


def test_the_recipe_is_a_server_a_short_set_up_and_a_second_organization():
    server, short, full = recipe_blocks()
    assert "make run" in server and "conformance.yaml" not in server
    assert short.count("agentprocess-conformance.pyz") == 2 and "check-config" in short
    assert "add_org other" in full and "agentprocess-conformance.pyz --config" in full


def test_the_configuration_the_recipe_writes_is_one_the_runner_takes():
    _, short, full = recipe_blocks()
    written = "".join(HEREDOC.findall(short) + HEREDOC.findall(full))
    written = written.replace("${PORT:-8000}", "8123").replace("$CLIENT_ID", "id").replace("$CLIENT_SECRET", "secret")
    assert "$" not in written, written
    built = config.build(yaml.safe_load(written), overrides={"agents": [{"client_id": "a", "client_secret": "b"}] * 2})
    assert built.mcp_url == "http://127.0.0.1:8123/mcp" and built.rest_url == "http://127.0.0.1:8123/api/tools/"
    assert [person.name for person in built.home.people] == ["demo", "colleague", "carol"]
    assert built.other and built.other.people[0].name == "dave"


def test_every_configuration_example_of_the_doc_is_one_the_runner_takes():
    blocks = YAML_BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 3
    for block in blocks:
        # A fragment is read beside the two keys every configuration needs.
        config.build({"url": "http://127.0.0.1:8000/mcp", "agents": [{"token": "t"}], **yaml.safe_load(block)})


def checkout_copy(folder: Path) -> Path:
    """A folder that stands for the checkout: a link to each of its entries but its data and the recipe's files."""
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED:
            (folder / entry.name).symlink_to(entry)
    return folder


def wait_for(url: str, server: subprocess.Popen, log: Path) -> None:
    """Wait until url answers; `make run` migrates a new database first (bounded far above that)."""
    deadline = time.monotonic() + 600
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-5000:]
            time.sleep(0.5)


def skipped_by_section(output: str) -> Counter:
    """How many checks each section skipped, read from the runner's printed report."""
    scenarios.load()
    headings = {f"{section.title} ({section.spec})": section.key for section in framework.SECTIONS}
    found, section = Counter(), None
    for line in output.splitlines():
        section = headings.get(line, section)
        if line.startswith("  SKIP"):
            found[section] += 1
    return found


@pytest.mark.slow
def test_the_recipe_runs_as_written(tmp_path):
    # `make run` installs the server into .venv when pyproject.toml is newer: never from the linked folder.
    current = subprocess.run(["make", "-q", ".venv/.installed"], cwd=ROOT, capture_output=True, check=False)
    assert current.returncode == 0, "the virtualenv is older than pyproject.toml: run `make test` first"
    checkout = checkout_copy(tmp_path / "checkout")
    port = free_port()
    # A reader's shell: the checkout's Makefile and .venv, nothing of this test's settings or virtualenv.
    path = os.pathsep.join(entry for entry in os.environ["PATH"].split(os.pathsep) if not entry.startswith(sys.prefix))
    environment = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8",
                   "PORT": str(port), "VAR_DIR": str(tmp_path / "var")}
    server_block, short, full = recipe_blocks()
    log = tmp_path / "server.log"
    with open(log, "wb") as written:
        server = subprocess.Popen(["bash", "-euo", "pipefail", "-c", server_block], cwd=checkout, env=environment,
                                  stdout=written, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz", server, log)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", short + full], cwd=checkout, env=environment,
                              capture_output=True, text=True, timeout=1800, check=False)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:] + "\n--- server ---\n" + log.read_text()[-3000:]
    preflight, short_run, full_run = re.split(r"^(?=agentprocess conformance )", done.stdout, flags=re.M)
    assert "ready to run" in preflight, preflight
    for run in (short_run, full_run):
        [(total, passed, failed, skipped)] = SUMMARY.findall(run)
        assert failed == "0" and int(total) > 100 and int(passed) + int(skipped) == int(total), run[-3000:]
    # As the doc says: first the isolation checks, check-1 and the one-minute timeout skip; then only the last two.
    short_skips, full_skips = skipped_by_section(short_run), skipped_by_section(full_run)
    assert set(short_skips) == {"isolation", "check", "waits"} and short_skips["waits"] == 1, short_skips
    assert set(full_skips) == {"check", "waits"} and full_skips["waits"] == 1, full_skips
    assert (checkout / "dist" / "agentprocess-conformance.pyz").exists() and (checkout / "conformance.yaml").exists()
