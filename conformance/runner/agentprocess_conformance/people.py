"""Acting as a person. How a server knows a human identity is outside the protocol (spec §6 rule 4), so the
runner asks an adapter for each person's door to the tools.

- `SignInForm` signs in through an HTML form, keeps the session cookie and calls the REST tools with
  the form's CSRF token, as a browser page of the server would.
- `HeaderPeople` sends fixed HTTP headers per person, read from a JSON file, to the REST tools or to MCP.
- `CommandPeople` runs a command of the operator's once per person and reads that person's headers from
  its output (a JSON object, or `Name: value` lines), then sends them as `HeaderPeople` does.
- Any other: `{"kind": "python", "object": "package.module:factory"}`, a callable taking
  (adapter settings, Config) and returning an object with `door(person)`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urljoin

from . import exchanges
from .config import Config, ConfigError, Person
from .transport import McpSession, RestSession

TIMEOUT = 30
HIDDEN_INPUT = re.compile(r"<input[^>]*>", re.IGNORECASE)


class SignInFailed(Exception):
    """The person could not be signed in; the message says what the server answered."""


class PersonAdapter:
    """Give the runner a door to the tools that the server takes as this person."""

    def door(self, person: Person):
        raise NotImplementedError


def hidden_value(html: str, name: str) -> str | None:
    """Return the value of the form input called name in html, if any."""
    for tag in HIDDEN_INPUT.findall(html):
        if re.search(rf'name=["\']{re.escape(name)}["\']', tag):
            found = re.search(r'value=["\']([^"\']*)["\']', tag)
            return found.group(1) if found else None
    return None


class SignInForm(PersonAdapter):
    """Sign in through the server's form; call the REST tools with the session cookie and CSRF token."""

    def __init__(self, settings: dict, config: Config):
        base = config.base_url + "/"
        self.login_url = urljoin(base, settings.get("login_url", "/accounts/login/"))
        tools = settings.get("tools_url") or config.rest_url or "/api/tools/"
        self.tools_url = urljoin(base, tools)
        self.referer = base
        self.login_field = settings.get("login_field", "login")
        self.password_field = settings.get("password_field", "password")
        self.csrf_field = settings.get("csrf_field", "csrfmiddlewaretoken")
        self.csrf_cookie = settings.get("csrf_cookie", "csrftoken")
        self.csrf_header = settings.get("csrf_header", "X-CSRFToken")

    def door(self, person: Person) -> RestSession:
        if not person.login or person.password is None:
            raise SignInFailed(f"{person.name}: the sign-in form needs login and password")
        http = exchanges.session()
        page = http.get(self.login_url, timeout=TIMEOUT)
        token = hidden_value(page.text, self.csrf_field) or http.cookies.get(self.csrf_cookie)
        form = {self.login_field: person.login, self.password_field: person.password}
        if token:
            form[self.csrf_field] = token
        answer = http.post(self.login_url, data=form, headers={"Referer": self.login_url}, allow_redirects=False,
                           timeout=TIMEOUT)
        if answer.status_code not in (301, 302, 303):
            raise SignInFailed(f"{person.name}: signing in at {self.login_url} answered {answer.status_code}, not a redirect")
        headers = {"Referer": self.referer}
        csrf = http.cookies.get(self.csrf_cookie)
        if csrf:
            headers[self.csrf_header] = csrf
        return RestSession(self.tools_url, http, headers)


class HeaderPeople(PersonAdapter):
    """Send each person's own HTTP headers (from a JSON file, or the person's `headers`) to REST or MCP."""

    def __init__(self, settings: dict, config: Config, mcp_version: str | None = None):
        self.door_kind = settings.get("door", "rest")
        self.mcp_version = mcp_version
        self.config = config
        self.tools_url = urljoin(config.base_url + "/", settings.get("tools_url") or config.rest_url or "/api/tools/")
        self.headers: dict[str, dict] = {}
        if settings.get("file"):
            loaded = json.loads(Path(settings["file"]).read_text(encoding="utf-8"))
            if not isinstance(loaded, dict):
                raise ConfigError(f"{settings['file']}: expected an object of person name to headers")
            self.headers = loaded

    def door(self, person: Person):
        headers = {**self.headers.get(person.name, {}), **person.headers}
        if not headers:
            raise SignInFailed(f"{person.name}: no headers given for this person")
        if self.door_kind == "mcp":
            return McpSession(self.config.mcp_url, None, None, headers=headers,
                              **({"protocol_version": self.mcp_version} if self.mcp_version else {}))
        return RestSession(self.tools_url, exchanges.session(), headers)


HEADER_LINE = re.compile(r"^([A-Za-z0-9-]+):\s*(.*)$")


def headers_from(output: str) -> dict[str, str]:
    """Read headers from a command's output: one JSON object, or `Name: value` lines (others ignored)."""
    text = output.strip()
    if text.startswith("{"):
        loaded = json.loads(text)
        if not isinstance(loaded, dict):
            raise ValueError("expected a JSON object of header name to value")
        return {str(key): str(value) for key, value in loaded.items()}
    return {found.group(1): found.group(2).strip() for line in text.splitlines()
            if (found := HEADER_LINE.match(line.strip()))}


class CommandPeople(HeaderPeople):
    """Run `command` (with {name}, {login}, {person} filled in) per person; its output is the person's headers."""

    def __init__(self, settings: dict, config: Config, mcp_version: str | None = None):
        super().__init__({key: value for key, value in settings.items() if key != "file"}, config, mcp_version)
        command = settings.get("command")
        if not isinstance(command, list) or not command:
            raise ConfigError("people_adapter.command: a list, the program and its arguments")
        self.command = [str(part) for part in command]
        self.cwd = settings.get("cwd")
        self.env = {str(k): str(v) for k, v in (settings.get("env") or {}).items()}

    def door(self, person: Person):
        values = {"name": person.name, "login": person.login or "", "person": person.value}
        command = [part.format(**values) for part in self.command]
        try:
            done = subprocess.run(command, cwd=self.cwd, env={**os.environ, **self.env}, capture_output=True,
                                  text=True, timeout=TIMEOUT * 4, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SignInFailed(f"{person.name}: the people command could not run: {exc}") from None
        if done.returncode != 0:
            raise SignInFailed(f"{person.name}: the people command exited {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()[-300:]}")
        try:
            found = headers_from(done.stdout)
        except ValueError as exc:
            raise SignInFailed(f"{person.name}: the people command's output is not headers: {exc}") from None
        if not found:
            raise SignInFailed(f"{person.name}: the people command printed no headers")
        self.headers[person.name] = found
        return super().door(person)


def adapter_for(config: Config, mcp_version: str | None = None) -> PersonAdapter:
    settings = config.people_adapter
    kind = settings.get("kind", "sign-in-form")
    if kind == "headers":
        return HeaderPeople(settings, config, mcp_version)
    if kind == "command":
        return CommandPeople(settings, config, mcp_version)
    if kind == "python":
        module_name, _, attribute = str(settings.get("object", "")).partition(":")
        if not module_name or not attribute:
            raise ConfigError("people_adapter.object: 'package.module:factory'")
        factory = getattr(importlib.import_module(module_name), attribute)
        return factory(settings, config)
    return SignInForm(settings, config)
