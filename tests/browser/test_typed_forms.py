"""Forms that type for the person, in a real browser: a list filled line by line, a person picked from the
organization, an unknown address refused beside its field, and both forms on a phone (spec §2.3)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from accounts.models import User
from runs.models import Run
from runs.tools import call_tool
from tests.browser.conftest import screenshot, sign_in
from tests.work.conftest import open_item
from tests.work.test_typed_forms import EXPENSES


def team(make_person):
    claimant = make_person("claimant@example.com")
    manager = make_person("manager@example.com")
    User.objects.filter(pk=manager.user.pk).update(first_name="Mona", last_name="Reyes")
    make_person("mark@example.com")
    return claimant, manager


def lines(page):
    return page.locator("#field-inputs-lines ol.lines > li")


def name_fields(page, *names: tuple[str, str]) -> None:
    """Name the fields of every line (each added with the form's own button) and choose their kinds."""
    for position, (name, kind) in enumerate(names, start=1):
        if position > 1:
            page.get_by_role("button", name="Add a field to Lines").click()
        page.get_by_label(f"Field {position} name").fill(name)
        if kind != "Text":
            page.get_by_label("Kind").nth(position - 1).select_option(label=kind)
            # the cells become inputs of the new kind, drawn by the server and swapped into the page
            expect(page.locator("#field-inputs-lines")).not_to_have_attribute("aria-busy", "true")


def pick(page, label: str, typed: str, option: str) -> None:
    box = page.get_by_role("combobox", name=re.compile(f"^{label}"))
    box.fill(typed)
    page.locator(".picker").get_by_role("option", name=re.compile(option)).click()


def test_a_list_filled_line_by_line_with_a_person_picked(publish, make_person, new_page):
    publish(EXPENSES)
    claimant, _manager = team(make_person)
    page = new_page()
    sign_in(page, claimant)
    page.goto("/processes/expenses/")
    page.get_by_label(re.compile("^Claim ID")).fill("C-77")
    name_fields(page, ("merchant", "Text"), ("amount", "Number"))
    # the picker searches by name: "mona" finds the manager, not the other members
    box = page.get_by_role("combobox", name=re.compile("^Manager"))
    box.fill("mona")
    expect(page.locator(".picker [role=option]")).to_have_text(["Mona Reyes\nmanager@example.com"], use_inner_text=True)
    screenshot(page, "start-form-picker")
    page.locator(".picker").get_by_role("option", name=re.compile("Mona Reyes")).click()
    expect(box).to_have_value("manager@example.com")
    first = lines(page).nth(0)
    first.get_by_label("merchant", exact=True).fill("Cafe Luna")
    first.get_by_label("amount", exact=True).fill("12.50")
    for merchant, amount in (("Wrong line", "1"), ("Taxi", "30")):
        page.get_by_role("button", name="Add a line to Lines").click()
        line = lines(page).last
        expect(line.get_by_label("merchant", exact=True)).to_be_focused()
        line.get_by_label("merchant", exact=True).fill(merchant)
        line.get_by_label("amount", exact=True).fill(amount)
    lines(page).nth(1).get_by_role("button", name="Remove line 2 of Lines").click()
    expect(lines(page)).to_have_count(2)
    expect(lines(page).nth(1).locator(".line-title")).to_have_text("Line 2")
    screenshot(page, "start-form-lines")
    page.get_by_role("button", name="Start run", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/r_"))
    expect(page.get_by_text("Started run")).to_be_visible()
    inputs = page.locator("dl.data").first
    expect(inputs.get_by_role("cell", name="Cafe Luna")).to_be_visible()
    expect(inputs.get_by_role("cell", name="Taxi")).to_be_visible()
    expect(inputs.get_by_role("cell", name="12.5")).to_be_visible()
    expect(inputs.get_by_text("Wrong line")).to_have_count(0)
    run = Run.objects.get()
    assert run.data["inputs"]["lines"] == [{"merchant": "Cafe Luna", "amount": 12.5}, {"merchant": "Taxi", "amount": 30}]
    assert run.data["inputs"]["manager"] == "manager@example.com"


def test_the_start_form_refuses_an_unknown_person_beside_the_field(publish, make_person, new_page):
    publish(EXPENSES)
    claimant, _manager = team(make_person)
    page = new_page()
    sign_in(page, claimant)
    page.goto("/processes/expenses/")
    page.get_by_label(re.compile("^Claim ID")).fill("C-78")
    page.get_by_role("combobox", name=re.compile("^Manager")).fill("nobody@example.com")
    page.get_by_label("Field 1 name").fill("merchant")
    lines(page).nth(0).get_by_label("merchant", exact=True).fill("Cafe Luna")
    page.get_by_role("button", name="Start run", exact=True).click()
    page.wait_for_load_state()
    field = page.locator("#field-inputs-manager")
    expect(field.locator(".field-error")).to_have_text("nobody@example.com is not a member of Default organization")
    expect(field.get_by_role("combobox")).to_have_value("nobody@example.com")
    expect(lines(page).nth(0).get_by_label("merchant", exact=True)).to_have_value("Cafe Luna")
    assert not Run.objects.exists()
    # the summary's link takes the keyboard to the field
    page.get_by_role("link", name=re.compile("Manager: nobody@example.com")).click()
    page.wait_for_function("document.activeElement && document.activeElement.name === 'inputs-manager'")


def test_lines_are_added_and_removed_without_javascript(publish, make_person, chromium, site):
    publish(EXPENSES)
    claimant, _manager = team(make_person)
    context = chromium.new_context(base_url=site, java_script_enabled=False)
    context.set_default_timeout(10_000)
    try:
        page = context.new_page()
        sign_in(page, claimant)
        page.goto("/processes/expenses/")
        page.get_by_label("Field 1 name").fill("merchant")
        lines(page).nth(0).get_by_label("Field 1").fill("Cafe Luna")  # the name labels the cells once sent
        page.get_by_role("button", name="Add a line to Lines").click()
        page.wait_for_load_state()
        expect(lines(page)).to_have_count(2)
        expect(lines(page).nth(0).get_by_label("merchant", exact=True)).to_have_value("Cafe Luna")
        lines(page).nth(1).get_by_label("merchant", exact=True).fill("Taxi")
        lines(page).nth(0).get_by_role("button", name="Remove line 1 of Lines").click()
        page.wait_for_load_state()
        expect(lines(page)).to_have_count(1)
        expect(lines(page).nth(0).get_by_label("merchant", exact=True)).to_have_value("Taxi")
        expect(page.get_by_label("Field 1 name")).to_have_value("merchant")
        assert not Run.objects.exists()
    finally:
        context.close()


def _task_with_lines(publish, make_person, agent):
    publish(EXPENSES)
    claimant, _manager = team(make_person)
    view = call_tool(claimant, "start_run", {"process": "expenses", "requestId": "7c1d2a8e-0000-4000-8000-000000000001",
                                        "inputs": {"claimId": "C-79", "manager": "manager@example.com",
                                                   "lines": [{"merchant": "Cafe Luna", "amount": 12.5}]}})
    return claimant, view


def test_the_forms_fit_a_phone_and_a_desk(publish, make_person, agent, new_page):
    claimant, view = _task_with_lines(publish, make_person, agent)
    for width, height in ((1280, 900), (390, 844)):
        page = new_page(width, height)
        sign_in(page, claimant)
        page.goto("/processes/expenses/")
        page.get_by_role("button", name="Add a line to Lines").click()
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the start form is {overflow}px wider than {width}px"
        screenshot(page, f"start-form-{width}")
        page.goto(f"/inbox/{open_item(view)['id']}/")
        receipts = page.locator("#field-output-receipts")
        page.get_by_label("Field 1 name").fill("merchant")
        receipts.locator("ol.lines > li").nth(0).get_by_label("merchant", exact=True).fill("Cafe Luna, Main Street")
        page.get_by_role("button", name="Add a line to Amounts").click()
        page.get_by_role("spinbutton", name="Amounts, line 1").fill("12.5")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the task form is {overflow}px wider than {width}px"
        screenshot(page, f"task-form-{width}")


def test_a_refused_task_says_what_is_wrong_beside_each_input(publish, make_person, agent, new_page):
    claimant, view = _task_with_lines(publish, make_person, agent)
    page = new_page(390, 844)
    sign_in(page, claimant)
    page.goto(f"/inbox/{open_item(view)['id']}/")
    receipts = page.locator("#field-output-receipts")
    receipts.get_by_label("Field 1", exact=False).first.fill("")
    receipts.locator("ol.lines > li").nth(0).get_by_label("Field 1").fill("Cafe Luna")  # a value with no name
    amounts = page.locator("#field-output-amounts")
    amounts.get_by_role("spinbutton", name="Amounts, line 1").fill("12.5")
    pick(page, "Buddy", "mark", "mark@example.com")
    page.get_by_role("combobox", name=re.compile("^Buddy")).fill("ghost@example.com")
    page.get_by_role("button", name="Complete task", exact=True).click()
    expect(receipts.locator(".field-error")).to_have_text(["Field 1 needs a name"])
    expect(page.locator("#field-output-buddy .field-error")).to_have_text(
        "ghost@example.com is not a member of Default organization")
    expect(receipts.locator("ol.lines > li").nth(0).get_by_label("Field 1")).to_have_value("Cafe Luna")
    expect(amounts.get_by_role("spinbutton", name="Amounts, line 1")).to_have_value("12.5")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    screenshot(page, "task-form-refused-390")
    assert call_tool(claimant, "get_run", {"runId": view["run"]["id"]})["data"]["steps"] == {}
