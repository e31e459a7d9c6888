"""A team in real browsers: two people on one group item, notices arriving, search by an input value.

spec §3.4: anyone in an item's assignment may decide and the first decision wins; taking an item tells
colleagues who is on it.
"""

from __future__ import annotations

from playwright.sync_api import expect

from runs.models import WorkItem
from tests.browser.conftest import screenshot, sign_in, wait_path
from tests.browser.test_people_pages import people, start_purchase
from tests.work.conftest import PURCHASE, complete_request, open_item


def test_two_people_on_one_group_item(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    item = open_item(complete_request(team["buyer"], start_purchase(agent)))
    mine, theirs = new_page(), new_page()  # two browser contexts: two people signed in at once
    sign_in(mine, team["manager"])
    sign_in(theirs, team["colleague"])
    mine.goto(f"/inbox/{item['id']}/")
    theirs.goto(f"/inbox/{item['id']}/")  # the colleague read the page before anyone took it

    mine.get_by_role("button", name="I’m working on this").click()
    expect(mine.get_by_text("You are working on this")).to_be_visible()
    screenshot(mine, "team-item-taken-1280")

    # The colleague, still on the page read before, approves: nothing is sent, and they are told who is on it.
    theirs.get_by_role("button", name="Approve").click()
    expect(theirs.get_by_text("manager@example.com is working on this, so nothing was sent.")).to_be_visible()
    assert WorkItem.objects.get(pk=int(item["id"][2:])).state == "open"
    screenshot(theirs, "team-item-held-by-a-colleague-1280")
    # Their inbox says so too.
    theirs.goto("/inbox/")
    expect(theirs.get_by_text("manager@example.com is working on this since")).to_be_visible()
    # Having checked, they decide anyway: the box names the holder, and the first decision wins.
    theirs.goto(f"/inbox/{item['id']}/")
    approve = theirs.locator("#form-approve")
    approve.get_by_label("Decide although manager@example.com is working on it").check()
    approve.get_by_role("button", name="Approve").click()
    wait_path(theirs, "/inbox/")
    row = WorkItem.objects.get(pk=int(item["id"][2:]))
    assert row.state == "decided" and row.decided_by == team["colleague"].ref
    # The one who took it sees it decided by the colleague when they come back to it.
    mine.reload()
    expect(mine.get_by_role("heading", name="Already decided")).to_be_visible()
    expect(mine.get_by_text("colleague@example.com").first).to_be_visible()


def test_a_notice_of_new_work_arrives_in_the_top_bar(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    page = new_page(390, 844)
    sign_in(page, team["manager"])
    bell = page.locator("a.bell")
    expect(bell).to_have_attribute("aria-label", "Notifications: none unread")
    view = complete_request(team["buyer"], start_purchase(agent))
    page.reload()
    expect(bell).to_have_attribute("aria-label", "Notifications: 1 unread")
    bell.click()
    notice = page.get_by_role("link", name=f"New work: Approve in purchase run {view['run']['id']}.")
    expect(notice).to_be_visible()
    screenshot(page, "team-notice-390")
    notice.click()
    wait_path(page, f"/inbox/{open_item(view)['id']}/")


def test_find_a_run_by_an_input_value(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    wanted = start_purchase(agent, item="Standing desk SD-4471")
    start_purchase(agent, item="Chair")
    page = new_page()
    sign_in(page, team["manager"])
    page.get_by_role("searchbox", name="Search work items, runs and processes").fill("Standing desk SD-4471")
    page.keyboard.press("Enter")
    wait_path(page, "/search/")
    runs = page.locator("#found-runs").locator("xpath=..")
    expect(runs.get_by_role("link", name=wanted["run"]["id"])).to_be_visible()
    expect(runs.get_by_role("link")).to_have_count(1)
    screenshot(page, "team-search-1280")
