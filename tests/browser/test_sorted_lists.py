"""The runs list and the inbox in a real browser: an order chosen stays in the URL, through filters and pages."""

from __future__ import annotations

import datetime as dt
import re

from django.utils import timezone
from playwright.sync_api import expect

from runs.models import RunStep
from tests.browser.conftest import sign_in, wait_path
from tests.browser.test_people_pages import people, start_purchase
from tests.work.conftest import PURCHASE, complete_request


def test_an_order_chosen_is_kept_in_the_url_and_by_the_filters(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    ops = make_person("ops@example.com", operator=True)
    due = complete_request(team["buyer"], start_purchase(agent, item="Desk"))  # at approve, due in a day
    start_purchase(agent, item="Chair")  # newer, due nowhere
    RunStep.objects.filter(step_id="approve").update(due_at=timezone.now() + dt.timedelta(hours=3))
    page = new_page()
    sign_in(page, ops)
    page.goto("/runs/")
    rows = page.locator("table tbody tr")
    expect(rows.first.get_by_role("link", name=re.compile(r"^r_"))).not_to_have_text(due["run"]["id"])

    page.get_by_label("Order").select_option("due")
    page.get_by_role("button", name="Show runs").click()
    page.wait_for_url(re.compile(r"[?&]sort=due(&|$)"))
    expect(rows.first.get_by_role("link", name=due["run"]["id"])).to_be_visible()
    expect(rows.first).to_contain_text("Approve: managers (group)")
    expect(page.get_by_label("Order")).to_have_value("due")

    # A filter chosen next keeps the order; so does opening the bookmarked address again.
    page.get_by_label("State").select_option("waiting")
    page.get_by_role("button", name="Show runs").click()
    page.wait_for_url(re.compile(r"state=waiting"))
    assert "sort=due" in page.url
    expect(page.get_by_label("Order")).to_have_value("due")
    page.goto(page.url)
    expect(rows.first.get_by_role("link", name=due["run"]["id"])).to_be_visible()

    # The inbox too: the order chosen there stays when the person picks what to show.
    manager = new_page()
    sign_in(manager, team["manager"])
    manager.get_by_label("Order", exact=True).select_option("due")
    manager.get_by_role("button", name="Sort").click()
    manager.wait_for_url(re.compile(r"sort=due"))
    manager.get_by_role("navigation", name="Show").get_by_role("link", name="My groups'").click()
    manager.wait_for_url(re.compile(r"show=groups"))
    wait_path(manager, "/inbox/")
    assert "sort=due" in manager.url
    expect(manager.get_by_label("Order", exact=True)).to_have_value("due")
    expect(manager.get_by_text("1 open item, due soonest")).to_be_visible()
