"""Acting as a person. How a server knows a human identity is outside the protocol (spec §6 rule 4), so the
runner asks an adapter for each person's door to the tools.

- `SignInForm` signs in through an HTML form, keeps the session cookie and calls the REST tools with
  the form's CSRF token, as a browser page of the server would.
- `HeaderPeople` sends fixed HTTP headers per person, read from a JSON file, to the REST tools or to MCP.
- Any other: `{"kind": "python", "object": "package.module:factory"}`, a callable taking
  (adapter settings, Config) and returning an object with `door(person)`.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from urllib.parse import urljoin

import requests

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
        http = requests.Session()
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

    def __init__(self, settings: dict, config: Config):
        self.door_kind = settings.get("door", "rest")
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
            return McpSession(self.config.mcp_url, None, None, headers=headers)
        return RestSession(self.tools_url, requests.Session(), headers)


def adapter_for(config: Config) -> PersonAdapter:
    settings = config.people_adapter
    kind = settings.get("kind", "sign-in-form")
    if kind == "headers":
        return HeaderPeople(settings, config)
    if kind == "python":
        module_name, _, attribute = str(settings.get("object", "")).partition(":")
        if not module_name or not attribute:
            raise ConfigError("people_adapter.object: 'package.module:factory'")
        factory = getattr(importlib.import_module(module_name), attribute)
        return factory(settings, config)
    return SignInForm(settings, config)
