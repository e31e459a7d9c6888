"""The operators' pages in a real browser: the overview, a live map with counts and times, the runs at a
step, and the runs needing attention, at desk and phone widths."""

from __future__ import annotations

import datetime as dt
import re

from django.db.models import F
from playwright.sync_api import expect

from runs.models import Run, RunStep
from runs.tools import call_tool
from tests.browser.conftest import screenshot, sign_in, wait_path
from tests.browser.test_people_pages import people, start_purchase
from tests.runs.conftest import age, rid
from tests.work.conftest import PURCHASE, complete_request, decide, open_item


def waited(view: dict, step_id: str, hours: float) -> dict:
    """Let `hours` pass at the step a run is at: it was reached that much earlier."""
    RunStep.objects.filter(run_id=int(view["run"]["id"][2:]), step_id=step_id).update(
        ready_since=F("ready_since") - dt.timedelta(hours=hours))
    # A change to a run's rows moves its revision, as every write's does (runs.snapshots).
    Run.objects.filter(pk=int(view["run"]["id"][2:])).update(revision=F("revision") + 1)
    return view


def scripted(agent, team) -> dict:
    """Runs of the purchase process: one sent back once then ordered, one overdue at approval, one failed.

    Request takes 2, 1 and 4 hours and fails at once; Approve takes 5 hours to reject and 3 to approve.
    """
    buyer, manager = team["buyer"], team["manager"]
    ordered = complete_request(buyer, waited(start_purchase(agent), "request", 2))
    ordered = decide(manager, open_item(waited(ordered, "approve", 5)), "rejected", note="The quote is old.")
    ordered = complete_request(buyer, waited(ordered, "request", 1))
    ordered = decide(manager, open_item(waited(ordered, "approve", 3)), "approved")
    token = agent.write("claim", runId=ordered["run"]["id"], stepId="order")["token"]
    agent.fails("submit", "not_accepted", token=token, output={"orderId": 7}, summary="x", requestId=rid())
    agent.write("submit", token=token, output={"orderId": "PO-1"}, summary="Ordered.")
    late = complete_request(buyer, waited(start_purchase(agent, item="Desk"), "request", 4))
    age(late["run"]["id"], 2 * 86400)
    failed = start_purchase(agent, item="Chair")
    decide(buyer, open_item(failed), "failed", note="The vendor went out of business.")
    return {"ordered": ordered, "late": late, "failed": failed}


def sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_an_operator_reads_the_live_map_and_opens_the_runs_at_a_step(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    ops = make_person("ops@example.com", operator=True)
    runs = scripted(agent, team)
    page = new_page()
    sign_in(page, ops)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    wait_path(page, "/operations/")
    expect(page.get_by_role("link", name="1 step past due now")).to_be_visible()
    screenshot(page, "operations-1280")
    page.get_by_role("link", name="Live map").first.click()
    wait_path(page, "/operations/purchase/")
    drawing = page.locator("svg.process-map")
    for words in ("3 passed", "1 sent back", "1 with a person", "1 overdue", "1 failed", "1 ended here"):
        expect(drawing.get_by_text(words, exact=True).first, words).to_be_visible()
    # Request took 0 (the failed one), 1, 2 and 4 hours; Approve 3 and 5 (the loop).
    expect(drawing.get_by_text("median 1h 30m · p90 3h 24m", exact=True)).to_be_visible()
    expect(drawing.get_by_text("median 4h · p90 4h 48m", exact=True)).to_be_visible()
    screenshot(page, "live-map-1280")

    # The approval step is a link with a name that says what is there; the keyboard reaches and opens it.
    approve = page.get_by_role("link", name=re.compile(r"^Approve: 1 with a person; 1 overdue"))
    approve.focus()
    expect(approve).to_be_focused()
    expect(approve).to_have_class("map-link")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"step=approve"))
    listed = page.locator("#at-step-section")
    expect(listed.get_by_role("heading", name="Runs at Approve now")).to_be_visible()
    late = runs["late"]["run"]["id"]
    listed.get_by_role("link", name=late).click()
    wait_path(page, f"/runs/{late}/")


def test_the_operators_pages_fit_a_phone(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    ops = make_person("ops@example.com", operator=True)
    runs = scripted(agent, team)
    call_tool(ops, "cancel", {"runId": start_purchase(agent, item="Lamp")["run"]["id"], "reason": "Bought elsewhere.",
                              "requestId": rid()})
    phone = new_page(390, 844)
    sign_in(phone, ops)
    for path, name in (("/operations/", "operations-390"), ("/operations/purchase/?step=approve", "live-map-390"),
                       ("/runs/?attention=cancelled", "attention-cancelled-390"),
                       ("/runs/?attention=failed", "attention-failed-390")):
        phone.goto(path)
        assert sideways(phone) <= 0, f"{path} is {sideways(phone)}px wider than the phone"
        screenshot(phone, name)
        if path == "/runs/?attention=cancelled":  # cancelled runs are listed apart from failed ones
            expect(phone.get_by_text("Bought elsewhere.")).to_be_visible()
    # The failed list tells why, with each run's note.
    expect(phone.get_by_text("The vendor went out of business.")).to_be_visible()
    expect(phone.get_by_text("Bought elsewhere.")).to_have_count(0)
    phone.get_by_role("link", name=runs["failed"]["run"]["id"]).click()
    wait_path(phone, f"/runs/{runs['failed']['run']['id']}/")
    desk = new_page()
    sign_in(desk, ops)
    desk.goto("/runs/?attention=failed")
    screenshot(desk, "attention-failed-1280")


def test_a_person_who_is_no_operator_is_turned_away(publish, make_person, new_page):
    publish(PURCHASE)
    buyer = people(make_person)["buyer"]
    page = new_page()
    sign_in(page, buyer)
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations")).to_have_count(0)
    response = page.goto("/operations/")
    assert response.status == 403
    expect(page.get_by_text("Only the operators of your organization see these figures.")).to_be_visible()
