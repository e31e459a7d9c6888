"""Fixtures for the people pages: publish processes, make people and agents, sign a person in."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.identity import Identity
from tests.runs import conftest as engine_fixtures
from tests.runs.conftest import rid

# The engine tests' fixtures, shared: people, agents, publishing.
agent = engine_fixtures.agent
make_agent = engine_fixtures.make_agent
make_person = engine_fixtures.make_person
org = engine_fixtures.org
other_org = engine_fixtures.other_org
person_caller = engine_fixtures.person_caller
publish = engine_fixtures.publish


@pytest.fixture
def browser_of():
    """Return browser_of(identity) -> a test Client signed in as that person."""

    def make(identity: Identity, *, enforce_csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf)
        client.force_login(identity.user)
        return client

    return make


def open_item(view: dict, step_id: str | None = None) -> dict:
    """Return the one open work item of a run view (of `step_id` when given)."""
    items = [w for w in view["workItems"] if step_id is None or w["stepId"] == step_id]
    assert len(items) == 1, view["workItems"]
    return items[0]


def form_fields(html: str, form_id: str) -> dict[str, str]:
    """Read the hidden fields of one form on a page, as a browser would send them."""
    import re
    from html import unescape

    start = html.index(f'id="form-{form_id}"')
    end = html.index("</form>", start)
    chunk = re.sub(r"<template.*?</template>", "", html[start:end], flags=re.S)  # a template is not sent
    fields: dict = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', chunk):
        fields.setdefault(name, []).append(unescape(value))
    return {name: values[0] if len(values) == 1 else values for name, values in fields.items()}


PURCHASE = """---
name: purchase
description: Buy something; a buyer fills the request, a manager approves, an agent orders.
inputs:
  item: string
  budget: { type: number, description: Budget in USD }
steps:
  - id: request
    person: buyers
    task: |
      Fill in the purchase request and **attach the quote**.
    output:
      vendor: string
      amount: number
      urgent: boolean
      needed_by: date
      deliver_at: datetime
      category: { type: string, one_of: [hardware, software, services] }
      tags: { type: list, items: string }
      details: object
      contact: person
      remark: { type: string, optional: true }
    evidence: [file]
    next:
      - { to: approve, when: The amount is within budget }
      - { to: cancelled, when: The vendor cannot deliver }
  - id: approve
    person: managers
    approve: Approve the purchase when the quote matches the request.
    due: 1d
    on_reject: request
    next: order
  - id: order
    agent: Place the order with the vendor.
    output:
      orderId: string
  - id: done
    finish: ordered
  - id: cancelled
    finish: cancelled
---

# Purchase

Start this when someone needs to **buy** something.
"""

TYPED_OUTPUT = {
    "output-vendor": "Acme Supplies",
    "output-amount": "1250.50",
    "output-urgent": "on",
    "output-needed_by": "2026-03-01",
    "output-deliver_at": "2026-03-01T09:30",
    "output-deliver_at-offset": "+02:00",
    "output-category": '"hardware"',
    "output-tags-row": ["0", "1"],
    "output-tags-0-0": "laptops",
    "output-tags-1-0": "rush",
    "output-details-col": ["0"],
    "output-details-col-0-name": "po",
    "output-details-col-0-kind": "text",
    "output-details-0-0": "PO-7",
    "output-contact": "buyer@example.com",
    "next": "approve",
    "reason": "Within the budget.",
}

EXPECTED_OUTPUT = {
    "vendor": "Acme Supplies",
    "amount": 1250.5,
    "urgent": True,
    "needed_by": "2026-03-01",
    "deliver_at": "2026-03-01T09:30:00+02:00",
    "category": "hardware",
    "tags": ["laptops", "rush"],
    "details": {"po": "PO-7"},
    "contact": "buyer@example.com",
}


@pytest.fixture
def purchase(publish, agent, make_person):
    """Publish the purchase process with a buyer, two managers and an operator; return a run starter."""
    publish(PURCHASE)
    people = {
        "buyer": make_person("buyer@example.com", groups=["buyers"]),
        "manager": make_person("manager@example.com", groups=["managers"]),
        "colleague": make_person("colleague@example.com", groups=["managers"]),
        "ops": make_person("ops@example.com", operator=True),
        "outsider": make_person("outsider@example.com"),
    }

    def start(mode: str = "live", item: str = "Laptop") -> dict:
        return agent.write("start_run", process="purchase", inputs={"item": item, "budget": 2000}, mode=mode)

    start.people = people
    return start


def decide(identity: Identity, item: dict, decision: str, **extra) -> dict:
    """Decide a work item through the tool, as REST would."""
    from runs.tools import call_tool

    arguments = {**item["decide"]["arguments"], "requestId": rid(), "decision": decision, **extra}
    return call_tool(identity, "decide", arguments)


def complete_request(buyer: Identity, view: dict) -> dict:
    """Complete the purchase request through the tools, with a file, and return the run view."""
    import base64

    from runs.tools import call_tool

    upload = call_tool(buyer, "upload", {"fileName": "quote.pdf", "contentType": "application/pdf",
                                         "contentBase64": base64.b64encode(b"%PDF quote").decode(), "requestId": rid()})
    output = {k: v for k, v in EXPECTED_OUTPUT.items()}
    return decide(buyer, open_item(view, "request"), "completed", output=output,
                  evidence=[{"kind": "file", "ref": upload["id"]}], next="approve", reason="ok")
