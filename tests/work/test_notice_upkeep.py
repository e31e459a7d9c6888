"""Notices keep themselves current: opening an item reads its notices, a decision by anyone takes them out
of every count, nobody is told of their own doing, "Mark all read" reads the rest, and emails link to the
item (spec §3.4: the first decision wins, so a notice of a decided item is stale for everyone).
"""

import datetime as dt

from django.utils import timezone

from runs import notices
from runs.models import NoticeKind, Notification
from tests.work.conftest import complete_request, decide, open_item

CHAIN = """---
name: chain
description: Two steps in a row for the same group.
steps:
  - id: draft
    person: writers
    task: Write the draft.
  - id: polish
    person: writers
    task: Polish the draft.
  - id: done
    finish: ok
---
"""


def unread(identity) -> list[Notification]:
    return list(Notification.objects.filter(user=identity.user, read_at__isnull=True))


def test_opening_an_item_reads_its_notices_for_that_person_alone(purchase, browser_of):
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    assert [n.kind for n in unread(manager)] == [NoticeKind.NEW_WORK]
    page = browser_of(manager).get(f"/inbox/{item['id']}/").content.decode()
    assert unread(manager) == []
    assert "Notifications: none unread" in page  # the bell on the page just opened counts it already
    assert len(unread(colleague)) == 1  # the colleague has not opened it


def test_a_decision_by_anyone_takes_the_item_out_of_every_unread_count(purchase, browser_of):
    manager, colleague, ops = purchase.people["manager"], purchase.people["colleague"], purchase.people["ops"]
    view = complete_request(purchase.people["buyer"], purchase())
    # An overdue notice of the same item reaches the operator too; it goes with the decision as well.
    Notification.objects.create(user=ops.user, run_id=int(view["run"]["id"][2:]), work_item_id=int(open_item(view)["id"][2:]),
                                step_id="approve", kind=NoticeKind.OVERDUE, text="Approve is overdue.",
                                created_at=timezone.now())
    assert len(unread(colleague)) == 1 and len(unread(ops)) == 1
    decide(manager, open_item(view), "approved")  # spec §3.4: the first decision wins
    assert unread(colleague) == [] and unread(ops) == []
    assert "Notifications: none unread" in browser_of(colleague).get("/inbox/").content.decode()


def test_nobody_is_told_of_work_their_own_decision_made(publish, agent, make_person):
    publish(CHAIN)
    ana = make_person("ana@example.com", groups=["writers"])
    bo = make_person("bo@example.com", groups=["writers"])
    view = agent.write("start_run", process="chain", inputs={})
    decide(ana, open_item(view), "completed", output={})
    polish = Notification.objects.filter(step_id="polish", kind=NoticeKind.NEW_WORK)
    assert [n.user.email for n in polish] == ["bo@example.com"]
    assert ana.user.pk not in {n.user_id for n in polish}
    assert bo.user.pk in {n.user_id for n in Notification.objects.filter(step_id="draft")}


def test_mark_all_read_reads_every_notice(purchase, browser_of):
    manager = purchase.people["manager"]
    complete_request(purchase.people["buyer"], purchase())
    complete_request(purchase.people["buyer"], purchase())
    client = browser_of(manager)
    page = client.get("/inbox/").content.decode()
    assert "Mark all read" in page and "Notifications: 2 unread" in page
    assert client.post("/inbox/notifications/read/")["Location"] == "/inbox/"
    assert unread(manager) == []
    assert "Mark all read" not in client.get("/inbox/").content.decode()


def test_the_digest_links_to_the_item_and_leaves_out_items_already_decided(purchase, mailoutbox):
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    colleague.user.email_notices = "digest"
    colleague.user.save(update_fields=["email_notices"])
    waiting = complete_request(purchase.people["buyer"], purchase())
    decided = complete_request(purchase.people["buyer"], purchase())
    decide(manager, open_item(decided), "approved")
    assert notices.send_digests(now=timezone.now() + dt.timedelta(seconds=1)) == 1
    [digest] = [m for m in mailoutbox if m.to == ["colleague@example.com"]]
    assert digest.subject == "1 update on your processes"
    assert f"/inbox/{open_item(waiting)['id']}/" in digest.body
    assert f"/runs/{waiting['run']['id']}/" not in digest.body
    assert decided["run"]["id"] not in digest.body
