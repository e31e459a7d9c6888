"""A team in two browsers at once, neither reloading: notices clear themselves, new work, a take, a comment
with an @mention, an assignment and a decision reach the other person's open page within a poll or two
(work/live_page.py, static/js/live.js), and what they are typing stays.

spec §3.4: anyone in an item's assignment may decide and the first decision wins.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_people_pages import people, start_purchase
from tests.work.conftest import PURCHASE, complete_request, decide, open_item

# Long enough for a poll (LIVE_POLL_SECONDS, 4 s) and the page's re-read on a busy machine.
LIVE = 20_000


@pytest.fixture
def team(publish, make_person):
    publish(PURCHASE)
    return people(make_person)


def two_people(new_page, team, width: int = 1280):
    """The manager and their colleague, each signed in in a browser context of their own."""
    mine, theirs = new_page(width), new_page(width)
    sign_in(mine, team["manager"])
    sign_in(theirs, team["colleague"])
    return mine, theirs


def bell(page):
    return page.locator("a.bell")


def test_opening_the_item_clears_its_notice(team, agent, new_page):
    complete_request(team["buyer"], start_purchase(agent))
    page = new_page()
    sign_in(page, team["manager"])
    expect(bell(page)).to_have_attribute("aria-label", "Notifications: 1 unread")
    page.get_by_role("link", name="Approve").first.click()
    expect(page.get_by_role("heading", name="Your decision")).to_be_visible()
    expect(bell(page)).to_have_attribute("aria-label", "Notifications: none unread")
    page.go_back()
    page.reload()
    expect(page.locator("#notices").locator("..").get_by_text("unread")).to_have_count(0)


def test_new_work_and_a_take_reach_the_other_inbox_without_a_reload(team, agent, new_page):
    mine, theirs = two_people(new_page, team)
    for page in (mine, theirs):
        page.goto("/inbox/")
        expect(bell(page)).to_have_attribute("aria-label", "Notifications: none unread")
    search = theirs.locator("#site-q")
    search.fill("half-typed")  # the colleague is typing in the top bar's search meanwhile
    item = open_item(complete_request(team["buyer"], start_purchase(agent)))
    for page in (mine, theirs):
        expect(bell(page)).to_have_attribute("aria-label", "Notifications: 1 unread", timeout=LIVE)
        expect(page.locator(f'a.title[href="/inbox/{item["id"]}/"]')).to_be_visible(timeout=LIVE)
    expect(search).to_have_value("half-typed")
    # The manager takes it from their inbox's item page; the colleague's inbox names who is on it.
    mine.goto(f"/inbox/{item['id']}/")
    mine.get_by_role("button", name="I’m working on this").click()
    expect(theirs.get_by_text("manager@example.com is working on this since")).to_be_visible(timeout=LIVE)
    screenshot(theirs, "live-inbox-new-work-and-take-1280")


def test_a_decision_closes_the_item_the_other_person_has_open_and_keeps_their_text(team, agent, new_page):
    item = open_item(complete_request(team["buyer"], start_purchase(agent)))
    _mine, theirs = two_people(new_page, team)
    theirs.goto(f"/inbox/{item['id']}/")
    note = theirs.get_by_label("Reject with a note")
    note.fill("The quote is from last year; please")
    decide(team["manager"], item, "approved")  # the manager decides first (spec §3.4)
    banner = theirs.locator('[data-live-part="item-state"]')
    expect(banner).to_contain_text("This item was decided by manager@example.com: Approved", timeout=LIVE)
    expect(note).to_have_value("The quote is from last year; please")
    expect(bell(theirs)).to_have_attribute("aria-label", "Notifications: none unread")
    screenshot(theirs, "live-item-decided-by-a-colleague-1280")


def test_a_comment_with_a_mention_reaches_the_mentioned_person(team, agent, new_page):
    item = open_item(complete_request(team["buyer"], start_purchase(agent)))
    mine, theirs = two_people(new_page, team)
    theirs.goto(f"/inbox/{item['id']}/")  # reads the new-work notice
    theirs.goto("/inbox/")
    expect(bell(theirs)).to_have_attribute("aria-label", "Notifications: none unread")
    mine.goto(f"/inbox/{item['id']}/")
    mine.get_by_label("Your comment").fill("Could you check the **quote**?")
    mine.get_by_label("Mention a colleague").fill("colleague")
    mine.get_by_role("listbox", name="Members").get_by_role("option", name="colleague@example.com").click()
    mine.get_by_role("button", name="Add the mention").click()
    expect(mine.get_by_label("Your comment")).to_have_value("Could you check the **quote**? @colleague@example.com ")
    mine.get_by_role("button", name="Comment").click()
    expect(mine.get_by_text("Your comment is on the item.")).to_be_visible()
    # The colleague, in their inbox, is told of the mention without a reload.
    expect(bell(theirs)).to_have_attribute("aria-label", "Notifications: 1 unread", timeout=LIVE)
    mention = theirs.get_by_role("link", name="manager@example.com mentioned you on Approve")
    expect(mention).to_be_visible()
    mention.click()
    comments = theirs.locator('[data-live-part="comments"]')
    expect(comments.locator("strong", has_text="quote")).to_be_visible()
    expect(bell(theirs)).to_have_attribute("aria-label", "Notifications: none unread")  # opening it read it
    # With the item open, the next comment appears on its own.
    mine.get_by_label("Your comment").fill("Found it: the quote is *current*.")
    mine.get_by_role("button", name="Comment").click()
    expect(comments.locator("em", has_text="current")).to_be_visible(timeout=LIVE)
    screenshot(theirs, "live-item-conversation-1280")


def test_an_assignment_reaches_the_colleague(team, agent, new_page):
    item = open_item(complete_request(team["buyer"], start_purchase(agent)))
    mine, theirs = two_people(new_page, team, width=390)
    theirs.goto("/inbox/?show=mine")
    expect(theirs.get_by_text("Nothing here")).to_be_visible()
    mine.goto(f"/inbox/{item['id']}/")
    mine.get_by_label("Assign to a colleague").select_option("colleague@example.com")
    mine.get_by_role("button", name="Assign", exact=True).click()
    expect(mine.get_by_text("is assigned to colleague@example.com; they are told.")).to_be_visible()
    expect(mine.locator("[data-handed]")).to_contain_text("Assigned to colleague@example.com")
    row = theirs.locator(f'a.title[href="/inbox/{item["id"]}/"]')
    expect(row).to_be_visible(timeout=LIVE)
    expect(theirs.get_by_text("Assigned to you")).to_be_visible()
    expect(bell(theirs)).to_have_attribute("aria-label", "Notifications: 2 unread")
    screenshot(theirs, "live-assigned-to-me-390")
