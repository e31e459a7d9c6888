"""A person's work in a real browser: sign in, find the item, decide it (issue 4 §4, §6; spec §3.4)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from runs.tools import call_tool
from tests.browser.conftest import screenshot, sign_in, wait_path
from tests.work.conftest import PURCHASE, complete_request, decide, open_item
from tests.work.test_item_page import PAIR_REVIEW


def people(make_person):
    return {
        "buyer": make_person("buyer@example.com", groups=["buyers"]),
        "manager": make_person("manager@example.com", groups=["managers"]),
        "colleague": make_person("colleague@example.com", groups=["managers"]),
    }


def start_purchase(agent, item="Laptop") -> dict:
    return agent.write("start_run", process="purchase", inputs={"item": item, "budget": 2000})


def test_sign_in_with_the_keyboard(publish, make_person, new_page):
    publish(PURCHASE)
    buyer = people(make_person)["buyer"]
    page = new_page()
    page.goto("/inbox/")
    wait_path(page, "/accounts/login/")
    # The email field takes the focus; Tab reaches the password, Enter sends the form.
    page.wait_for_function("document.activeElement && document.activeElement.name === 'login'")
    page.keyboard.type(buyer.email)
    page.keyboard.press("Tab")
    page.keyboard.type(f"pw-{buyer.email}")
    page.keyboard.press("Enter")
    wait_path(page, "/inbox/")
    expect(page.get_by_role("heading", name="Your inbox")).to_be_visible()


def test_find_the_item_in_the_inbox_and_approve(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    view = complete_request(team["buyer"], start_purchase(agent))
    page = new_page()
    sign_in(page, team["manager"])
    page.get_by_role("link", name="Approve").first.click()
    wait_path(page, f"/inbox/{open_item(view)['id']}/")
    expect(page.get_by_text("Acme Supplies")).to_be_visible()
    page.get_by_role("button", name="Approve").click()
    wait_path(page, "/inbox/")
    expect(page.get_by_text("Approved “Approve” in purchase")).to_be_visible()
    after = call_tool(team["manager"], "get_run", {"runId": view["run"]["id"]})
    assert after["data"]["steps"]["approve"]["decision"] == "approved"
    assert after["data"]["steps"]["approve"]["by"] == team["manager"].ref


def test_reject_with_a_note_and_see_the_rework_arrive(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    view = complete_request(team["buyer"], start_purchase(agent))
    manager = new_page()
    sign_in(manager, team["manager"])
    manager.goto(f"/inbox/{open_item(view)['id']}/")
    manager.get_by_label("Reject with a note").fill("The quote expired last week; attach a current one.")
    manager.get_by_role("button", name="Reject").click()
    wait_path(manager, "/inbox/")
    buyer = new_page()
    sign_in(buyer, team["buyer"])
    buyer.get_by_role("link", name="Request").first.click()
    expect(buyer.get_by_text("The quote expired last week; attach a current one.").first).to_be_visible()
    expect(buyer.get_by_text("Sent back: Approve was rejected by manager@example.com")).to_be_visible()
    # The rework form starts from the earlier attempt.
    expect(buyer.locator('[name="output-vendor"]')).to_have_value("Acme Supplies")


def test_complete_a_task_with_typed_output_and_an_uploaded_file(publish, agent, make_person, new_page, tmp_path):
    publish(PURCHASE)
    team = people(make_person)
    view = start_purchase(agent)
    quote = tmp_path / "quote-7.pdf"
    quote.write_bytes(b"%PDF-1.4 quote seven")
    page = new_page()
    sign_in(page, team["buyer"])
    page.get_by_role("link", name="Request").first.click()
    page.get_by_label(re.compile(r"^Vendor")).fill("Acme Supplies")
    page.get_by_label(re.compile(r"^Amount")).fill("1250.50")
    page.get_by_label("Yes, urgent").check()
    page.get_by_label(re.compile(r"^Needed by")).fill("2026-03-01")
    page.locator('[name="output-deliver_at"]').fill("2026-03-01T09:30:00")
    page.get_by_label("Deliver at: UTC offset").select_option("+02:00")
    page.get_by_label(re.compile(r"^Category")).select_option(label="hardware")
    page.get_by_label("Tags, line 1").fill("laptops")
    page.get_by_role("button", name="Add a line to Tags").click()
    page.get_by_label("Tags, line 2").fill("rush")
    details = page.locator("#field-output-details")
    details.get_by_label("Field 1 name").fill("po")
    details.get_by_label("po", exact=True).fill("PO-7")  # the field's name labels its value as it is typed
    page.get_by_role("combobox", name=re.compile(r"^Contact")).fill("buyer@example.com")
    page.locator('input[type="file"][name="files"]').set_input_files(str(quote))
    page.get_by_text("The amount is within budget").click()
    page.get_by_label("Reason for this route").fill("Within the budget.")
    page.get_by_role("button", name="Complete task").click()
    wait_path(page, "/inbox/")
    record = call_tool(team["buyer"], "get_run", {"runId": view["run"]["id"]})["data"]["steps"]["request"]
    assert record["output"] == {
        "vendor": "Acme Supplies", "amount": 1250.5, "urgent": True, "needed_by": "2026-03-01",
        "deliver_at": "2026-03-01T09:30:00+02:00", "category": "hardware", "tags": ["laptops", "rush"],
        "details": {"po": "PO-7"}, "contact": "buyer@example.com",
    }
    assert record["next"] == "approve" and record["evidence"][0]["kind"] == "file"
    # The uploaded file opens from the run page.
    page.goto(f"/runs/{view['run']['id']}/")
    with page.expect_download() as download:
        page.get_by_role("link", name="quote-7.pdf").click()
    assert Path(download.value.path()).read_bytes() == b"%PDF-1.4 quote seven"


def test_a_stale_snapshot_keeps_the_typed_note_and_says_what_changed(publish, agent, make_person, new_page):
    publish(PAIR_REVIEW)
    lawyer = make_person("lawyer@example.com", groups=["legal"])
    accountant = make_person("accountant@example.com", groups=["finance"])
    view = agent.write("start_run", process="pair-review", inputs={"contract": "C-9"})
    page = new_page()
    sign_in(page, accountant)
    page.goto(f"/inbox/{open_item(view, 'finance')['id']}/")
    page.get_by_label("Reject with a note").fill("The cost is above plan.")
    # The lawyer finishes the other branch while this page is open.
    decide(lawyer, open_item(view, "legal"), "completed", output={"acceptable": True, "remarks": "Terms fine."})
    page.get_by_role("button", name="Reject").click()
    alert = page.get_by_role("alert").first
    expect(alert).to_contain_text("The run changed while you were deciding")
    expect(alert).to_contain_text("Legal was completed by lawyer@example.com")
    expect(page.get_by_label("Reject with a note")).to_have_value("The cost is above plan.")
    expect(page.get_by_text("Terms fine.")).to_be_visible()
    screenshot(page, "item-stale")
    page.get_by_role("button", name="Reject").click()
    wait_path(page, "/inbox/")
    assert call_tool(accountant, "get_run", {"runId": view["run"]["id"]})["run"]["outcome"] == "rejected"


def test_a_colleague_deciding_first_is_named(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    view = complete_request(team["buyer"], start_purchase(agent))
    url = f"/inbox/{open_item(view)['id']}/"
    mine, theirs = new_page(), new_page()
    sign_in(mine, team["manager"])
    sign_in(theirs, team["colleague"])
    mine.goto(url)
    theirs.goto(url)
    theirs.get_by_role("button", name="Approve").click()
    wait_path(theirs, "/inbox/")
    mine.get_by_role("button", name="Approve").click()
    expect(mine.get_by_role("alert").first).to_contain_text("Someone else decided this first")
    closed = mine.locator("#closed").locator("..")
    expect(closed).to_contain_text("Already decided")
    expect(closed).to_contain_text("colleague@example.com")
    expect(mine.get_by_role("button", name="Approve")).to_have_count(0)


def test_the_item_page_fits_a_phone(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    view = start_purchase(agent)
    phone = new_page(390, 844)
    sign_in(phone, team["buyer"])
    phone.goto(f"/inbox/{open_item(view)['id']}/")
    overflow = phone.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the phone"
    expect(phone.get_by_role("button", name="Complete task")).to_be_visible()
    screenshot(phone, "item-phone")


def test_every_control_shows_where_the_keyboard_is(publish, agent, make_person, new_page):
    publish(PURCHASE)
    team = people(make_person)
    view = complete_request(team["buyer"], start_purchase(agent))
    page = new_page()
    sign_in(page, team["manager"])
    page.goto(f"/inbox/{open_item(view)['id']}/")
    page.get_by_role("button", name="Approve").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent.trim()")
    shadow = page.evaluate("getComputedStyle(document.activeElement).boxShadow")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert focused == "Approve" and (shadow != "none" or outline != "none")
    labels = page.evaluate(
        "[...document.querySelectorAll('main input:not([type=hidden]), main textarea, main select')]"
        ".filter(e => !e.labels.length && !e.getAttribute('aria-label')).map(e => e.name)"
    )
    assert labels == [], f"controls without a label: {labels}"


def test_screenshots_of_the_inbox_item_and_run_pages(publish, agent, make_person, new_page):
    """Save what a manager sees, to look at (var/screenshots/)."""
    publish(PURCHASE)
    team = people(make_person)
    ops = make_person("ops@example.com", operator=True)
    view = complete_request(team["buyer"], start_purchase(agent))
    for item in ("Standing desk", "Monitor arm"):
        complete_request(team["buyer"], start_purchase(agent, item=item))
    fresh = start_purchase(agent, item="Ergonomic chair")
    buyer = new_page()
    sign_in(buyer, team["buyer"])
    buyer.goto(f"/inbox/{open_item(fresh)['id']}/")
    screenshot(buyer, "item-task")
    page = new_page()
    sign_in(page, team["manager"])
    screenshot(page, "inbox")
    page.goto(f"/inbox/{open_item(view)['id']}/")
    screenshot(page, "item")
    decide(team["manager"], open_item(view), "rejected", note="The quote is from last year; attach a current one.")
    view = call_tool(team["buyer"], "get_run", {"runId": view["run"]["id"]})
    complete_request(team["buyer"], view)
    operator = new_page()
    sign_in(operator, ops)
    operator.goto(f"/runs/{view['run']['id']}/")
    assert re.search(r"data-step=\"approve\"", operator.content())
    screenshot(operator, "run")
