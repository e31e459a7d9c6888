"""A reference agent: works the demo processes' agent steps through the public REST API.

It knows the server only by its URL and a client id and secret: it finds the token endpoint in the
authorization-server metadata (RFC 8414), gets a token by client credentials, then loops over `get_work`,
`claim`, `upload` and `submit` as any agent would. It fills each declared output with a plausible value
of its type, attaches the evidence a step asks for, takes the first route, and pauses between steps so a
person watching the demo sees the run move. It touches only the processes it is given.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import threading
import time
import uuid

import requests

log = logging.getLogger(__name__)

# Seconds between two looks for work (one get_work call each).
INTERVAL = 5.0


def sample(name: str, spec, *, person: str):
    """A plausible value for one declared field (a type name, or a field object with type)."""
    kind = spec if isinstance(spec, str) else spec.get("type", "string")
    choices = spec.get("one_of") if isinstance(spec, dict) else None
    if choices:
        return choices[0]
    words = name.replace("_", " ")
    if kind == "number":
        return 42
    if kind == "boolean":
        return True
    if kind == "date":
        return dt.date.today().isoformat()
    if kind == "datetime":
        return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    if kind == "person":
        return person
    if kind == "list":
        items = spec.get("items", "string") if isinstance(spec, dict) else "string"
        return [sample(name, items, person=person)]
    if kind == "object":
        return {}
    return f"Demo {words}: done by the demo agent."


class DemoAgent:
    """One agent's loop against one server; `run_once` works every ready step it may take."""

    def __init__(self, base: str, client_id: str, secret: str, *, processes, person: str, pause: float = 3.0):
        self.base = base.rstrip("/")
        self.client_id, self.secret = client_id, secret
        self.processes = set(processes)
        self.person = person
        self.pause = pause
        self.http = requests.Session()
        self.token: str | None = None

    def _token(self) -> str:
        metadata = self.http.get(f"{self.base}/.well-known/oauth-authorization-server", timeout=10).json()
        answer = self.http.post(
            metadata["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": "agentprocess"},
            auth=(self.client_id, self.secret),
            timeout=10,
        )
        answer.raise_for_status()
        return answer.json()["access_token"]

    def call(self, tool: str, **arguments) -> dict:
        """Call one tool and return its envelope; a 401 gets a new token once."""
        for _attempt in range(2):
            if self.token is None:
                self.token = self._token()
            response = self.http.post(
                f"{self.base}/api/tools/{tool}", json=arguments,
                headers={"Authorization": f"Bearer {self.token}"}, timeout=30,
            )
            if response.status_code != 401:
                return response.json()
            self.token = None
        return response.json()

    def run_once(self) -> int:
        """Work every ready agent step of the demo processes; return how many were handed in."""
        done, cursor = 0, None
        while True:
            found = (self.call("get_work", cursor=cursor) if cursor else self.call("get_work")).get("data") or {}
            for item in found.get("items", []):
                if item["process"] in self.processes and self.work(item):
                    done += 1
                    time.sleep(self.pause)
            cursor = found.get("nextCursor")
            if not cursor:
                return done

    def work(self, item: dict) -> bool:
        claimed = self.call("claim", **{**item["claim"]["arguments"], "requestId": str(uuid.uuid4())})
        if not claimed.get("ok"):
            return False  # someone else took it, or it is no longer ready
        claim = claimed["data"]
        step = claim["step"]
        output = {name: sample(name, spec, person=self.person) for name, spec in (step.get("output") or {}).items()}
        evidence = []
        for kind in step.get("evidence") or []:
            if kind == "file":
                text = f"Demo evidence for {item['runId']} / {step['id']}.\n".encode()
                upload = self.call(
                    "upload", fileName=f"{step['id']}.txt", contentType="text/plain",
                    contentBase64=base64.b64encode(text).decode(), requestId=str(uuid.uuid4()),
                )
                if upload.get("ok"):
                    evidence.append({"kind": "file", "ref": upload["data"]["id"]})
            else:
                evidence.append({"kind": "link", "ref": f"https://example.com/demo/{item['runId']}/{step['id']}"})
        submission = {
            "token": claim["token"],
            "output": output,
            "evidence": evidence,
            "summary": f"The demo agent did this step ({step['id']}) with made-up values.",
            "requestId": str(uuid.uuid4()),
        }
        routes = step.get("next") or []
        if len(routes) > 1:
            submission["next"] = routes[0]["to"]
            submission["reason"] = "The demo agent takes the first route."
        answer = self.call("submit", **submission)
        if not answer.get("ok"):
            issues = (answer.get("error") or {}).get("issues") or [(answer.get("error") or {}).get("message")]
            log.warning("demo agent: %s %s not accepted: %s", item["runId"], step["id"], "; ".join(map(str, issues)))
            self.call("escalate", token=claim["token"], note="The demo agent could not fill this step.",
                      requestId=str(uuid.uuid4()))
            return False
        log.info("demo agent: handed in %s %s", item["runId"], step["id"])
        return True

    def forever(self, interval: float, stop: threading.Event) -> None:
        while not stop.wait(interval):
            try:
                self.run_once()
            except (requests.RequestException, ValueError, KeyError) as exc:  # the server may be starting
                log.info("demo agent: %s", exc)
