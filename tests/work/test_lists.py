"""The inbox and the runs list in the order a person chose, kept in the URL, and the runs list naming each
run's steps at work and who is on them (spec §3.4: who a work item is assigned to)."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs import taking
from runs.models import Run, RunStep, WorkItem
from tests.work.conftest import complete_request, decide, open_item
from work.views import inbox_pages, run_pages


def item_links(html: str) -> list[str]:
    return re.findall(r'<a class="title" href="/inbox/(w_\d+)/"', html)


def listed_runs(html: str) -> list[str]:
    return re.findall(r'<td data-label="Run"><a href="/runs/(r_\d+)/">', html)


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def pk(view: dict) -> int:
    return int(view["run"]["id"][2:])


ERRAND = """---
name: errand
description: One task.
steps:
  - id: run_it
    person: buyers
    task: Run the errand.
  - id: done
    finish: ok
---
"""


# --- the inbox ------------------------------------------------------------------------------------


def test_the_inbox_sorts_by_due_date_age_or_process(purchase, publish, agent, browser_of):
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    older, newer = (complete_request(buyer, purchase(item=item)) for item in ("Desk", "Chair"))
    old_item, new_item = open_item(older)["id"], open_item(newer)["id"]
    WorkItem.objects.filter(pk=int(old_item[2:])).update(created_at=timezone.now() - dt.timedelta(hours=3))
    # The older approval is due later than the newer one.
    RunStep.objects.filter(run_id=pk(older), step_id="approve").update(due_at=timezone.now() + dt.timedelta(days=5))
    client = browser_of(manager)
    assert item_links(client.get("/inbox/").content.decode()) == [old_item, new_item]
    html = client.get("/inbox/", {"sort": "due"}).content.decode()
    assert item_links(html) == [new_item, old_item]
    assert "2 open items, due soonest" in html and '<option value="due" selected>' in html
    assert item_links(client.get("/inbox/", {"sort": "age"}).content.decode()) == [old_item, new_item]

    # By process: the errand (a newer item) comes before the purchase request.
    publish(ERRAND)
    request = open_item(purchase(item="Lamp"))["id"]
    errand = open_item(agent.write("start_run", process="errand", inputs={}))["id"]
    buyer_client = browser_of(buyer)
    assert item_links(buyer_client.get("/inbox/").content.decode()) == [request, errand]
    assert item_links(buyer_client.get("/inbox/", {"sort": "process"}).content.decode()) == [errand, request]


def test_an_item_without_a_due_date_comes_after_those_with_one(purchase, publish, agent, browser_of):
    publish(ERRAND)
    errand = open_item(agent.write("start_run", process="errand", inputs={}))["id"]
    request = open_item(purchase())["id"]
    RunStep.objects.filter(step_id="request").update(due_at=timezone.now() + dt.timedelta(hours=2))
    html = browser_of(purchase.people["buyer"]).get("/inbox/", {"sort": "due"}).content.decode()
    assert item_links(html) == [request, errand]


def test_the_inbox_keeps_its_order_in_every_link_and_ignores_an_unknown_one(purchase, publish, agent, browser_of):
    publish(ERRAND)
    purchase()
    agent.write("start_run", process="errand", inputs={})
    client = browser_of(purchase.people["buyer"])
    html = unescape(client.get("/inbox/", {"sort": "process", "show": "groups"}).content.decode())
    # The filters of processes and of shows keep the order and each other.
    assert 'href="?show=groups&sort=process&process=errand"' in html or \
        'href="?show=groups&process=errand&sort=process"' in html
    assert 'href="/inbox/?show=taken&sort=process"' in html
    response = client.get("/inbox/", {"sort": "sideways"})
    assert response.status_code == 200 and "oldest first" in response.content.decode()


def test_the_inbox_pages_keep_the_order(purchase, browser_of, monkeypatch):
    monkeypatch.setattr(inbox_pages, "PAGE_SIZE", 1)
    purchase(), purchase()
    html = unescape(browser_of(purchase.people["buyer"]).get("/inbox/", {"sort": "due"}).content.decode())
    assert 'href="?sort=due&page=2"' in html


# --- the runs list --------------------------------------------------------------------------------


def test_the_runs_list_sorts_by_started_updated_or_due(purchase, browser_of):
    buyer = purchase.people["buyer"]
    first = complete_request(buyer, purchase(item="Desk"))  # at approve, due in a day
    second, third = purchase(item="Chair"), purchase(item="Lamp")  # at request, due nowhere
    ids = [view["run"]["id"] for view in (first, second, third)]
    Run.objects.filter(pk=pk(second)).update(updated_at=timezone.now() + dt.timedelta(minutes=5))
    client = browser_of(purchase.people["ops"])
    assert listed_runs(client.get("/runs/").content.decode()) == [ids[2], ids[1], ids[0]]
    html = client.get("/runs/", {"sort": "updated"}).content.decode()
    assert listed_runs(html)[0] == ids[1] and "Every run in your organization, updated, latest first." in text_of(html)
    html = client.get("/runs/", {"sort": "due"}).content.decode()
    assert listed_runs(html) == [ids[0], ids[2], ids[1]]  # the one due first, then the rest newest first
    assert '<option value="due" selected>' in html
    # An order this page does not offer is the default one, never an error.
    response = client.get("/runs/", {"sort": "'; DROP TABLE runs_run; --"})
    assert response.status_code == 200 and listed_runs(response.content.decode()) == [ids[2], ids[1], ids[0]]


def test_the_runs_list_keeps_its_order_and_filters_in_its_pages(purchase, browser_of, monkeypatch):
    monkeypatch.setattr(run_pages, "PAGE_SIZE", 2)
    views_of = [purchase(item=item) for item in ("Desk", "Chair", "Lamp")]
    client = browser_of(purchase.people["ops"])
    html = unescape(client.get("/runs/", {"sort": "updated", "state": "waiting"}).content.decode())
    assert 'href="?sort=updated&state=waiting&page=2"' in html
    html = client.get("/runs/", {"sort": "updated", "state": "waiting", "page": "2"}).content.decode()
    assert listed_runs(html) == [views_of[0]["run"]["id"]]


def test_the_runs_list_names_each_runs_steps_at_work_and_who_is_on_them(purchase, agent, browser_of):
    buyer, manager, colleague = (purchase.people[key] for key in ("buyer", "manager", "colleague"))
    at_request = purchase(item="Desk")
    taken = complete_request(buyer, purchase(item="Chair"))
    taking.take(colleague, WorkItem.objects.get(pk=int(open_item(taken)["id"][2:])), holder_seen=None)
    claimed = decide(manager, open_item(complete_request(buyer, purchase(item="Lamp"))), "approved")
    agent.write("claim", runId=claimed["run"]["id"], stepId="order")
    html = browser_of(purchase.people["ops"]).get("/runs/").content.decode()
    rows = {run_id: text_of(row) for run_id, row in
            re.findall(r'<a href="/runs/(r_\d+)/">(.*?)</tr>', html, flags=re.S)}
    assert "Request: buyers (group)" in rows[at_request["run"]["id"]]
    assert "Approve: managers (group), taken by colleague@example.com" in rows[taken["run"]["id"]]
    assert "Due in 23" in rows[taken["run"]["id"]]
    assert "Order: screener (agent), claimed" in rows[claimed["run"]["id"]]


def test_the_runs_list_costs_the_same_queries_for_more_runs(purchase, agent, browser_of):
    buyer = purchase.people["buyer"]
    client = browser_of(purchase.people["ops"])
    complete_request(buyer, purchase())

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/runs/", {"sort": "due"}).status_code == 200
        return len(captured)

    few = count()
    for _ in range(4):
        complete_request(buyer, purchase())
        purchase()
    assert count() == few


def test_test_runs_are_badged_where_runs_are_listed(purchase, browser_of):
    test_run, live_run = purchase(mode="test", item="Desk"), purchase(item="Desk")
    client = browser_of(purchase.people["ops"])
    for path, params in (("/runs/", {}), ("/runs/", {"q": "desk"}), ("/search/", {"q": "desk"})):
        html = client.get(path, params).content.decode()
        rows = dict(re.findall(r'<a href="/runs/(r_\d+)/">r_\d+</a>(.*?)</td>', html, flags=re.S))
        assert "Test" in rows[test_run["run"]["id"]], path
        assert "Test" not in rows[live_run["run"]["id"]], path


def test_by_due_date_the_runs_list_shows_the_runs_at_work(purchase, browser_of):
    at_work = purchase(item="Desk")
    ended = purchase(item="Pen")
    decide(purchase.people["buyer"], open_item(ended), "failed", note="Not needed.")
    client = browser_of(purchase.people["ops"])
    assert listed_runs(client.get("/runs/", {"sort": "due"}).content.decode()) == [at_work["run"]["id"]]
    html = client.get("/runs/", {"sort": "due", "state": "ended"}).content.decode()
    assert listed_runs(html) == [ended["run"]["id"]]
