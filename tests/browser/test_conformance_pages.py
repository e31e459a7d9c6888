"""Two core conformance fixtures taken to a finish with every person step done in the browser.

Agents act over the REST tools as they would in production; people use only the pages (issue 4, "What it
must show").
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from runs.tools import call_tool
from tests.browser.conftest import screenshot, sign_in, wait_path

QUOTE_FILES = ("quote-northwind.pdf", "quote-contoso.pdf", "quote-fabrikam.pdf")


def agent_step(agent, run_id: str, step_id: str, output: dict, evidence=(), summary: str = "Done as instructed."):
    claimed = agent.write("claim", runId=run_id, stepId=step_id)
    return agent.write("submit", token=claimed["token"], output=output, evidence=list(evidence), summary=summary)


def open_work(page, title: str) -> None:
    """From the inbox, open the first work item with this title."""
    page.goto("/inbox/")
    page.get_by_role("link", name=title, exact=True).first.click()
    page.wait_for_selector("#decide")


def run_id_of(page) -> str:
    return re.search(r"/runs/(r_\d+)/", page.url).group(1)


def test_supplier_rfp_through_the_pages(publish, agent, make_person, new_page, tmp_path):
    publish("supplier-rfp")
    buyer = make_person("buyer@example.com", groups=["procurement-buyer"])
    manager = make_person("manager@example.com", groups=["procurement-manager"])
    files = []
    for name in QUOTE_FILES:
        path = tmp_path / name
        path.write_bytes(f"%PDF {name}".encode())
        files.append(str(path))

    page = new_page()
    sign_in(page, buyer)
    page.goto("/processes/")
    page.get_by_role("link", name="Start…").nth(0).click()
    wait_path(page, "/processes/supplier-rfp/")
    page.get_by_label(re.compile("^RFP ID")).fill("RFP-2026-014")
    page.get_by_label(re.compile("^Requirements")).fill("40 ergonomic chairs, delivered by March.")
    page.get_by_label(re.compile("^Supplier one")).fill("Northwind")
    page.get_by_label(re.compile("^Supplier two")).fill("Contoso")
    page.get_by_label(re.compile("^Supplier three")).fill("Fabrikam")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r".*/runs/r_\d+/$"))
    run_id = run_id_of(page)
    expect(page.get_by_text(f"Started run {run_id} of supplier-rfp")).to_be_visible()

    def collect_quotes(first_time: bool):
        open_work(page, "Collect quotes")
        page.get_by_label(re.compile("^Quote one")).fill("Northwind: 12,400 USD, delivery 2 March")
        page.get_by_label(re.compile("^Quote two")).fill("Contoso: 11,900 USD, delivery 9 March")
        page.get_by_label(re.compile("^Quote three")).fill("Fabrikam: 13,050 USD, delivery 27 February")
        if first_time:
            page.locator('input[type="file"][name="files"]').set_input_files(files)
        else:
            # The rework offers the earlier attempt's files; keep two and replace the third.
            for box in page.locator('input[name="kept_file"]').all()[:2]:
                box.check()
            page.locator('input[type="file"][name="files"]').set_input_files(files[2])
        page.get_by_role("button", name="Complete task").click()
        wait_path(page, "/inbox/")

    collect_quotes(first_time=True)
    comparison = {"comparison": "Contoso is cheapest; all meet the spec.", "recommendedSupplier": "Contoso",
                  "rationale": "Lowest price, delivery within the window."}
    agent_step(agent, run_id, "compare", comparison)

    reviewer = new_page()
    sign_in(reviewer, manager)
    open_work(reviewer, "Select")
    expect(reviewer.get_by_text("Contoso is cheapest; all meet the spec.")).to_be_visible()
    expect(reviewer.get_by_role("link", name="quote-fabrikam.pdf")).to_be_visible()
    reviewer.get_by_label("Reject with a note").fill("Fabrikam's quote has no validity date; get a new one.")
    reviewer.get_by_role("button", name="Reject").click()
    wait_path(reviewer, "/inbox/")

    collect_quotes(first_time=False)
    agent_step(agent, run_id, "compare", comparison)
    open_work(reviewer, "Select")
    reviewer.get_by_role("button", name="Approve").click()
    wait_path(reviewer, "/inbox/")
    agent_step(agent, run_id, "record_selection", {"sourcingRecord": "SRC-8812"},
               evidence=[{"kind": "link", "ref": "https://sourcing.example.com/records/SRC-8812"}])

    page.goto(f"/runs/{run_id}/")
    expect(page.get_by_text("Ended with outcome “Selected”")).to_be_visible()
    view = call_tool(buyer, "get_run", {"runId": run_id})
    assert view["run"]["state"] == "ended" and view["run"]["outcome"] == "selected"
    quotes = view["data"]["steps"]["collect_quotes"]
    assert len(quotes["evidence"]) == 3 and len(quotes["history"]) == 1
    assert view["data"]["steps"]["select"]["history"][0]["note"].startswith("Fabrikam's quote")
    screenshot(page, "run-supplier-rfp")


def test_expense_reimbursement_through_the_pages(publish, agent, make_person, new_page, tmp_path):
    publish("expense-reimbursement")
    employee = make_person("emma@example.com")
    manager = make_person("mark@example.com")
    payables = make_person("pay@example.com", groups=["accounts-payable"])
    receipt = tmp_path / "taxi-receipt.pdf"
    receipt.write_bytes(b"%PDF taxi receipt")

    page = new_page()
    sign_in(page, employee)
    page.goto("/processes/expense-reimbursement/")
    page.get_by_label(re.compile("^Claim ID")).fill("EXP-3301")
    page.get_by_label(re.compile("^Manager")).fill(manager.email)
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(re.compile(r".*/runs/r_\d+/$"))
    run_id = run_id_of(page)

    open_work(page, "Receipts")
    page.get_by_label(re.compile("^Purpose")).fill("Client visit in Rotterdam: taxi and lunch.")
    page.get_by_label(re.compile("^Total USD")).fill("86.40")
    lines = page.locator("#field-output-lines")
    for position, (name, kind) in enumerate((("merchant", "Text"), ("date", "Date"), ("amountUsd", "Number")), 1):
        if position > 1:
            lines.get_by_role("button", name="Add a field to Lines").click()
        lines.get_by_label(f"Field {position} name").fill(name)
        if kind != "Text":
            lines.get_by_label("Kind").nth(position - 1).select_option(label=kind)
            # the cells become inputs of the new kind, drawn by the server and swapped into the page
            expect(lines).not_to_have_attribute("aria-busy", "true")
    for index, (merchant, amount) in enumerate((("RTM Taxi", "41.4"), ("Cafe Dudok", "45"))):
        if index:
            lines.get_by_role("button", name="Add a line to Lines").click()
        line = lines.locator("ol.lines > li").nth(index)
        line.get_by_label("merchant", exact=True).fill(merchant)
        line.get_by_label("date", exact=True).fill("2026-02-03")
        line.get_by_label("amountUsd", exact=True).fill(amount)
    page.locator('input[type="file"][name="files"]').set_input_files(str(receipt))
    page.get_by_label(re.compile("^Summary")).fill("Two receipts, both in EUR converted at the ECB rate.")
    page.get_by_role("button", name="Complete task").click()
    wait_path(page, "/inbox/")

    agent_step(agent, run_id, "check", {"checkedTotalUsd": 86.4, "checks": "Both lines match their receipts."},
               evidence=[{"kind": "link", "ref": "https://expenses.example.com/claims/EXP-3301"}],
               summary="Matched both receipts; totals agree; no duplicate claim found.")

    approver = new_page()
    sign_in(approver, manager)
    open_work(approver, "Manager review")
    expect(approver.get_by_text("Client visit in Rotterdam: taxi and lunch.")).to_be_visible()
    expect(approver.get_by_role("link", name="taxi-receipt.pdf")).to_be_visible()
    screenshot(approver, "item-expense-approval")
    approver.get_by_role("button", name="Approve").click()
    wait_path(approver, "/inbox/")

    clerk = new_page()
    sign_in(clerk, payables)
    open_work(clerk, "Reimburse")
    clerk.get_by_label(re.compile("^Payment reference")).fill("PAY-55190")
    clerk.get_by_label(re.compile("^Paid USD")).fill("86.40")
    clerk.get_by_label("Links or document numbers, one per line").fill("https://bank.example.com/payments/PAY-55190")
    clerk.get_by_role("button", name="Complete task").click()
    wait_path(clerk, "/inbox/")

    clerk.goto(f"/runs/{run_id}/")
    expect(clerk.get_by_text("Ended with outcome “Reimbursed”")).to_be_visible()
    view = call_tool(employee, "get_run", {"runId": run_id})
    assert view["run"]["outcome"] == "reimbursed"
    steps = view["data"]["steps"]
    assert steps["receipts"]["output"]["totalUsd"] == 86.4
    assert steps["receipts"]["output"]["lines"] == [
        {"merchant": "RTM Taxi", "date": "2026-02-03", "amountUsd": 41.4},
        {"merchant": "Cafe Dudok", "date": "2026-02-03", "amountUsd": 45}]
    assert steps["manager_review"]["decision"] == "approved" and steps["manager_review"]["by"] == manager.ref
    assert steps["reimburse"]["output"] == {"paymentReference": "PAY-55190", "paidUsd": 86.4}
    screenshot(clerk, "run-expense-finished")
