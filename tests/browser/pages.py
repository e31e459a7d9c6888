"""Every page a person uses, with the data that fills it: the one list the accessibility and width tests walk.

`people_pages` builds the organization, processes and runs step by step and yields each page once the
data it shows exists, so a page that needs an empty inbox comes before the runs that fill it. Add a page
by yielding it where its data is ready.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import urlencode

from django.test import Client

from accounts.models import Agent, User
from runs.tools import call_tool
from tests.work.conftest import decide, open_item

# A process whose body and step text use everything a description can hold (a task list, a diagram, a
# table, code), and whose run data holds the long unbroken values that push a phone page sideways.
ORDER = """---
name: equipment-order
description: Order equipment for a team; a buyer fills the request, a manager approves, an agent orders it.
inputs:
  item: string
  budget: { type: number, description: Budget in USD }
  catalogueLink: string
steps:
  - id: request
    person: buyers
    task: |
      Fill in the request and **attach the quote**.

      - [x] the item is in the catalogue
      - [ ] the quote is less than a month old
    output:
      vendor: string
      amount: number
      urgent: boolean
      needed_by: date
      category: { type: string, one_of: [hardware, software, services] }
      tags: { type: list, items: string }
      details: object
      contact: person
    evidence: [file, link]
    next:
      - { to: approve, when: The amount is within budget }
      - { to: cancelled, when: The vendor cannot deliver }
  - id: approve
    person: managers
    approve: Approve the order when the quote matches the request.
    due: 1d
    on_reject: request
    next: order
  - id: order
    agent: Place the order with the vendor and attach the confirmation.
    output:
      orderId: string
  - id: done
    finish: ordered
  - id: cancelled
    finish: cancelled
---

# Equipment order

Start this when a team needs **equipment**. Before you start:

- [x] the budget is agreed
- [ ] the vendor is on the approved list

```mermaid
flowchart LR
  request[Buyer fills the request] --> approve{Manager approves?}
  approve -- yes --> order[Agent orders]
  approve -- no --> request
```

| Amount | Who approves |
|---|---|
| up to 5000 USD | a manager |

```text
PO-2026-000123/ACME-SUPPLIES/EQUIPMENT/LAPTOPS-AND-DOCKING-STATIONS-FOR-THE-NEW-TEAM
```
"""

LONG_URL = "https://catalogue.example.com/equipment/laptops/" + "x1-carbon-gen-13-" * 6 + "?ref=" + "a" * 60
LONG_WORD = "Supercalifragilisticexpialidocious-" * 4


class PeoplePage(NamedTuple):
    name: str
    url: str
    who: object | None  # anything with an `email` whose password is `pw-<email>`; None: signed out


def people_pages(publish, agent, make_person) -> Iterator[PeoplePage]:
    """Build the data of every people page in turn and yield each page when its data is there."""
    yield PeoplePage("home, signed out", "/", None)
    yield PeoplePage("sign in", "/accounts/login/", None)
    yield PeoplePage("password reset", "/accounts/password/reset/", None)

    publish(ORDER)
    buyer = make_person("buyer@example.com", groups=["buyers"])
    manager = make_person("manager@example.com", groups=["managers"])
    colleague = make_person("colleague@example.com", groups=["managers"])
    ops = make_person("ops@example.com", operator=True)
    outsider = make_person("outsider@example.com")
    yield PeoplePage("inbox, empty", "/inbox/", manager)
    yield PeoplePage("runs, none", "/runs/", buyer)
    yield PeoplePage("process catalogue", "/processes/", buyer)
    yield PeoplePage("start form", "/processes/equipment-order/", buyer)

    running = start_order(agent)
    yield PeoplePage("task with typed outputs", item_url(running), buyer)
    running = complete_request(buyer, running)
    yield PeoplePage("approval", item_url(running), manager)
    yield PeoplePage("approval, not yours (403)", item_url(running), outsider)
    yield PeoplePage("inbox with items", "/inbox/", manager)
    yield PeoplePage("inbox sorted by due date", "/inbox/?sort=due", manager)
    take(colleague, open_item(running))
    yield PeoplePage("approval, a colleague is on it", item_url(running), manager)
    yield PeoplePage("inbox, taken by a colleague", "/inbox/?show=groups", manager)
    yield PeoplePage("inbox, nobody on it", "/inbox/?show=unassigned", manager)
    converse(colleague, open_item(running), mention=manager)
    yield PeoplePage("inbox, assigned to me and mentioned", "/inbox/?show=mine", manager)
    yield PeoplePage("approval, with a conversation and assigned to a colleague", item_url(running), manager)

    escalated = escalate(agent, approve(manager, complete_request(buyer, start_order(agent, mode="test"))))
    yield PeoplePage("escalation", item_url(escalated), ops)
    yield PeoplePage("inbox with an escalation, operator", "/inbox/", ops)
    yield PeoplePage("run, running", run_url(running), ops)

    approved = approve(manager, complete_request(buyer, start_order(agent)))
    decided = open_item(complete_request(buyer, start_order(agent)))
    claim = agent.write("claim", runId=approved["run"]["id"], stepId="order")
    agent.write("submit", token=claim["token"], output={"orderId": "ORD-" + "7" * 40},
                evidence=[{"kind": "link", "ref": LONG_URL}], summary="Ordered: " + LONG_WORD)
    yield PeoplePage("run, finished", run_url(approved), ops)
    decide(manager, decided, "rejected", note="The quote expired; attach a current one. " + LONG_WORD)
    yield PeoplePage("item, already decided", f"/inbox/{decided['id']}/", manager)

    failed = start_order(agent)
    decide(buyer, open_item(failed), "failed", note="The item is discontinued: " + LONG_URL)
    yield PeoplePage("run, failed", run_url(failed), ops)
    escalate(agent, approve(manager, complete_request(buyer, start_order(agent))))
    yield PeoplePage("runs list", "/runs/", ops)
    yield PeoplePage("runs list sorted by due date", "/runs/?sort=due", ops)
    yield PeoplePage("runs needing attention: escalated", "/runs/?attention=escalated", ops)
    yield PeoplePage("runs needing attention: cancelled, none", "/runs/?attention=cancelled", ops)
    yield PeoplePage("operations overview", "/operations/", ops)
    yield PeoplePage("live process map", "/operations/equipment-order/", ops)
    yield PeoplePage("runs needing attention: failed", "/runs/?attention=failed", ops)
    yield PeoplePage("runs needing attention: past due", "/runs/?attention=overdue", ops)
    yield PeoplePage("runs found by a search", "/runs/?" + urlencode({"q": "equipment"}), ops)
    yield PeoplePage("runs found by words, with where they matched",
                     "/runs/?" + urlencode({"q": "laptop catal", "sort": "updated"}), ops)
    yield PeoplePage("search results", "/search/?" + urlencode({"q": "Laptops for the new team"}), manager)
    yield PeoplePage("search, nothing found", "/search/?q=nothing-like-this", manager)
    yield PeoplePage("settings", "/accounts/settings/", manager)

    connect_agents(ops, buyer)
    yield PeoplePage("connected agents", "/accounts/agents/", ops)
    yield PeoplePage("consent to connect an agent", consent_url(), ops)
    yield PeoplePage("email address", "/accounts/email/", ops)
    yield PeoplePage("change password", "/accounts/password/change/", ops)
    yield PeoplePage("two-factor authentication", "/accounts/2fa/", ops)
    yield PeoplePage("not found (404)", "/runs/r_99999999/", ops)
    yield PeoplePage("no organization (403)", "/inbox/", without_organization("newcomer@example.com"))


def start_order(agent, *, mode: str = "live") -> dict:
    inputs = {"item": "Laptops for the new team", "budget": 4800, "catalogueLink": LONG_URL}
    return agent.write("start_run", process="equipment-order", inputs=inputs, mode=mode)


def complete_request(buyer, view: dict) -> dict:
    """Complete the request through the tools, with a file and a long link, and return the run view."""
    upload = call_tool(buyer, "upload", {
        "fileName": "quote-" + "acme-supplies-" * 5 + ".pdf", "contentType": "application/pdf",
        "contentBase64": base64.b64encode(b"%PDF quote").decode(), "requestId": secrets.token_hex(16),
    })
    output = {
        "vendor": "Acme Supplies", "amount": 4650.5, "urgent": True, "needed_by": "2026-03-01",
        "category": "hardware", "tags": ["laptops", LONG_WORD],
        "details": {"po": "PO-7", "quoteReference": LONG_WORD, "lines": [{"sku": LONG_WORD, "qty": 12}]},
        "contact": buyer.email,
    }
    evidence = [{"kind": "file", "ref": upload["id"]}, {"kind": "link", "ref": LONG_URL}]
    return decide(buyer, open_item(view, "request"), "completed", output=output, evidence=evidence,
                  next="approve", reason="Within the budget.")


def take(person, item: dict) -> None:
    """Take a group's item as this person ("I'm working on this")."""
    from runs import taking
    from runs.models import WorkItem

    taking.take(person, WorkItem.objects.get(pk=int(item["id"][2:])), holder_seen=None)


def converse(person, item: dict, *, mention) -> None:
    """Comment on an item in Markdown, mentioning a colleague, and assign the item to them."""
    from runs import conversation, taking
    from runs.models import WorkItem

    row = WorkItem.objects.select_related("run", "step", "assigned_group").get(pk=int(item["id"][2:]))
    body = (f"@{mention.email} can you check the **quote**? It is at {LONG_URL}\n\n"
            f"- the amount\n- the vendor: {LONG_WORD}")
    conversation.add_comment(person, row.run, body=body, item=row)
    taking.hand(person, row, email=mention.email)


def approve(manager, view: dict) -> dict:
    return decide(manager, open_item(view, "approve"), "approved")


def escalate(agent, view: dict) -> dict:
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    return agent.write("escalate", token=token, note="The vendor portal is down: " + LONG_URL)


def item_url(view: dict) -> str:
    return f"/inbox/{open_item(view)['id']}/"


def run_url(view: dict) -> str:
    return f"/runs/{view['run']['id']}/"


def consent_url(client_id: str | None = None) -> str:
    """Register an MCP client as one would (RFC 7591), unless given one, and return the authorization request
    it would send."""
    if client_id is None:
        client_id = Client().post(
            "/identity/o/api/clients",
            {"client_name": "Claude Code", "redirect_uris": ["http://127.0.0.1:33418/callback"],
             "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"},
            content_type="application/json",
        ).json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return "/identity/o/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "scope": "agentprocess", "state": "s",
        "redirect_uri": "http://127.0.0.1:33418/callback", "code_challenge": challenge,
        "code_challenge_method": "S256",
    })


def connect_agents(*people) -> None:
    """Record MCP clients these people connected: one named by a long metadata address, one disconnected."""
    for person in people:
        Agent.objects.create(organization=person.organization, name="Claude Code", for_user=person.user,
                             connected_client_id="https://tools.example.com/oauth/" + "client-metadata-" * 5)
    Agent.objects.create(organization=people[0].organization, name="Notebook helper", for_user=people[0].user,
                         connected_client_id="c" * 32, is_active=False)


def without_organization(email: str) -> User:
    """A person who can sign in but belongs to no organization yet."""
    return User.objects.create_user(email, "pw-" + email)
