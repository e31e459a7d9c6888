"""The work item page: its forms per kind, and every decision through the page (spec §3.4, tools.md decide)."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.tools import call_tool
from tests.work.conftest import (
    EXPECTED_OUTPUT,
    TYPED_OUTPUT,
    complete_request,
    decide,
    form_fields,
    open_item,
)


def item_url(item: dict) -> str:
    return f"/inbox/{item['id']}/"


def run_view(identity, run_id: str) -> dict:
    return call_tool(identity, "get_run", {"runId": run_id})


def post_form(client, item: dict, form: str, decision: str, **data):
    """Open the item page and send one of its forms the way a browser would."""
    page = client.get(item_url(item))
    assert page.status_code == 200, page.content[:500]
    fields = form_fields(page.content.decode(), form)
    return client.post(item_url(item), {**fields, "decision": decision, **data})


# --- what the page shows ------------------------------------------------------------------------


def test_a_task_page_has_one_typed_control_per_output_field_and_the_route_choice(purchase, browser_of):
    view = purchase()
    buyer = purchase.people["buyer"]
    html = browser_of(buyer).get(item_url(open_item(view))).content.decode()
    assert '<textarea name="output-vendor"' in html
    assert 'type="number" step="any" inputmode="decimal" name="output-amount"' in html
    assert 'type="checkbox" name="output-urgent"' in html
    assert 'type="date" name="output-needed_by"' in html
    assert 'type="datetime-local" step="1" name="output-deliver_at"' in html
    assert 'name="output-deliver_at-offset"' in html
    assert re.search(r'<select name="output-category"[^>]*>\s*<option value="">Choose…</option>'
                     r'\s*<option value="&quot;hardware&quot;">hardware</option>', html)
    # a list is lines of typed cells, an object named fields, a person a member of the organization
    assert '<textarea name="output-tags-0-0" id="f-output-tags-0-0"' in html
    assert 'name="op" value="output-tags:add-row"' in html and 'name="op" value="output-tags:remove-row:0"' in html
    assert 'name="output-details-col-0-name"' in html and 'name="output-details-col-0-kind"' in html
    assert 'name="output-details-0-0"' in html and 'name="op" value="output-details:add-col"' in html
    assert 'type="email" autocomplete="off" list="people-list" name="output-contact"' in html
    people = html.split('<datalist id="people-list">')[1].split("</datalist>")[0]
    assert '<option value="buyer@example.com">' in people and '<option value="manager@example.com">' in people
    assert 'class="json"' not in html.split('id="form-complete"')[1].split("</form>")[0]  # no JSON to write
    assert "optional" in html.split('name="output-remark"')[0].rsplit('<div class="field', 1)[1]
    assert 'type="file" name="files"' in html and 'name="links"' in html
    # spec §3.2: the route choice shows each route's `when`, and a reason
    assert 'type="radio" name="next" value="approve"' in html and "The amount is within budget" in html
    assert 'type="radio" name="next" value="cancelled"' in html and "The vendor cannot deliver" in html
    assert 'name="reason"' in html
    assert 'name="decision" value="completed"' in html and 'name="decision" value="failed"' in html
    assert 'name="decision" value="approved"' not in html
    assert f'name="snapshot" value="{open_item(view)["snapshot"]}"' in html
    # the PROCESS.md body and the step text, as Markdown
    assert "<strong>attach the quote</strong>" in html and "<strong>buy</strong>" in html


def test_an_approval_page_has_approve_and_reject_with_a_note(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    html = browser_of(purchase.people["manager"]).get(item_url(open_item(view))).content.decode()
    assert 'name="decision" value="approved"' in html and 'name="decision" value="rejected"' in html
    assert 'name="decision" value="failed"' in html and 'name="decision" value="completed"' not in html
    assert 'name="output-' not in html  # an approval takes no output (tools.md)
    # the run data is readable: typed output, the file with a working link, who did it
    assert "Acme Supplies" in html and "buyer@example.com" in html and "quote.pdf" in html
    link = re.search(r'<a href="(?:http://testserver)?(/files/f_[^"]+)" download>quote.pdf</a>', html).group(1)
    download = browser_of(purchase.people["manager"]).get(link.replace("&amp;", "&"))
    assert download.status_code == 200 and b"".join(download.streaming_content if download.streaming else
                                                     [download.content]) == b"%PDF quote"


def test_an_escalation_page_offers_return_complete_and_fail(purchase, browser_of, agent):
    view = purchase()
    view = complete_request(purchase.people["buyer"], view)
    view = decide(purchase.people["manager"], open_item(view), "approved")
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    view = agent.write("escalate", token=token, note="The vendor portal is down.")
    item = open_item(view)
    ops = browser_of(purchase.people["ops"])
    html = ops.get(item_url(item)).content.decode()
    for decision in ("returned", "completed", "failed"):
        assert f'name="decision" value="{decision}"' in html
    assert "The vendor portal is down." in html and "screener (agent)" in html
    assert 'name="output-orderId"' in html


def test_refs_are_shown_as_names(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    html = browser_of(purchase.people["manager"]).get(item_url(open_item(view))).content.decode()
    assert "screener (agent)" in html and "buyer@example.com" in html and "managers" in html
    assert ">u_" not in html and ">a_" not in html and ">g_" not in html


def test_a_test_run_says_so(purchase, browser_of):
    view = purchase(mode="test")
    html = browser_of(purchase.people["buyer"]).get(item_url(open_item(view))).content.decode()
    assert "This is a test run" in html and "Test run" in html


# --- decisions through the page -----------------------------------------------------------------


def test_complete_a_task_with_typed_output_and_an_uploaded_file(purchase, browser_of):
    view = purchase()
    buyer = purchase.people["buyer"]
    client = browser_of(buyer)
    quote = SimpleUploadedFile("quote.pdf", b"%PDF-1.4 the quote", content_type="application/pdf")
    response = post_form(client, open_item(view), "complete", "completed", **TYPED_OUTPUT,
                         links="https://example.com/quote/7", summary="Got the quote.", files=quote)
    assert response.status_code == 302 and response["Location"] == "/inbox/"
    after = run_view(buyer, view["run"]["id"])
    record = after["data"]["steps"]["request"]
    assert record["output"] == EXPECTED_OUTPUT  # 1250.50 stays 1250.5; nothing rounded or retyped
    assert record["next"] == "approve" and record["reason"] == "Within the budget."
    assert record["summary"] == "Got the quote." and record["by"] == buyer.ref
    [file_item, link_item] = record["evidence"]
    assert file_item["kind"] == "file" and len(file_item["sha256"]) == 64
    assert link_item == {"kind": "link", "ref": "https://example.com/quote/7"}
    assert [w["stepId"] for w in after["workItems"]] == ["approve"]
    # the success message names the run
    inbox = client.get("/inbox/").content.decode()
    assert "Completed “Request” in purchase" in inbox


def test_approve_through_the_page(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    manager = purchase.people["manager"]
    response = post_form(browser_of(manager), open_item(view), "approve", "approved")
    assert response.status_code == 302
    after = run_view(manager, view["run"]["id"])
    assert after["data"]["steps"]["approve"]["decision"] == "approved"
    assert [s["state"] for s in after["steps"] if s["id"] == "order"] == ["ready"]


def test_reject_with_a_note_and_the_rework_arrives(purchase, browser_of):
    # spec §3.1: rejection rewinds into on_reject; the note is current where the rework reads it
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    view = complete_request(buyer, purchase())
    client = browser_of(manager)
    refused = post_form(client, open_item(view), "reject", "rejected", note="  ")
    assert refused.status_code == 400
    assert "note: required: say why you reject it" in refused.content.decode()
    response = post_form(client, open_item(view), "reject", "rejected", note="The quote is out of date.")
    assert response.status_code == 302
    buyer_client = browser_of(buyer)
    inbox = buyer_client.get("/inbox/").content.decode()
    rework = open_item(run_view(buyer, view["run"]["id"]), "request")
    assert f'href="/inbox/{rework["id"]}/"' in inbox
    page = buyer_client.get(item_url(rework)).content.decode()
    assert "The quote is out of date." in page and "Sent back: Approve was rejected by manager@example.com" in page
    # the form starts from the earlier attempt, which is shown as such
    assert "This step is being done again" in page and "Earlier attempt · buyer@example.com" in page
    assert ">Acme Supplies</textarea>" in page and "from the earlier attempt; tick to attach it again" in page


def test_fail_with_a_note_ends_the_run(purchase, browser_of):
    view = purchase()
    buyer = purchase.people["buyer"]
    response = post_form(browser_of(buyer), open_item(view), "fail", "failed", note="The item is discontinued.")
    assert response.status_code == 302
    after = run_view(buyer, view["run"]["id"])
    assert after["run"]["outcome"] == "failed" and after["run"]["ended"]["note"] == "The item is discontinued."


def test_return_an_escalation_with_a_note(purchase, browser_of, agent):
    view = complete_request(purchase.people["buyer"], purchase())
    view = decide(purchase.people["manager"], open_item(view), "approved")
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    view = agent.write("escalate", token=token, note="Portal down.")
    response = post_form(browser_of(purchase.people["ops"]), open_item(view), "return", "returned",
                         note="It is back up; try again.")
    assert response.status_code == 302
    [work] = agent("get_work")["items"]
    assert work["handoff"]["returned"]["note"] == "It is back up; try again."


def test_complete_an_escalation_yourself(purchase, browser_of, agent):
    view = complete_request(purchase.people["buyer"], purchase())
    view = decide(purchase.people["manager"], open_item(view), "approved")
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    view = agent.write("escalate", token=token, note="Portal down.")
    ops = purchase.people["ops"]
    response = post_form(browser_of(ops), open_item(view), "complete", "completed", **{"output-orderId": "ORD-1"})
    assert response.status_code == 302
    after = run_view(ops, view["run"]["id"])
    assert after["run"]["outcome"] == "ordered" and after["data"]["steps"]["order"]["output"] == {"orderId": "ORD-1"}


def test_refused_submission_shows_every_issue_beside_its_field(purchase, browser_of):
    # spec §6 rule 3: every issue at once, each said once, in words; nothing changed
    view = purchase()
    buyer = purchase.people["buyer"]
    typed = {**TYPED_OUTPUT, "output-amount": "lots", "output-tags-1-0": "", "output-details-col-0-kind": "number",
             "output-contact": "nobody@example.com", "next": ""}
    response = post_form(browser_of(buyer), open_item(view), "complete", "completed", **typed)
    assert response.status_code == 422
    html = response.content.decode()
    summary = html.split('class="error-summary"')[1].split("</div>")[0]
    said = re.findall(r"<li>(?:<a [^>]*>)?(.*?)(?:</a>)?</li>", summary)
    assert said == ["Amount must be a number", "Details: po must be a number",
                    "Contact: nobody@example.com is not a member of Default organization",
                    "evidence: file required", "next: required, one of approve, cancelled"]
    amount = html.split('id="field-output-amount"')[1].split('id="field-output-')[0]
    assert amount.count("must be a number") == 1 and 'value="lots"' in amount
    details = html.split('id="field-output-details"')[1].split('id="field-output-')[0]
    assert "po must be a number" in details and ">PO-7</textarea>" not in details and 'value="PO-7"' in details
    contact = html.split('id="field-output-contact"')[1].split('id="field-output-')[0]
    assert "nobody@example.com is not a member of Default organization" in contact
    evidence = html.split('id="field-evidence"')[1].split("</fieldset>")[0]
    assert "file required" in evidence
    assert ">Acme Supplies</textarea>" in html  # what was typed is kept
    assert run_view(buyer, view["run"]["id"])["data"]["steps"] == {}
    assert "The last submission was not accepted" not in html  # this page lists them beside their fields


def test_a_refusal_is_shown_when_the_person_comes_back(purchase, browser_of):
    # spec §3.3 Handoff: the issues of the last submission that was not accepted travel with the item
    view = purchase()
    buyer = purchase.people["buyer"]
    client = browser_of(buyer)
    assert "The last submission was not accepted" not in client.get(item_url(open_item(view))).content.decode()
    post_form(client, open_item(view), "complete", "completed", **{**TYPED_OUTPUT, "output-amount": "-"})
    later = client.get(item_url(open_item(view))).content.decode()
    kept = later.split("The last submission was not accepted")[1].split("</div>")[0]
    assert "output.amount: expected number" in kept and "evidence: file required" in kept


def test_a_kept_upload_is_attached_after_a_refusal(purchase, browser_of):
    view = purchase()
    buyer = purchase.people["buyer"]
    client = browser_of(buyer)
    quote = SimpleUploadedFile("quote.pdf", b"%PDF kept", content_type="application/pdf")
    refused = post_form(client, open_item(view), "complete", "completed", **{**TYPED_OUTPUT, "reason": ""},
                        files=quote)
    assert refused.status_code == 422
    html = refused.content.decode()
    assert "quote.pdf" in html and "already uploaded; attached while ticked" in html
    kept = re.search(r'name="kept_file" value="(f_[0-9a-f]+)"', html).group(1)
    fields = form_fields(html, "complete")
    response = client.post(item_url(open_item(view)), {**fields, **TYPED_OUTPUT, "decision": "completed",
                                                        "kept_file": kept})
    assert response.status_code == 302
    evidence = run_view(buyer, view["run"]["id"])["data"]["steps"]["request"]["evidence"]
    assert evidence[0]["ref"] == kept


def test_a_double_submit_of_the_same_form_is_a_replay(purchase, browser_of):
    # spec §4: the form carries one requestId, so the second POST returns the first result
    view = complete_request(purchase.people["buyer"], purchase())
    client = browser_of(purchase.people["manager"])
    item = open_item(view)
    fields = form_fields(client.get(item_url(item)).content.decode(), "approve")
    first = client.post(item_url(item), {**fields, "decision": "approved"})
    second = client.post(item_url(item), {**fields, "decision": "approved"})
    assert first.status_code == second.status_code == 302
    history = run_view(purchase.people["manager"], view["run"]["id"])["data"]["steps"]["approve"]["history"]
    assert history == []


PAIR_REVIEW = """---
name: pair-review
description: Legal and finance review a contract at the same time.
inputs:
  contract: string
steps:
  - id: review
    parallel: [legal, finance]
    next: done
  - id: legal
    person: legal
    task: Review the terms.
    output: { acceptable: boolean, remarks: string }
    next: join
  - id: finance
    person: finance
    approve: Approve the cost.
    next: join
  - id: done
    finish: reviewed
---
"""


def test_a_stale_snapshot_keeps_what_was_typed_and_says_what_changed(publish, agent, make_person, browser_of):
    # spec §3.4: a decision on old run data is refused as stale; the page reads again and says why
    publish(PAIR_REVIEW)
    lawyer = make_person("lawyer@example.com", groups=["legal"])
    accountant = make_person("accountant@example.com", groups=["finance"])
    view = agent.write("start_run", process="pair-review", inputs={"contract": "C-9"})
    client = browser_of(accountant)
    approval = open_item(view, "finance")
    fields = form_fields(client.get(item_url(approval)).content.decode(), "reject")
    # While the accountant's page is open, the lawyer finishes the other branch: the run data changes.
    decide(lawyer, open_item(view, "legal"), "completed", output={"acceptable": True, "remarks": "Fine."})
    response = client.post(item_url(approval), {**fields, "decision": "rejected", "note": "Too expensive."})
    assert response.status_code == 409
    html = response.content.decode()
    assert "The run changed while you were deciding, so nothing was saved." in html
    assert "<strong>Legal</strong> was completed by lawyer@example.com" in html
    assert "Too expensive.</textarea>" in html  # the note the person typed is kept
    assert "Fine." in html  # the page shows the fresh run data
    fresh = form_fields(html, "reject")
    assert fresh["snapshot"] != fields["snapshot"]
    again = client.post(item_url(approval), {**fresh, "decision": "rejected", "note": "Too expensive."})
    assert again.status_code == 302
    assert run_view(accountant, view["run"]["id"])["run"]["outcome"] == "rejected"


def test_a_colleague_deciding_first_is_named(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    item = open_item(view)
    mine = browser_of(purchase.people["manager"])
    fields = form_fields(mine.get(item_url(item)).content.decode(), "approve")
    post_form(browser_of(purchase.people["colleague"]), item, "reject", "rejected", note="No budget left.")
    response = mine.post(item_url(item), {**fields, "decision": "approved"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "Someone else decided this first" in html
    assert "Already decided" in html and "by <strong>colleague@example.com</strong>" in html
    assert 'name="decision"' not in html
    # and reading it later shows the same, without a form
    later = mine.get(item_url(item)).content.decode()
    assert "Already decided" in later and "colleague@example.com" in later and 'name="decision"' not in later


def test_a_person_outside_the_assignment_cannot_decide(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    item = open_item(view)
    outsider = browser_of(purchase.people["outsider"])
    page = outsider.get(item_url(item))
    assert page.status_code == 403
    assert "Not yours to decide" in page.content.decode() and 'name="decision"' not in page.content.decode()
    fields = form_fields(browser_of(purchase.people["manager"]).get(item_url(item)).content.decode(), "approve")
    refused = outsider.post(item_url(item), {**fields, "decision": "approved"})
    assert refused.status_code == 403
    assert "approve" not in run_view(purchase.people["manager"], view["run"]["id"])["data"]["steps"]


def test_another_organizations_item_and_run_are_not_found(purchase, browser_of, make_person, other_org):
    view = purchase()
    # An operator there, who could cancel any run of their own organization.
    stranger = make_person("stranger@other.example", organization=other_org, operator=True)
    client = browser_of(stranger)
    assert client.get(item_url(open_item(view))).status_code == 404
    assert client.post(item_url(open_item(view)), {"decision": "failed", "note": "x"}).status_code == 404
    assert client.get(f"/runs/{view['run']['id']}/").status_code == 404
    assert client.post(f"/runs/{view['run']['id']}/cancel/", {"reason": "Mine now."}).status_code == 404
    assert client.get("/inbox/w_nonsense/").status_code == 404
    assert client.get("/inbox/").content.decode().count(view["run"]["id"]) == 0
    from runs.models import Run

    assert not Run.objects.get(pk=int(view["run"]["id"][2:])).is_over


def test_forms_need_their_csrf_token(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    item = open_item(view)
    client = browser_of(purchase.people["manager"], enforce_csrf=True)
    html = client.get(item_url(item)).content.decode()
    fields = form_fields(html, "approve")
    without = {k: v for k, v in fields.items() if k != "csrfmiddlewaretoken"}
    assert client.post(item_url(item), {**without, "decision": "approved"}).status_code == 403
    assert client.post(item_url(item), {**fields, "decision": "approved"}).status_code == 302


@pytest.mark.parametrize("url", ["/inbox/", "/inbox/w_1/", "/runs/", "/runs/r_1/", "/processes/"])
def test_pages_need_a_signed_in_person(db, client, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_a_person_in_no_organization_gets_a_clear_page(db, client):
    from accounts.models import User

    user = User.objects.create_user("lonely@example.com", "pw")
    client.force_login(user)
    response = client.get("/inbox/")
    assert response.status_code == 403
    assert "You are not in an organization yet" in response.content.decode()


def test_a_decision_the_item_does_not_allow_is_refused_by_the_tool(purchase, browser_of):
    # the page has no rules of its own: a crafted decision is the engine's `invalid`
    view = purchase()
    response = post_form(browser_of(purchase.people["buyer"]), open_item(view), "fail", "approved")
    assert response.status_code == 400
    assert "decision: &#x27;approved&#x27; is not allowed here; one of completed, failed" in response.content.decode()
    response = post_form(browser_of(purchase.people["buyer"]), open_item(view), "fail", "maybe")
    assert response.status_code == 400 and "press one of the buttons" in response.content.decode()


LONG_STORY = """---
name: long-story
description: A person's task under a long description.
steps:
  - id: check
    person: checkers
    task: Check the thing.
  - id: done
    finish: checked
---
""" + "Background the checker may want, and may not. " * 40


def test_a_long_process_description_starts_folded_and_a_short_one_open(publish, make_person, browser_of):
    # issue: the people's first day: a long description filled a narrow sidebar (a 4,376 px tall page).
    from runs.tools import call_tool

    publish(LONG_STORY)
    checker = make_person("c@example.com", groups=["checkers"])
    view = call_tool(checker, "start_run", {"process": "long-story", "inputs": {}, "requestId": "long-1"})
    html = browser_of(checker).get(f"/inbox/{open_item(view)['id']}/").content.decode()
    assert '<details class="about">' in html and "Background the checker may want" in html
    run_html = browser_of(checker).get(f"/runs/{view['run']['id']}/").content.decode()
    assert '<details class="about">' in run_html
    publish(LONG_STORY.replace("long-story", "short-story").split("---\n", 2)[0] + "---\n"
            + LONG_STORY.replace("long-story", "short-story").split("---\n", 2)[1] + "---\nA short note.\n")
    short = call_tool(checker, "start_run", {"process": "short-story", "inputs": {}, "requestId": "short-1"})
    short_html = browser_of(checker).get(f"/inbox/{open_item(short)['id']}/").content.decode()
    assert '<details class="about" open>' in short_html and "A short note." in short_html
