"""The inbox: my open work items oldest first, badges, filters, the operator queues (spec §3.4, issue 4 §4)."""

import datetime as dt

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.models import WorkItem
from runs.tools import call_tool
from tests.runs.conftest import age
from tests.work.conftest import complete_request, open_item


def item_links(html: str) -> list[str]:
    import re

    return re.findall(r'<a class="title" href="/inbox/(w_\d+)/"', html)


def test_the_inbox_lists_only_my_items_oldest_first(purchase, browser_of):
    first, second = purchase(item="Desk"), purchase(item="Chair")
    buyer = purchase.people["buyer"]
    # Make the second run's item older than the first: oldest first is by when the item was created.
    WorkItem.objects.filter(pk=int(open_item(second)["id"][2:])).update(
        created_at=timezone.now() - dt.timedelta(hours=3)
    )
    html = browser_of(buyer).get("/inbox/").content.decode()
    assert item_links(html) == [open_item(second)["id"], open_item(first)["id"]]
    assert "2 open items, oldest first" in html and "Item: Chair" in html
    # a manager has nothing yet; the buyer's items are not theirs
    assert item_links(browser_of(purchase.people["manager"]).get("/inbox/").content.decode()) == []


def test_badges_show_kind_test_run_due_and_overdue(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase(mode="test"))
    client = browser_of(purchase.people["manager"])
    html = client.get("/inbox/").content.decode()
    assert "badge-kind-approve" in html and "Test run" in html and "Due in 23\xa0hours<" in html
    assert "badge-overdue" not in html
    age(view["run"]["id"], 2 * 86400)
    html = client.get("/inbox/").content.decode()
    assert "badge-overdue" in html and ">Overdue<" in html


def test_the_inbox_filters_by_process(purchase, publish, agent, make_person, browser_of):
    publish("""---
name: errand
description: One task.
steps:
  - id: run_it
    person: buyers
    task: Run the errand.
  - id: done
    finish: ok
---
""")
    purchase()
    errand = agent.write("start_run", process="errand", inputs={})
    client = browser_of(purchase.people["buyer"])
    html = client.get("/inbox/").content.decode()
    assert 'href="?process=errand"' in html and 'href="?process=purchase"' in html
    filtered = client.get("/inbox/?process=errand").content.decode()
    assert item_links(filtered) == [open_item(errand)["id"]]


def test_operators_see_the_escalation_queue_and_overdue_work(purchase, browser_of, agent):
    from tests.work.conftest import decide

    view = complete_request(purchase.people["buyer"], purchase())
    view = decide(purchase.people["manager"], open_item(view), "approved")
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    escalated = agent.write("escalate", token=token, note="Portal down.")
    late = complete_request(purchase.people["buyer"], purchase(item="Late one"))
    age(late["run"]["id"], 2 * 86400)
    ops_html = browser_of(purchase.people["ops"]).get("/inbox/").content.decode()
    escalations = ops_html.split('id="escalations"')[1].split('id="overdue"')[0]
    assert f'/inbox/{open_item(escalated)["id"]}/' in escalations
    # The head counts what is listed below it, escalations too (not "0 open items" above one).
    assert "open items and 1 escalation for operators" in ops_html or "open item and 1 escalation for operators" in ops_html
    overdue = ops_html.split('id="overdue"')[1].split("</section>")[0]
    assert f'/inbox/{open_item(late)["id"]}/' in overdue and "for managers" in overdue
    # someone who is not an operator sees neither queue
    manager_html = browser_of(purchase.people["manager"]).get("/inbox/").content.decode()
    assert 'id="escalations"' not in manager_html and open_item(escalated)["id"] not in manager_html


def test_the_inbox_lists_my_notifications_newest_first_and_marks_them_read(purchase, browser_of,
                                                                           django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    client = browser_of(purchase.people["manager"])
    with django_capture_on_commit_callbacks(execute=True):
        html = client.get("/inbox/").content.decode()
    # New work on the approval, then its being overdue: newest first.
    assert "2 new" in html and html.index(f"Approve in purchase run {view['run']['id']} is overdue.") < html.index(
        f"New work: Approve in purchase run {view['run']['id']}.")
    assert f'href="/inbox/{open_item(view)["id"]}/"' in html.split('id="notices"')[1]
    response = client.post("/inbox/notifications/read/")
    assert response.status_code == 302
    html = client.get("/inbox/").content.decode()
    assert "2 new" not in html and "Mark all read" not in html


def test_inbox_queries_do_not_grow_with_the_number_of_items(purchase, browser_of):
    buyer = purchase.people["buyer"]
    client = browser_of(buyer)
    for _ in range(3):
        purchase()
    client.get("/inbox/")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/inbox/")
        assert response.status_code == 200
        return len(captured)

    few = count()
    for index in range(25):
        purchase(item=f"Item {index}")
    many = count()
    assert many == few, f"{few} queries for 3 items, {many} for 28"
    assert len(item_links(client.get("/inbox/").content.decode())) == 28


def test_the_inbox_pages_past_fifty_items(purchase, browser_of):
    for index in range(52):
        purchase(item=f"Item {index}")
    client = browser_of(purchase.people["buyer"])
    first = client.get("/inbox/").content.decode()
    assert len(item_links(first)) == 50 and "Page 1 of 2" in first
    assert len(item_links(client.get("/inbox/?page=2").content.decode())) == 2


def test_home_sends_a_signed_in_person_to_the_inbox(purchase, browser_of, client):
    assert browser_of(purchase.people["buyer"]).get("/")["Location"] == "/inbox/"
    assert "Sign in" in client.get("/").content.decode()


def test_get_work_and_the_inbox_agree(purchase, browser_of):
    # tools.md get_work (person form): the same items as the inbox, oldest first
    purchase(), purchase()
    buyer = purchase.people["buyer"]
    work = call_tool(buyer, "get_work", {})
    html = browser_of(buyer).get("/inbox/").content.decode()
    assert item_links(html) == [entry["workItem"]["id"] for entry in work["items"]]


def test_an_item_is_assigned_one_way_only(purchase):
    # The inbox reads a person's, their groups' and the operators' items apart and adds them up
    # (runs.assignments.assigned_parts): an item in two of them would show twice.
    import pytest
    from django.db import IntegrityError, transaction

    purchase()
    item = WorkItem.objects.get(state="open")
    assert item.assigned_group_id is not None and item.assigned_user_id is None and not item.for_operators
    for change in ({"assigned_user": purchase.people["buyer"].user}, {"for_operators": True}, {"assigned_group": None}):
        with pytest.raises(IntegrityError), transaction.atomic():
            WorkItem.objects.filter(pk=item.pk).update(**change)
    assert WorkItem.objects.get(pk=item.pk).assigned_group_id == item.assigned_group_id
