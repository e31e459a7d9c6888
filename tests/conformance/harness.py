"""A server for the conformance runner to test: gunicorn with agents, people and every fixture published.

The people and agents are made with the server's own commands (add_org, add_agent, add_person,
import_process), run in one `manage.py shell` so that Django starts once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "conformance" / "runner"
RUNNER_DATA = RUNNER / "agentprocess_conformance" / "data"
FIXTURES = [path.parent for path in sorted((RUNNER_DATA / "fixtures").glob("*/PROCESS.md"))]
PROBES = [path.parent for path in sorted((RUNNER_DATA / "probes").glob("*/PROCESS.md"))]
# A short lease, so that the lease checks outlive one within the runner's default wait.
LEASE_SECONDS = "8"
OTHER_ORG = "other"
PEOPLE = (
    # name, email, operator, in every role
    ("alice", "alice@example.com", True, True),
    ("bob", "bob@example.com", False, True),
    ("carol", "carol@example.com", False, False),
)
OTHER_PERSON = ("dave", "dave@other.example", True, True)

SETUP = """
import io, json
from django.core.management import call_command
from processes import capabilities, parsing, publishing, validation
from processes.management.commands.demo_data import PROFILE_OF

spec = json.loads({spec!r})
# A profile fixture is published only where its profile is offered (conformance/README.md).
offered = capabilities.enabled_profiles()
spec["packages"] = [folder for folder in spec["packages"] if PROFILE_OF.get(folder.rsplit("/", 1)[-1], "core") in
                    ("core", *offered)]


def run(*arguments):
    out = io.StringIO()
    call_command(*arguments, stdout=out)
    return out.getvalue()


def roles_of(folder):
    text, _ = publishing.read_package(folder)
    return validation.role_names(parsing.parse_process(text).frontmatter)


roles = sorted({{role for folder in spec["packages"] for role in roles_of(folder)}})
groups = [argument for role in roles for argument in ("--group", role)]
run("add_org", spec["other_org"])
agents = [run("add_agent", "conformance-1"), run("add_agent", "conformance-2"),
          run("add_agent", "conformance-other", "--org", spec["other_org"])]
for name, email, operator, everywhere, org in spec["people"]:
    run("add_person", email, "--org", org, "--password", spec["password"] + name,
        *(groups if everywhere else []), "--operator" if operator else "--no-operator")
published = {{}}
for folder in spec["packages"]:
    binds = [argument for role in roles_of(folder) for argument in ("--bind", role + "=" + role)]
    published[folder] = run("import_process", folder, "--publish", *binds).strip()
print("CONFORMANCE-SETUP " + json.dumps({{"agents": agents, "published": published}}))
"""
PASSWORD = "Conformance-pw-"


@dataclass
class Prepared:
    """What the runner is told: agents' credentials, people's sign-in, and what publishing printed."""

    agents: list[dict]
    published: dict[str, dict]

    def config(self, url: str, **extra) -> dict:
        return {
            "url": url + "/mcp",
            "rest": "/api/tools/",
            "agents": self.agents[:2],
            "people_adapter": {"kind": "sign-in-form", "login_url": "/accounts/login/"},
            "people": [person(*entry) for entry in PEOPLE],
            "other_organization": {"agents": self.agents[2:], "people": [person(*OTHER_PERSON)]},
            "fixtures": {"published": self.published},
            **extra,
        }


def person(name: str, email: str, operator: bool, everywhere: bool) -> dict:
    return {"name": name, "login": email, "password": PASSWORD + name, "operator": operator,
            "roles": "*" if everywhere else []}


def credentials(printed: str) -> dict:
    """Read add_agent's `CLIENT_ID=…` and `CLIENT_SECRET=…` lines."""
    values = dict(line.split("=", 1) for line in printed.split() if "=" in line)
    return {"client_id": values["CLIENT_ID"], "client_secret": values["CLIENT_SECRET"]}


def publication(line: str) -> dict:
    """Read import_process's `published|unchanged NAME version N sha256 HEX` line."""
    words = line.split()
    assert words[0] in ("published", "unchanged") and words[2] == "version" and words[4] == "sha256", line
    return {"version": int(words[3]), "sha256": words[5]}


def prepare(env: dict) -> Prepared:
    """Create the other organization, three agents, four people, and publish every fixture and probe."""
    spec = {
        "other_org": OTHER_ORG,
        "password": PASSWORD,
        "people": [[*entry, "default"] for entry in PEOPLE] + [[*OTHER_PERSON, OTHER_ORG]],
        "packages": [str(folder) for folder in FIXTURES + PROBES],
    }
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SETUP.format(spec=json.dumps(spec))],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("CONFORMANCE-SETUP "))
    found = json.loads(line.split(" ", 1)[1])
    return Prepared(
        agents=[credentials(printed) for printed in found["agents"]],
        published={Path(folder).name: publication(printed) for folder, printed in found["published"].items()},
    )


def publish_command(env: dict) -> dict:
    """The runner's `fixtures.publish` setting for this server: import_process with every role bound."""
    return {
        "command": [sys.executable, "manage.py", "import_process", "{path}", "--publish"],
        "bind": ["--bind", "{role}={group}"],
        "cwd": str(ROOT),
        "env": {key: env[key] for key in ("DATABASE_URL", "SECRET_KEY", "PYTHONWARNINGS") if key in env},
        "jobs": 2,
    }


def session_headers(base: str, email: str, password: str) -> dict[str, str]:
    """Sign in through the form as a browser would and return the headers that carry that session."""
    http = requests.Session()
    page = http.get(f"{base}/accounts/login/", timeout=30).text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    answer = http.post(f"{base}/accounts/login/", data={"login": email, "password": password,
                                                         "csrfmiddlewaretoken": token},
                       headers={"Referer": f"{base}/accounts/login/"}, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.status_code
    cookies = http.cookies.get_dict()
    return {"Cookie": "; ".join(f"{key}={value}" for key, value in cookies.items()),
            "X-CSRFToken": cookies["csrftoken"], "Referer": f"{base}/"}
