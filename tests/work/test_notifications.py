"""Overdue notices: the assignee and the operators, once per attempt, never a real email for a test run.

spec §2.2 `due`, §3.3 (test runs), issue 4 §5.
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


def recipients(run_id: str) -> list[str]:
    return sorted(n.user.email for n in Notification.objects.filter(run_id=int(run_id[2:])).select_related("user"))


def test_overdue_reaches_the_group_and_the_operators_once(purchase, mailoutbox, django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    run_id = view["run"]["id"]
    age(run_id, 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    # the managers group (both members) and the operator; not the buyer, not the outsider
    assert recipients(run_id) == ["colleague@example.com", "manager@example.com", "ops@example.com"]
    assert sorted(m.to[0] for m in mailoutbox) == recipients(run_id)
    message = mailoutbox[0]
    assert "is overdue" in message.subject and f"/inbox/{open_item(view)['id']}/" in message.body
    # once per attempt: later sweeps and reads add nothing
    sweep(django_capture_on_commit_callbacks)
    age(run_id, 86400)
    sweep(django_capture_on_commit_callbacks)
    assert len(recipients(run_id)) == 3 and len(mailoutbox) == 3


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
    assert len(recipients(run_id)) == 6 and len(mailoutbox) == 6


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
    assert [m.to for m in mailoutbox] == [["ops@example.com"]]


def test_an_escalated_agent_step_notifies_only_the_operators(publish, agent, make_person, mailoutbox,
                                                             django_capture_on_commit_callbacks):
    publish(ESCALATING)
    make_person("ops@example.com", operator=True)
    make_person("plain@example.com")
    view = agent.write("start_run", process="nightly", inputs={})
    token = agent.write("claim", runId=view["run"]["id"], stepId="crunch")["token"]
    agent.write("escalate", token=token, note="Stuck.")
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
    assert notices.count() == 3 and all(n.text.startswith("[test run] ") and not n.email_pending for n in notices)
    html = browser_of(purchase.people["manager"]).get("/inbox/").content.decode()
    assert "[test run] Step &#x27;approve&#x27;" in html


def test_reading_the_inbox_applies_the_deadline_without_a_sweep(purchase, browser_of, mailoutbox,
                                                                django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    with django_capture_on_commit_callbacks(execute=True):
        html = browser_of(purchase.people["manager"]).get("/inbox/").content.decode()
    assert "badge-overdue" in html and len(mailoutbox) == 3


@pytest.mark.parametrize("read", [True, False])
def test_marking_one_notice_read(purchase, browser_of, read, django_capture_on_commit_callbacks):
    view = complete_request(purchase.people["buyer"], purchase())
    age(view["run"]["id"], 2 * 86400)
    sweep(django_capture_on_commit_callbacks)
    manager = purchase.people["manager"]
    mine = Notification.objects.get(user=manager.user)
    theirs = Notification.objects.get(user=purchase.people["ops"].user)
    target = mine if read else theirs
    browser_of(manager).post("/inbox/notifications/read/", {"notice": target.pk})
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.read_at is not None) is read
    assert theirs.read_at is None  # nobody marks another person's notices
