"""A node with several gunicorn workers on a shared cache, and a client that signs in to it as a browser does.

Requests go out at once, each on a connection of its own, so that the workers share them: a limit kept in
one process's memory lets through several times what it should, and a test here then fails.
"""

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.config.nodes import gunicorn_node, manage, postgres_url

PASSWORD = "a-Long-test-passw0rd"

# The shared cache a node runs on: Redis (REDIS_URL) or the database's cache table.
CACHE_BACKENDS = [pytest.param("redis", id="redis-cache"), pytest.param("database", id="database-cache")]

ADD_PERSON = """
import json
from allauth.mfa.models import Authenticator
from allauth.mfa.utils import encrypt
from accounts.models import User
spec = json.loads({spec!r})
user = User.objects.create_user(spec["email"], spec["password"], is_staff=spec["staff"],
                                is_superuser=spec["staff"])
if spec["totp_secret"]:
    Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP,
                                 data={{"secret": encrypt(spec["totp_secret"])}})
"""


@dataclass
class Node:
    base: str
    env: dict

    def add_person(self, email: str, *, staff: bool = False, totp_secret: str = "") -> None:
        spec = {"email": email, "password": PASSWORD, "staff": staff, "totp_secret": totp_secret}
        manage(self.env, "shell", "-c", ADD_PERSON.format(spec=json.dumps(spec)))


@contextlib.contextmanager
def node_with_workers(tmp_path: Path, cache: str, database: str, **extra: str):
    """Yield a Node of three gunicorn workers whose cache is Redis or the database's table.

    On PostgreSQL the node's database is DATABASE_URL's name with `_<database>` added.
    """
    if cache == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("REDIS_URL is not set: the Redis cache needs a Redis")
        extra = {"REDIS_URL": os.environ["REDIS_URL"], **extra}
    else:
        if postgres_url() is None:
            # SQLite lets one process write at a time; several workers on it are no deployment.
            pytest.skip("the database cache across workers needs DATABASE_URL naming PostgreSQL")
        extra = {"REDIS_URL": "", **extra}
    with gunicorn_node(tmp_path, postgres=True, database=database, WEB_CONCURRENCY="3", **extra) as (base, env, _out, _err):
        yield Node(base, env)


class Browser:
    """One person's browser: its cookies, and the CSRF token the sign-in page handed it."""

    def __init__(self, base: str, headers: dict | None = None):
        self.base = base
        self.headers = headers or {}
        self.session = requests.Session()
        self.session.headers.update(self.headers)
        page = self.session.get(f"{base}/accounts/login/", timeout=30)
        assert page.status_code == 200, page.status_code
        self.csrf = self.session.cookies["csrftoken"]

    def post(self, path: str, data: dict) -> requests.Response:
        return self.session.post(f"{self.base}{path}", data={**data, "csrfmiddlewaretoken": self.csrf},
                                 allow_redirects=False, timeout=30)

    def get(self, path: str) -> requests.Response:
        return self.session.get(f"{self.base}{path}", allow_redirects=False, timeout=30)

    def post_apart(self, path: str, data: dict) -> requests.Response:
        """POST as this browser on a new connection, outside its session's pool (several may run at once)."""
        cookies = {"csrftoken": self.csrf}
        return requests.post(f"{self.base}{path}", data={**data, "csrfmiddlewaretoken": self.csrf},
                             cookies=cookies, headers={**self.headers, "Connection": "close"},
                             allow_redirects=False, timeout=60)


def at_once(count: int, send) -> list:
    """Call send(i) for i in range(count) from eight threads at once; return the answers in order."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(send, range(count)))


def new_totp_secret() -> str:
    return base64.b32encode(secrets.token_bytes(20)).decode()


def totp_code(secret: str) -> str:
    """The current six-digit code of an authenticator app holding secret (RFC 6238: SHA-1, 30 seconds)."""
    counter = struct.pack(">Q", int(time.time()) // 30)
    digest = hmac.new(base64.b32decode(secret), counter, hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 1_000_000:06d}"


LOCKED_OUT = "Too many failed login attempts"
WRONG_PASSWORD = "you specified are not correct"


def fail_until_locked_out(browser: Browser, email: str) -> int:
    """Send fifteen wrong passwords for email at once, then one at a time until the sign-in says it is locked.

    Return how many of the fifteen were checked (answered "not correct"): allauth checks five before it
    locks the address, on whichever worker. A request that waited too long for allauth's lock in the cache
    is refused uncounted (429), so the address may need a failure or two more before it is locked.
    """
    answers = at_once(15, lambda i: browser.post_apart("/accounts/login/", {"login": email, "password": f"no-{i}"}))
    assert {answer.status_code for answer in answers} <= {200, 429}
    checked = sum(WRONG_PASSWORD in answer.text for answer in answers)
    for attempt in range(10):
        answer = browser.post_apart("/accounts/login/", {"login": email, "password": f"again-{attempt}"})
        if LOCKED_OUT in answer.text:
            return checked
    raise AssertionError("ten more wrong passwords and the sign-in never said it was locked")


def refused_everywhere(browser: Browser, email: str) -> list[int]:
    """Send the right password for email six times at once; return the statuses of those that signed in."""
    answers = at_once(6, lambda i: browser.post_apart("/accounts/login/", {"login": email, "password": PASSWORD}))
    assert all(answer.status_code == 429 or LOCKED_OUT in answer.text for answer in answers)
    return [answer.status_code for answer in answers if answer.status_code == 302]
