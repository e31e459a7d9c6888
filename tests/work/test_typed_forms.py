"""Forms that type for the person: lists as lines of typed cells, people picked from the organization, and
every problem in words beside its cell (spec §2.3, §6 rule 3), on the start form and on a task's form."""

import re

import pytest

from accounts.models import User
from runs.models import Run
from runs.tools import call_tool
from tests.work.conftest import form_fields, open_item

EXPENSES = """---
name: expenses
description: Claim expenses; your manager approves them.
inputs:
  claimId: string
  manager: person
  lines: { type: list, items: object }
  nights: { type: list, items: number, optional: true }
steps:
  - id: receipts
    person: initiator
    task: List every receipt with its merchant and amount.
    output:
      receipts: { type: list, items: object }
      amounts: { type: list, items: number }
      buddy: { type: person, optional: true }
  - id: approve
    person: inputs.manager
    approve: Approve the claim.
  - id: done
    finish: paid
---
"""


@pytest.fixture
def expenses(publish, make_person, browser_of):
    """Publish the expenses process; return the claimant's signed-in client, with the people in it."""
    publish(EXPENSES)
    claimant = make_person("claimant@example.com")
    manager = make_person("manager@example.com")
    User.objects.filter(pk=manager.user.pk).update(first_name="Mona", last_name="Reyes")
    client = browser_of(claimant)
    client.people = {"claimant": claimant, "manager": manager}
    return client


def start_fields(client) -> dict:
    html = client.get("/processes/expenses/").content.decode()
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html.split('<form method="post">')[1]))


def lines_of(field: str, names: list[tuple[str, str]], *rows: tuple[str, ...]) -> dict:
    """A list of objects as the browser sends it: the named fields with their kinds, then each line's cells."""
    data = {f"{field}-col": [str(j) for j in range(len(names))], f"{field}-row": [str(i) for i in range(len(rows))]}
    for j, (name, kind) in enumerate(names):
        data[f"{field}-col-{j}-name"], data[f"{field}-col-{j}-kind"] = name, kind
    for i, row in enumerate(rows):
        data.update({f"{field}-{i}-{j}": text for j, text in enumerate(row)})
    return data


LINES = lines_of("inputs-lines", [("merchant", "text"), ("amount", "number"), ("paid", "yesno")],
                 ("Cafe Luna", "12.50", "true"), ("", "", ""), ("Taxi", "30", ""))


def field_html(html: str, name: str) -> str:
    return html.split(f'id="field-{name}"')[1].split('id="field-')[0]


# --- a person -----------------------------------------------------------------------------------


def test_the_start_form_refuses_an_address_that_is_no_member_beside_the_field(expenses):
    fields = start_fields(expenses)
    response = expenses.post("/processes/expenses/", {**fields, "inputs-claimId": "C-1",
                                                      "inputs-manager": "nobody@example.com", **LINES})
    assert response.status_code == 400
    html = response.content.decode()
    manager = field_html(html, "inputs-manager")
    assert "nobody@example.com is not a member of Default organization" in manager
    assert 'value="nobody@example.com"' in manager and 'aria-invalid="true"' in manager
    assert html.count("is not a member") == 2  # beside the field and in the summary, nowhere else
    assert not Run.objects.exists()  # before: the run started, and failed when it reached the approval
    # what was typed is kept
    assert ">Cafe Luna</textarea>" in html and 'value="12.50"' in html


def test_a_deactivated_member_is_refused_as_the_engine_would_refuse_them(expenses):
    User.objects.filter(pk=expenses.people["manager"].user.pk).update(is_active=False)
    response = expenses.post("/processes/expenses/", {**start_fields(expenses), "inputs-claimId": "C-1",
                                                      "inputs-manager": "manager@example.com", **LINES})
    assert response.status_code == 400 and not Run.objects.exists()
    assert "manager@example.com is not a member" in field_html(response.content.decode(), "inputs-manager")


def test_someone_of_another_organization_is_no_member_here(expenses, make_person, other_org):
    make_person("elsewhere@other.example", organization=other_org)
    response = expenses.post("/processes/expenses/", {**start_fields(expenses), "inputs-claimId": "C-1",
                                                      "inputs-manager": "elsewhere@other.example", **LINES})
    assert response.status_code == 400 and not Run.objects.exists()
    manager = field_html(response.content.decode(), "inputs-manager")
    assert "elsewhere@other.example is not a member of Default organization" in manager


def test_the_picker_lists_the_members_with_their_names(expenses, make_person, other_org):
    make_person("elsewhere@other.example", organization=other_org)
    html = expenses.get("/processes/expenses/").content.decode()
    assert 'type="email" autocomplete="off" list="people-list" name="inputs-manager"' in html
    people = html.split('<datalist id="people-list">')[1].split("</datalist>")[0]
    assert '<option value="manager@example.com">Mona Reyes</option>' in people
    assert "claimant@example.com" in people and "elsewhere@other.example" not in people


def test_a_large_organization_suggests_people_as_they_are_typed(expenses, make_person, other_org, monkeypatch):
    monkeypatch.setattr("work.people.LISTED", 1)
    make_person("mona.other@other.example", organization=other_org)
    html = expenses.get("/processes/expenses/").content.decode()
    assert '<datalist id="people-list" data-suggest="/people/suggest/"></datalist>' in html
    found = expenses.get("/people/suggest/", {"q": "mona"}).json()
    assert found == {"people": [{"email": "manager@example.com", "name": "Mona Reyes"}]}
    assert expenses.get("/people/suggest/", {"q": "reyes man"}).json()["people"][0]["email"] == "manager@example.com"
    assert expenses.get("/people/suggest/", {"q": "other.example"}).json() == {"people": []}
    assert expenses.get("/people/suggest/").json() == {"people": []}


def test_suggestions_need_a_signed_in_member(db, client):
    assert client.get("/people/suggest/", {"q": "a"}).status_code == 302


# --- a list, line by line -----------------------------------------------------------------------


def test_a_list_filled_line_by_line_is_stored_as_typed_values(expenses):
    response = expenses.post("/processes/expenses/", {
        **start_fields(expenses), "inputs-claimId": "C-1", "inputs-manager": "Manager@Example.com", **LINES,
        "inputs-nights-row": ["0", "1"], "inputs-nights-0-0": "2", "inputs-nights-1-0": " 1.5 "})
    assert response.status_code == 302
    run = call_tool(expenses.people["claimant"], "get_run", {"runId": response["Location"].strip("/").split("/")[-1]})
    assert run["data"]["inputs"] == {
        "claimId": "C-1", "manager": "Manager@Example.com", "nights": [2, 1.5],
        "lines": [{"merchant": "Cafe Luna", "amount": 12.5, "paid": True}, {"merchant": "Taxi", "amount": 30}],
    }
    page = expenses.get(response["Location"]).content.decode()
    assert "<th scope=\"col\">Merchant</th>" in page and "<td>Cafe Luna</td>" in page and "<td>12.5</td>" in page


def test_add_a_line_shows_the_form_again_with_one_more_line_and_starts_nothing(expenses):
    data = {**start_fields(expenses), "inputs-claimId": "C-1", "inputs-manager": "nobody@example.com", **LINES,
            "op": "inputs-lines:add-row"}
    response = expenses.post("/processes/expenses/", data)
    assert response.status_code == 200 and not Run.objects.exists()
    html = response.content.decode()
    lines = field_html(html, "inputs-lines")
    assert lines.count('name="inputs-lines-row"') == 4 + 1  # three sent, one added, one in the blank template
    assert 'name="inputs-lines-3-0" id="f-inputs-lines-3-0" rows="1" autofocus' in lines
    assert ">Cafe Luna</textarea>" in lines and ">Taxi</textarea>" in lines
    assert "not a member" not in html and "error-summary" not in html  # nothing was checked yet
    removed = expenses.post("/processes/expenses/", {**data, "op": "inputs-lines:remove-row:0"})
    assert ">Cafe Luna</textarea>" not in field_html(removed.content.decode(), "inputs-lines")


def test_a_kind_or_field_change_shows_the_form_again_with_its_new_inputs(expenses):
    data = {**start_fields(expenses), **LINES, "inputs-lines-col-2-kind": "date", "op": "inputs-lines:kind"}
    lines = field_html(expenses.post("/processes/expenses/", data).content.decode(), "inputs-lines")
    assert 'type="date" name="inputs-lines-0-2"' in lines
    added = expenses.post("/processes/expenses/", {**data, "op": "inputs-lines:add-col"}).content.decode()
    assert 'name="inputs-lines-col-3-name"' in field_html(added, "inputs-lines")


def test_every_problem_is_said_once_beside_its_cell_with_line_numbers_as_shown(expenses):
    bad = lines_of("inputs-lines", [("merchant", "text"), ("amount", "number"), ("", "text")],
                   ("Cafe Luna", "twelve", "x"), ("", "", ""), ("Taxi", "3O", ""))
    response = expenses.post("/processes/expenses/", {
        **start_fields(expenses), "inputs-manager": "manager@example.com", **bad,
        "inputs-nights-row": ["0"], "inputs-nights-0-0": "two"})
    assert response.status_code == 400 and not Run.objects.exists()
    html = response.content.decode()
    said = re.findall(r'<li><a href="(#[^"]+)">(.*?)</a></li>', html.split('class="error-summary"')[1].split("</div>")[0])
    assert said == [
        ("#f-inputs-claimId", "Claim ID is required"),
        ("#f-inputs-lines-col-2-name", "Lines: Field 3 needs a name"),
        ("#f-inputs-lines-0-1", "Lines, line 1: amount must be a number"),
        ("#f-inputs-lines-2-1", "Lines, line 3: amount must be a number"),
        ("#f-inputs-nights-0-0", "Nights, line 1 must be a number"),
    ]
    lines = field_html(html, "inputs-lines")
    first = lines.split('id="f-inputs-lines-0-1"')[0].rsplit('<div class="cell', 1)[1]
    assert "Line 1: amount must be a number" in first
    assert 'value="twelve"' in lines and 'value="3O"' in lines and ">Cafe Luna</textarea>" in lines
    assert "expected" not in html


# --- a task's form --------------------------------------------------------------------------------


def started(expenses) -> dict:
    response = expenses.post("/processes/expenses/", {**start_fields(expenses), "inputs-claimId": "C-1",
                                                      "inputs-manager": "manager@example.com", **LINES})
    return call_tool(expenses.people["claimant"], "get_run", {"runId": response["Location"].strip("/").split("/")[-1]})


def test_a_task_takes_its_list_line_by_line_and_refuses_an_unknown_buddy(expenses):
    run = started(expenses)
    item, run_id = open_item(run), run["run"]["id"]
    url = f"/inbox/{item['id']}/"
    fields = form_fields(expenses.get(url).content.decode(), "complete")
    typed = {**fields, "decision": "completed",
             **lines_of("output-receipts", [("merchant", "text"), ("amount", "number")], ("Cafe Luna", "12.5")),
             "output-amounts-row": ["0", "1"], "output-amounts-0-0": "12.5", "output-amounts-1-0": "x",
             "output-buddy": "ghost@example.com"}
    refused = expenses.post(url, typed)
    assert refused.status_code == 422
    html = refused.content.decode()
    assert "Line 2 must be a number" in field_html(html, "output-amounts")
    assert "ghost@example.com is not a member of Default organization" in field_html(html, "output-buddy")
    view = call_tool(expenses.people["claimant"], "get_run", {"runId": run_id})
    assert "receipts" not in view["data"]["steps"]
    again = {**typed, **form_fields(html, "complete"), "output-amounts-1-0": "30", "output-buddy": "manager@example.com"}
    done = expenses.post(url, again)
    assert done.status_code == 302
    record = call_tool(expenses.people["claimant"], "get_run", {"runId": run_id})["data"]["steps"]["receipts"]
    assert record["output"] == {"receipts": [{"merchant": "Cafe Luna", "amount": 12.5}], "amounts": [12.5, 30],
                                "buddy": "manager@example.com"}


def test_add_a_line_on_a_task_keeps_the_files_chosen(expenses):
    from django.core.files.uploadedfile import SimpleUploadedFile

    run = started(expenses)
    item, run_id = open_item(run), run["run"]["id"]
    url = f"/inbox/{item['id']}/"
    fields = form_fields(expenses.get(url).content.decode(), "complete")
    response = expenses.post(url, {**fields, "op": "output-amounts:add-row", "output-amounts-row": ["0"],
                                   "output-amounts-0-0": "7", "summary": "Half done",
                                   "files": SimpleUploadedFile("r.pdf", b"%PDF r", content_type="application/pdf")})
    assert response.status_code == 200
    html = response.content.decode()
    amounts = field_html(html, "output-amounts")
    assert 'value="7"' in amounts and 'name="output-amounts-1-0"' in amounts
    assert "r.pdf" in html and 'name="kept_file"' in html and ">Half done</textarea>" in html
    assert call_tool(expenses.people["claimant"], "get_run", {"runId": run_id})["data"]["steps"] == {}


def test_text_no_database_stores_is_refused_beside_its_cell(expenses):
    lines = lines_of("inputs-lines", [("merchant", "text")], ("Cafe\x00Luna",))
    response = expenses.post("/processes/expenses/", {**start_fields(expenses), "inputs-claimId": "C-1",
                                                      "inputs-manager": "manager@example.com", **lines})
    assert response.status_code == 400 and not Run.objects.exists()
    cell = field_html(response.content.decode(), "inputs-lines").split('id="f-inputs-lines-0-0"')[0]
    assert re.search(r"Line 1: merchant \w+", cell.rsplit('<div class="cell', 1)[1])
