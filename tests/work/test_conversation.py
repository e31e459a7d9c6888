"""A conversation on every item and run: comments in sanitised Markdown, @mentions that tell the member
mentioned, comments on the run's timeline with its decisions; and putting a named colleague on an item,
advisory like a take (spec §3.4: anyone in the assignment may decide, the first decision wins).
"""

import re

import pytest

from runs.models import Comment, ItemHandover, NoticeKind, Notification, Run, WorkItem
from tests.work.conftest import complete_request, decide, form_fields, open_item


@pytest.fixture
def approval(purchase):
    """A run waiting on the managers' approval: (run view, its open item)."""
    view = complete_request(purchase.people["buyer"], purchase())
    return view, open_item(view)


def timeline_lines(html: str) -> list[str]:
    timeline = html.split('id="timeline-heading"')[1]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", line)).strip()
            for line in re.findall(r'<div class="what">(.*?)</div>', timeline, re.S)]


# --- comments ---------------------------------------------------------------------------------------


def test_a_comment_is_sanitised_markdown_on_the_item_and_the_run_timeline(purchase, approval, browser_of):
    view, item = approval
    manager = browser_of(purchase.people["manager"])
    body = "Is the **quote** current?\n\n<script>alert(1)</script>[x](javascript:alert(1))"
    response = manager.post(f"/inbox/{item['id']}/comment/", {"body": body})
    assert response.status_code == 302 and response["Location"] == f"/inbox/{item['id']}/#conversation"
    page = manager.get(f"/inbox/{item['id']}/").content.decode()
    assert "Is the <strong>quote</strong> current?" in page
    assert "alert(1)" not in page.split('id="conversation"')[1].split("</ol>")[0]
    run = browser_of(purchase.people["buyer"]).get(f"/runs/{view['run']['id']}/").content.decode()
    lines = timeline_lines(run)
    # In order with the decisions: the request was completed before the comment.
    assert lines.index("manager@example.com commented on Approve") > lines.index("buyer@example.com completed Request")
    assert "Is the <strong>quote</strong> current?" in run


def test_a_comment_on_the_run_page_goes_on_its_timeline(purchase, approval, browser_of):
    view, _item = approval
    run_id = view["run"]["id"]
    buyer = browser_of(purchase.people["buyer"])
    assert buyer.post(f"/runs/{run_id}/comment/", {"body": "Thanks, all."})["Location"] == f"/runs/{run_id}/#conversation"
    assert "buyer@example.com commented" in timeline_lines(buyer.get(f"/runs/{run_id}/").content.decode())
    assert Comment.objects.get().work_item_id is None


def test_a_comment_changes_neither_the_run_data_nor_the_snapshot_a_decision_form_holds(purchase, approval,
                                                                                       browser_of):
    view, item = approval
    manager = browser_of(purchase.people["manager"])
    page = manager.get(f"/inbox/{item['id']}/").content.decode()
    fields = form_fields(page, "approve")
    run = Run.objects.get(pk=int(view["run"]["id"][2:]))
    browser_of(purchase.people["colleague"]).post(f"/inbox/{item['id']}/comment/", {"body": "Looks fine to me."})
    after = Run.objects.get(pk=run.pk)
    assert (after.data, after.seq, after.updated_at) == (run.data, run.seq, run.updated_at)
    response = manager.post(f"/inbox/{item['id']}/", {**fields, "decision": "approved"})
    assert response.status_code == 302  # the snapshot still matches: the decision went through
    assert WorkItem.objects.get(pk=int(item["id"][2:])).decision == "approved"


def test_a_mention_tells_the_member_in_the_app_and_by_email(purchase, approval, browser_of, mailoutbox,
                                                           django_capture_on_commit_callbacks):
    _view, item = approval
    manager = browser_of(purchase.people["manager"])
    with django_capture_on_commit_callbacks(execute=True):
        manager.post(f"/inbox/{item['id']}/comment/", {"body": "@Buyer@Example.com which vendor? cc @ops@example.com."})
    told = Notification.objects.filter(kind=NoticeKind.MENTION).select_related("user")
    assert sorted(n.user.email for n in told) == ["buyer@example.com", "ops@example.com"]
    assert all(n.work_item_id == int(item["id"][2:]) for n in told)
    assert {m.to[0] for m in mailoutbox if "mentioned you" in m.subject} == {"buyer@example.com", "ops@example.com"}
    mail = next(m for m in mailoutbox if m.to == ["buyer@example.com"] and "mentioned you" in m.subject)
    assert f"/inbox/{item['id']}/" in mail.body
    inbox = browser_of(purchase.people["buyer"]).get("/inbox/").content.decode()
    assert "manager@example.com mentioned you on Approve" in inbox
    # Mentioning oneself tells nobody.
    manager.post(f"/inbox/{item['id']}/comment/", {"body": "Note to @manager@example.com: chase it."})
    assert Notification.objects.filter(kind=NoticeKind.MENTION).count() == 2


def test_a_mention_in_a_test_run_is_told_in_the_app_and_never_emailed(purchase, browser_of, mailoutbox,
                                                                    django_capture_on_commit_callbacks):
    item = open_item(complete_request(purchase.people["buyer"], purchase(mode="test")))
    with django_capture_on_commit_callbacks(execute=True):
        browser_of(purchase.people["manager"]).post(f"/inbox/{item['id']}/comment/", {"body": "@buyer@example.com ok?"})
    notice = Notification.objects.get(kind=NoticeKind.MENTION)
    assert notice.text.startswith("[test run]") and not notice.email_pending
    assert not [m for m in mailoutbox if "mentioned you" in m.subject]


def test_a_bad_comment_names_every_problem_and_keeps_the_text(purchase, approval, browser_of, settings):
    _view, item = approval
    settings.COMMENT_MAX_CHARS = 40
    manager = browser_of(purchase.people["manager"])
    body = "@nobody@example.com and @outsider@else.org, " + "x" * 40
    response = manager.post(f"/inbox/{item['id']}/comment/", {"body": body})
    html = response.content.decode()
    assert response.status_code == 400
    assert "body: longer than the 40 characters allowed" in html
    assert "@nobody@example.com is not a member of" in html and "@outsider@else.org is not a member of" in html
    assert f">{body}</textarea>" in html  # what was typed is kept
    empty = manager.post(f"/inbox/{item['id']}/comment/", {"body": "   "})
    assert empty.status_code == 400 and "body: required" in empty.content.decode()
    assert Comment.objects.count() == 0 and not Notification.objects.filter(kind=NoticeKind.MENTION).exists()


def test_strangers_cannot_comment_and_a_get_is_refused(purchase, approval, browser_of, make_person, other_org):
    view, item = approval
    stranger = browser_of(make_person("stranger@example.com", organization=other_org))
    assert stranger.post(f"/inbox/{item['id']}/comment/", {"body": "hi"}).status_code == 404
    assert stranger.post(f"/runs/{view['run']['id']}/comment/", {"body": "hi"}).status_code == 404
    assert stranger.post("/runs/r_nonsense/comment/", {"body": "hi"}).status_code == 404
    assert browser_of(purchase.people["manager"]).get(f"/inbox/{item['id']}/comment/").status_code == 405
    assert Comment.objects.count() == 0


# --- assigning a colleague ----------------------------------------------------------------------------


def test_a_member_assigns_a_colleague_who_is_told_and_finds_it_assigned_to_them(purchase, approval, browser_of):
    view, item = approval
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    response = browser_of(manager).post(f"/inbox/{item['id']}/assign/", {"person": "Colleague@example.com"})
    assert response.status_code == 302
    assert WorkItem.objects.get(pk=int(item["id"][2:])).handed_to_id == colleague.user.pk
    notice = Notification.objects.get(kind=NoticeKind.HANDED)
    assert notice.user_id == colleague.user.pk and "assigned Approve" in notice.text
    client = browser_of(colleague)
    mine = client.get("/inbox/?show=mine").content.decode()
    assert f'href="/inbox/{item["id"]}/"' in mine and "Assigned to you" in mine
    assert "Assigned to colleague@example.com" in browser_of(manager).get("/inbox/").content.decode()
    run = client.get(f"/runs/{view['run']['id']}/").content.decode()
    assert "manager@example.com assigned Approve to colleague@example.com" in timeline_lines(run)
    # Assigning the same person again changes nothing and tells nobody twice.
    browser_of(manager).post(f"/inbox/{item['id']}/assign/", {"person": "colleague@example.com"})
    assert ItemHandover.objects.count() == 1 and Notification.objects.filter(kind=NoticeKind.HANDED).count() == 1


def test_an_assignment_is_advisory_the_first_decision_still_wins(purchase, approval, browser_of):
    _view, item = approval
    manager = purchase.people["manager"]
    browser_of(manager).post(f"/inbox/{item['id']}/assign/", {"person": "colleague@example.com"})
    decide(manager, item, "approved")  # spec §3.4: anyone in the assignment may decide
    row = WorkItem.objects.get(pk=int(item["id"][2:]))
    assert row.decision == "approved" and row.decided_by == manager.ref
    late = browser_of(manager).post(f"/inbox/{item['id']}/assign/", {"person": "manager@example.com"}, follow=True)
    assert "no longer open" in late.content.decode()


def test_only_the_assignment_and_operators_assign_and_only_to_the_assignment(purchase, approval, browser_of):
    _view, item = approval
    assert browser_of(purchase.people["buyer"]).post(f"/inbox/{item['id']}/assign/",
                                                     {"person": "manager@example.com"}).status_code == 403
    ops = browser_of(purchase.people["ops"])
    outside = ops.post(f"/inbox/{item['id']}/assign/", {"person": "buyer@example.com"})
    html = outside.content.decode()
    assert outside.status_code == 400 and "person: &#x27;buyer@example.com&#x27; is not one of the group managers" in html
    assert ops.post(f"/inbox/{item['id']}/assign/", {"person": ""}).status_code == 400
    assert ops.post(f"/inbox/{item['id']}/assign/", {"person": "manager@example.com"}).status_code == 302
    assert WorkItem.objects.get(pk=int(item["id"][2:])).handed_to.email == "manager@example.com"
