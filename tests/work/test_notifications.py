"""Notices: overdue work reaches the assignee and the operators once per attempt; new work, work sent back,
escalations and a run's end reach whom they concern; emails at once, in a daily digest or not at all, with
absolute links, and never for a test run.

spec §2.2 `due`, §3.3 (test runs).
"""

import pytest

from runs import timers
from runs.models import Notification
from tests.runs.conftest import age
from tests.work.conftest import complete_request, decide, open_item

ESCALATING = """---
name: nightly
description: An agent step with a deadline.
steps:
  - id: crunch
    agent: Crunch the numbers.
    due: 1h
  - id: done
    finish: ok
---
"""


def sweep(capture):
    with capture(execute=True):
        timers.sweep()


def recipients(run_id: str, kind: str = "overdue") -> list[str]:
    notices = Notification.objects.filter(run_id=int(run_id[2:]), kind=kind).select_related("user")
    return sorted(n.user.email for n in notices)


def overdue_mail(outbox) -> list:
    return [m for m in outbox if "is overdue" in m.subject]


def test_overdue_reaches_the_group_and_the_operators_once(purchase, mailoutbox, django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    run_id = view["run"]["id"]
    age(run_id, 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    # the managers group (both members) and the operator; not the buyer, not the outsider
    assert recipients(run_id) == ["colleague@example.com", "manager@example.com", "ops@example.com"]
    assert sorted(m.to[0] for m in overdue_mail(mailoutbox)) == recipients(run_id)
    message = overdue_mail(mailoutbox)[0]
    assert "is overdue" in message.subject and f"/inbox/{open_item(view)['id']}/" in message.body
    # once per attempt: later sweeps and reads add nothing
    sweep(django_capture_on_commit_callbacks)
    age(run_id, 86400)
    sweep(django_capture_on_commit_callbacks)
    assert len(recipients(run_id)) == 3 and len(overdue_mail(mailoutbox)) == 3


def test_a_repeat_of_the_step_is_a_new_attempt_with_its_own_notice(purchase, mailoutbox,
                                                                   django_capture_on_commit_callbacks):
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    view = complete_request(buyer, purchase())
    run_id = view["run"]["id"]
    age(run_id, 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    view = decide(manager, open_item(view), "rejected", note="Redo.")
    view = complete_request(buyer, view)
    age(run_id, 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    assert len(recipients(run_id)) == 6 and len(overdue_mail(mailoutbox)) == 6


def test_a_person_path_step_notifies_that_person(publish, agent, make_person, mailoutbox,
                                                 django_capture_on_commit_callbacks):
    publish("""---
name: sign-off
description: The named owner signs off.
inputs:
  owner: person
steps:
  - id: sign
    person: inputs.owner
    approve: Sign off.
    due: 1d
  - id: done
    finish: ok
---
""")
    make_person("owner@example.com")
    make_person("bystander@example.com")
    make_person("ops@example.com", operator=True)
    view = agent.write("start_run", process="sign-off", inputs={"owner": "owner@example.com"})
    age(view["run"]["id"], 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    assert recipients(view["run"]["id"]) == ["ops@example.com", "owner@example.com"]


def test_an_agent_step_notifies_only_the_operators(publish, agent, make_person, mailoutbox,
                                                   django_capture_on_commit_callbacks):
    publish(ESCALATING)
    make_person("someone@example.com", groups=["crunchers"])
    make_person("ops@example.com", operator=True)
    view = agent.write("start_run", process="nightly", inputs={})
    age(view["run"]["id"], 7200)
    sweep(django_capture_on_commit_callbacks)
    assert recipients(view["run"]["id"]) == ["ops@example.com"]
    assert [m.to for m in overdue_mail(mailoutbox)] == [["ops@example.com"]]


def test_an_escalation_and_its_step_overdue_notify_only_the_operators(publish, agent, make_person, mailoutbox,
                                                                      django_capture_on_commit_callbacks):
    publish(ESCALATING)
    make_person("ops@example.com", operator=True)
    make_person("plain@example.com")
    view = agent.write("start_run", process="nightly", inputs={})
    token = agent.write("claim", runId=view["run"]["id"], stepId="crunch")["token"]
    agent.write("escalate", token=token, note="Stuck.")
    # The escalation itself is a notice for the operators, at once.
    assert recipients(view["run"]["id"], "escalation") == ["ops@example.com"]
    age(view["run"]["id"], 7200)
    sweep(django_capture_on_commit_callbacks)
    assert recipients(view["run"]["id"]) == ["ops@example.com"]


def test_a_test_run_sends_no_email_and_its_notice_says_it_is_a_test(purchase, mailoutbox, browser_of,
                                                                    django_capture_on_commit_callbacks):
    # spec §3.3: the server MUST NOT send real notifications for a test run; people are told it is a test
    view = complete_request(purchase.people["buyer"], purchase(mode="test"))
    run_id = view["run"]["id"]
    age(run_id, 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    assert mailoutbox == []
    notices = Notification.objects.filter(run_id=int(run_id[2:]))
    assert recipients(run_id) == ["colleague@example.com", "manager@example.com", "ops@example.com"]
    assert all(n.text.startswith("[test run] ") and not n.email_pending for n in notices)
    html = browser_of(purchase.people["manager"]).get("/inbox/").content.decode()
    assert "[test run] Approve in purchase" in html


def test_reading_the_inbox_applies_the_deadline_without_a_sweep(purchase, browser_of, mailoutbox,
                                                                django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    with django_capture_on_commit_callbacks(execute=True):
        html = browser_of(purchase.people["manager"]).get("/inbox/").content.decode()
    assert "badge-overdue" in html and len(overdue_mail(mailoutbox)) == 3


@pytest.mark.parametrize("read", [True, False])
def test_marking_one_notice_read(purchase, browser_of, read, django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    manager = purchase.people["manager"]
    mine = Notification.objects.get(user=manager.user, kind="overdue")
    theirs = Notification.objects.get(user=purchase.people["ops"].user, kind="overdue")
    target = mine if read else theirs
    browser_of(manager).post("/inbox/notifications/read/", {"notice": target.pk})
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.read_at is not None) is read
    assert theirs.read_at is None  # nobody marks another person's notices


# --- new work, work sent back, escalations, a run's end -------------------------------------------


def test_new_work_reaches_the_group_and_is_emailed_with_an_absolute_link(purchase, mailoutbox, settings,
                                                                         django_capture_on_commit_callbacks):
    settings.PUBLIC_URL = "https://processes.example.com"
    with django_capture_on_commit_callbacks(execute=True):
        view = complete_request(purchase.people["buyer"], purchase())
    run_id, item = view["run"]["id"], open_item(view)
    assert recipients(run_id, "new_work") == ["buyer@example.com", "colleague@example.com", "manager@example.com"]
    approval = [m for m in mailoutbox if "New work: Approve" in m.subject]
    assert sorted(m.to[0] for m in approval) == ["colleague@example.com", "manager@example.com"]
    assert f"https://processes.example.com/inbox/{item['id']}/" in approval[0].body
    assert "https://processes.example.com/inbox/\n" in approval[0].body


def test_without_public_url_emails_link_to_the_host_that_was_asked(purchase, mailoutbox, browser_of, settings,
                                                                   django_capture_on_commit_callbacks):
    from tests.work.conftest import form_fields

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "inbox.example.org"]
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    client = browser_of(purchase.people["manager"])
    page = client.get(f"/inbox/{item['id']}/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/inbox/{item['id']}/", {**form_fields(page, "reject"), "note": "Wrong vendor.",
                                                         "decision": "rejected"}, HTTP_HOST="inbox.example.org")
    assert response.status_code == 302
    [sent_back] = [m for m in mailoutbox if "was sent back" in m.subject]
    assert "http://inbox.example.org/inbox/w_" in sent_back.body


def test_a_rejection_tells_the_assignee_the_work_was_sent_back(purchase, mailoutbox,
                                                               django_capture_on_commit_callbacks):
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    view = complete_request(buyer, purchase())
    with django_capture_on_commit_callbacks(execute=True):
        decide(manager, open_item(view), "rejected", note="Wrong vendor.")
    run_id = view["run"]["id"]
    assert recipients(run_id, "sent_back") == ["buyer@example.com"]
    assert [m.to for m in mailoutbox if "was sent back" in m.subject] == [["buyer@example.com"]]


def test_the_person_who_started_a_run_hears_how_it_ended(purchase, publish):
    from tests.runs.conftest import ToolCaller

    publish("""---
name: quick-check
description: A manager checks; a rejection ends the run.
steps:
  - id: check
    person: managers
    approve: Check it.
  - id: done
    finish: checked_and_filed
---
""")
    starter, manager = purchase.people["buyer"], purchase.people["manager"]
    ok = ToolCaller(starter).write("start_run", process="quick-check", inputs={})
    decide(manager, open_item(ok), "approved")
    bad = ToolCaller(starter).write("start_run", process="quick-check", inputs={})
    decide(manager, open_item(bad), "rejected", note="No.")
    ended = Notification.objects.get(run_id=int(ok["run"]["id"][2:]), kind="run_ended")
    assert ended.user == starter.user and "finished: checked and filed" in ended.text
    failed = Notification.objects.get(run_id=int(bad["run"]["id"][2:]), kind="run_failed")
    assert failed.user == starter.user and "ended: rejected" in failed.text
    # Ending a run oneself tells nobody: an operator who started and cancelled it hears nothing.
    ops = purchase.people["ops"]
    own = ToolCaller(ops).write("start_run", process="quick-check", inputs={})
    ToolCaller(ops).write("cancel", runId=own["run"]["id"], reason="Started by mistake.")
    assert not Notification.objects.filter(run_id=int(own["run"]["id"][2:]), kind__startswith="run_").exists()


# --- how each person wants them ---------------------------------------------------------------------


def test_email_off_keeps_the_notice_in_the_app_only(purchase, mailoutbox, django_capture_on_commit_callbacks):
    manager = purchase.people["manager"].user
    manager.email_notices = "off"
    manager.save()
    with django_capture_on_commit_callbacks(execute=True):
        view = complete_request(purchase.people["buyer"], purchase())
    assert "manager@example.com" in recipients(view["run"]["id"], "new_work")
    assert all(m.to != ["manager@example.com"] for m in mailoutbox)
    assert [m.to for m in mailoutbox if "New work: Approve" in m.subject] == [["colleague@example.com"]]


def test_a_digest_gathers_a_day_of_notices_into_one_email(purchase, mailoutbox, django_capture_on_commit_callbacks):
    import datetime as dt

    from django.utils import timezone

    from runs import notices

    manager = purchase.people["manager"].user
    manager.email_notices = "digest"
    manager.save()
    with django_capture_on_commit_callbacks(execute=True):
        first = complete_request(purchase.people["buyer"], purchase(item="Desk"))
        second = complete_request(purchase.people["buyer"], purchase(item="Chair"))
    assert all(m.to != ["manager@example.com"] for m in mailoutbox)  # nothing at once
    now = timezone.now()
    assert notices.send_digests(now=now) == 1
    [digest] = [m for m in mailoutbox if m.to == ["manager@example.com"]]
    assert digest.subject == "2 updates on your processes"
    for view in (first, second):
        assert f"/inbox/{open_item(view)['id']}/" in digest.body
    # Within the day nothing more goes, even with more owed; a day later the next digest does.
    complete_request(purchase.people["buyer"], purchase(item="Lamp"))
    assert notices.send_digests(now=now + dt.timedelta(hours=23)) == 0
    assert notices.send_digests(now=now + dt.timedelta(hours=24, seconds=1)) == 1
    assert notices.send_digests(now=now + dt.timedelta(days=3)) == 0  # nothing owed


def test_the_top_bar_counts_unread_notices(purchase, browser_of):
    complete_request(purchase.people["buyer"], purchase())
    client = browser_of(purchase.people["manager"])
    html = client.get("/runs/").content.decode()
    assert 'aria-label="Notifications: 1 unread"' in html and '<span class="count">1</span>' in html
    client.post("/inbox/notifications/read/")
    assert 'aria-label="Notifications: none unread"' in client.get("/runs/").content.decode()


def test_a_person_who_moves_organization_keeps_no_notices_of_the_one_they_left(purchase, other_org, browser_of):
    complete_request(purchase.people["buyer"], purchase())
    manager = purchase.people["manager"]
    assert Notification.objects.filter(user=manager.user).exists()
    membership = manager.user.membership
    membership.organization = other_org
    membership.save()
    assert not Notification.objects.filter(user=manager.user).exists()
    html = browser_of(manager).get("/inbox/").content.decode()
    assert "New work" not in html and 'aria-label="Notifications: none unread"' in html
