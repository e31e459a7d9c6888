"""The run page: the process map, the timeline, open work and claims, and the operators' cancel form."""

import re

from runs.tools import call_tool
from tests.work.conftest import complete_request, decide, form_fields, open_item
from tests.work.test_item_page import PAIR_REVIEW


def run_url(view: dict) -> str:
    return f"/runs/{view['run']['id']}/"


def test_the_map_has_every_step_by_kind_and_labelled_routes(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    html = browser_of(purchase.people["buyer"]).get(run_url(view)).content.decode()
    start = html.index('<svg class="process-map"')
    svg = html[start:html.index("</svg>", start)]
    for step, kind, state in (("request", "task", "done"), ("approve", "approve", "current"),
                              ("order", "agent", "idle"), ("done", "finish", "idle")):
        assert f'class="map-step kind-{kind} state-{state}" data-step="{step}"' in svg
    # routes labelled with their `when`; the rejection edge is drawn apart, dashed by its class
    assert "The amount is within budget" in svg and "The vendor cannot deliver" in svg
    assert 'class="map-edge reject"' in svg and "on reject" in svg
    assert 'class="map-edge next taken"' in svg  # request → approve has been travelled
    assert 'role="img"' in svg and "<title" in svg


def test_an_overdue_step_is_marked_on_the_map(purchase, browser_of):
    from tests.runs.conftest import age

    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    html = browser_of(purchase.people["buyer"]).get(run_url(view)).content.decode()
    assert 'state-overdue" data-step="approve"' in html


def test_parallel_steps_are_drawn_as_a_fork_and_a_join(publish, agent, make_person, browser_of):
    publish(PAIR_REVIEW)
    person = make_person("p@example.com", groups=["legal", "finance"])
    view = agent.write("start_run", process="pair-review", inputs={"contract": "C"})
    svg = browser_of(person).get(run_url(view)).content.decode()
    assert 'kind-parallel state-current" data-step="review"' in svg
    assert svg.count('class="map-edge fork taken"') == 2 and 'class="map-join"' in svg


def test_the_timeline_names_every_completion_and_decision(purchase, browser_of):
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    view = complete_request(buyer, purchase())
    view = decide(manager, open_item(view), "rejected", note="Old quote.")
    view = complete_request(buyer, view)
    html = browser_of(buyer).get(run_url(view)).content.decode()
    timeline = html.split('id="timeline-heading"')[1].split("</ol>")[0]
    entries = re.findall(r'<div class="what">(.*?)</div>', timeline, re.S)
    texts = [re.sub(r"<[^>]+>|\s+", " ", e).strip() for e in entries]
    assert texts == [
        "screener (agent) started the run",
        "buyer@example.com completed Request (earlier attempt)",
        "manager@example.com rejected Approve",
        "buyer@example.com completed Request",
    ]
    assert "Old quote." in timeline


def test_open_work_and_claims_are_listed(purchase, browser_of, agent):
    view = complete_request(purchase.people["buyer"], purchase())
    manager_html = browser_of(purchase.people["manager"]).get(run_url(view)).content.decode()
    assert f'href="/inbox/{open_item(view)["id"]}/"' in manager_html and "For managers" in manager_html
    view = decide(purchase.people["manager"], open_item(view), "approved")
    agent.write("claim", runId=view["run"]["id"], stepId="order")
    html = browser_of(purchase.people["buyer"]).get(run_url(view)).content.decode()
    assert "Claimed by screener (agent)" in html and "lease ends in" in html


def test_an_operator_cancels_with_a_reason(purchase, browser_of):
    view = purchase()
    ops = browser_of(purchase.people["ops"])
    html = ops.get(run_url(view)).content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                             html.split('id="cancel-heading"')[1]))
    missing = ops.post(f"{run_url(view)}cancel/", {**fields, "reason": " "})
    assert missing.status_code == 400 and "reason: required" in missing.content.decode()
    response = ops.post(f"{run_url(view)}cancel/", {**fields, "reason": "Bought elsewhere."})
    assert response.status_code == 302
    after = call_tool(purchase.people["ops"], "get_run", {"runId": view["run"]["id"]})
    assert after["run"]["state"] == "cancelled" and after["run"]["ended"]["note"] == "Bought elsewhere."
    page = ops.get(run_url(view)).content.decode()
    assert "Cancelled by ops@example.com" in page and "Bought elsewhere." in page
    assert 'id="cancel-heading"' not in page


def test_only_operators_get_the_cancel_form(purchase, browser_of):
    view = purchase()
    buyer = browser_of(purchase.people["buyer"])
    assert 'id="cancel-heading"' not in buyer.get(run_url(view)).content.decode()
    response = buyer.post(f"{run_url(view)}cancel/", {"reason": "mine now", "requestId": ""})
    assert response.status_code == 403
    assert call_tool(purchase.people["buyer"], "get_run", {"runId": view["run"]["id"]})["run"]["state"] != "cancelled"


def test_the_runs_list_filters(purchase, browser_of):
    first = purchase()
    purchase()
    client = browser_of(purchase.people["buyer"])
    html = client.get("/runs/").content.decode()
    assert html.count('href="/runs/r_') == 2
    assert f'href="{run_url(first)}"' in client.get("/runs/?process=purchase").content.decode()
    assert 'href="/runs/r_' not in client.get("/runs/?state=ended").content.decode()


def test_a_file_in_the_run_data_downloads(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    client = browser_of(purchase.people["buyer"])
    html = client.get(run_url(view)).content.decode()
    link = re.search(r'<a href="(?:http://testserver)?(/files/f_[^"]+)" download>quote.pdf</a>', html).group(1).replace("&amp;", "&")
    assert client.get(link).content == b"%PDF quote"


def test_the_cancel_form_carries_its_csrf_token(purchase, browser_of):
    view = purchase()
    ops = browser_of(purchase.people["ops"], enforce_csrf=True)
    html = ops.get(run_url(view)).content.decode()
    assert "csrfmiddlewaretoken" in html.split('id="cancel-heading"')[1]
    assert ops.post(f"{run_url(view)}cancel/", {"reason": "x"}).status_code == 403


def test_form_fields_helper_reads_hidden_inputs(purchase, browser_of):
    view = purchase()
    html = browser_of(purchase.people["buyer"]).get(f"/inbox/{open_item(view)['id']}/").content.decode()
    assert set(form_fields(html, "fail")) == {"csrfmiddlewaretoken", "snapshot", "seen", "requestId"}


SETTLED = """---
name: settled
description: One agent step that ends in a long outcome.
steps:
  - id: work
    agent: Settle it.
  - id: done
    finish: refund_settled_and_reconciled
---
"""


def test_an_outcome_reads_in_words(publish, agent, make_person, browser_of):
    # issue: the people's first day: raw outcomes (`refund_settled_and_reconciled`) on the pages.
    publish(SETTLED)
    operator = make_person("op@example.com", operator=True)
    run_id = agent.write("start_run", process="settled", inputs={})["run"]["id"]
    token = agent.write("claim", runId=run_id, stepId="work")["token"]
    agent.write("submit", token=token, output={}, summary="Settled.")
    client = browser_of(operator)
    for page in (f"/runs/{run_id}/", "/runs/"):
        html = client.get(page).content.decode()
        assert "Refund settled and reconciled" in html, page
        assert "refund_settled_and_reconciled" not in html, page
