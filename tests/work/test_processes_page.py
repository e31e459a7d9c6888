"""The process catalogue and the start form (tools.md list_processes, start_run)."""

import re

from runs.tools import call_tool


def hidden(html: str) -> dict:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))


def test_the_catalogue_shows_description_inputs_and_required_systems(purchase, publish, browser_of):
    publish("""---
name: crm-sync
description: Sync a customer record into the CRM.
inputs:
  customerId: string
requires:
  systems: [crm, billing]
steps:
  - id: sync
    agent: Sync it.
  - id: done
    finish: ok
---
""")
    html = browser_of(purchase.people["buyer"]).get("/processes/").content.decode()
    assert "Buy something; a buyer fills the request" in html and "<li>budget</li>" in html
    assert "Crm sync" in html and "<li>crm</li>" in html and "<li>billing</li>" in html
    assert 'href="/processes/purchase/"' in html


def test_the_start_form_has_typed_inputs_and_a_live_or_test_choice(purchase, browser_of):
    html = browser_of(purchase.people["buyer"]).get("/processes/purchase/").content.decode()
    assert '<textarea name="inputs-item"' in html
    assert 'type="number" step="any" inputmode="decimal" name="inputs-budget"' in html
    assert "Budget in USD" in html
    assert 'type="radio" name="mode" value="live" checked' in html and 'name="mode" value="test"' in html
    assert "<svg" in html and 'data-step="request"' in html


def test_starting_a_run_redirects_to_its_page(purchase, browser_of):
    buyer = purchase.people["buyer"]
    client = browser_of(buyer)
    fields = hidden(client.get("/processes/purchase/").content.decode())
    response = client.post("/processes/purchase/", {**fields, "inputs-item": "Monitor", "inputs-budget": "300",
                                                    "mode": "test"})
    assert response.status_code == 302
    run_id = response["Location"].strip("/").split("/")[-1]
    view = call_tool(buyer, "get_run", {"runId": run_id})
    assert view["run"]["mode"] == "test" and view["run"]["startedBy"] == buyer.ref
    assert view["data"]["inputs"] == {"item": "Monitor", "budget": 300}
    page = client.get(response["Location"]).content.decode()
    assert "Started test run" in page and "This is a test run" in page
    # the same form sent twice starts one run
    again = client.post("/processes/purchase/", {**fields, "inputs-item": "Monitor", "inputs-budget": "300",
                                                 "mode": "test"})
    assert again["Location"] == response["Location"]


def test_bad_inputs_are_shown_beside_their_fields(purchase, browser_of):
    client = browser_of(purchase.people["buyer"])
    fields = hidden(client.get("/processes/purchase/").content.decode())
    response = client.post("/processes/purchase/", {**fields, "inputs-item": "", "inputs-budget": "cheap"})
    assert response.status_code == 400
    html = response.content.decode()
    summary = html.split('class="error-summary"')[1].split("</div>")[0]
    assert '<a href="#f-inputs-item">Item is required</a>' in summary
    assert '<a href="#f-inputs-budget">Budget must be a number</a>' in summary
    budget = html.split('id="field-inputs-budget"')[1].split("</div>")[0]
    assert "Budget must be a number" in budget and 'value="cheap"' in budget
    assert "expected" not in html  # the engine's issue about the budget is not said twice


def test_an_unknown_or_foreign_process_is_not_found(purchase, browser_of, make_person, other_org):
    assert browser_of(purchase.people["buyer"]).get("/processes/nope/").status_code == 404
    stranger = make_person("stranger@other.example", organization=other_org)
    client = browser_of(stranger)
    assert client.get("/processes/purchase/").status_code == 404
    assert "purchase" not in client.get("/processes/").content.decode().split("<main")[1]
