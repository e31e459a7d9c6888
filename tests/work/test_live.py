"""Pages stay current without a reload: GET /live/ answers 204 while nothing a person's page shows changed,
and 200 with a new stamp once something did (new work, a take, a hand-over, a comment, a decision). The
stamps live in the shared cache (settings.LIVE_CACHE); without it the pages poll slowly instead.
"""

import re

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs import live
from tests.work.conftest import complete_request, decide, open_item


def page_stamp(client, path: str) -> tuple[str, str]:
    """The poll address and stamp a page was rendered with (its live script's data- attributes)."""
    html = client.get(path).content.decode()
    tag = re.search(r'<script src="[^"]*js/live\.js" data-poll="([^"]*)" data-since="([^"]*)"', html)
    assert tag, "the page has no live script"
    return tag[1].replace("&amp;", "&"), tag[2]


def poll(client, url: str, since: str):
    return client.get(url + ("&" if "?" in url else "?") + f"since={since}")


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """committed(act) -> act's result, with what it left for after its commit (the stamps' renewal) done."""

    def run(act):
        with django_capture_on_commit_callbacks(execute=True):
            return act()

    return run


def test_nothing_changed_is_a_204_and_new_work_for_my_group_is_news(purchase, browser_of, committed):
    manager = browser_of(purchase.people["manager"])
    url, since = page_stamp(manager, "/inbox/")
    assert url == "/live/"
    assert poll(manager, url, since).status_code == 204
    committed(lambda: complete_request(purchase.people["buyer"], purchase()))  # new work for the managers
    news = poll(manager, url, since)
    assert news.status_code == 200 and news["Cache-Control"].startswith("max-age=0")
    assert news.json()["stamp"] != since and news.json()["every"] == settings.LIVE_POLL_SECONDS
    assert poll(manager, url, news.json()["stamp"]).status_code == 204


def test_a_take_a_comment_a_handover_and_a_decision_each_reach_the_open_item_page(purchase, browser_of, committed):
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    watcher = browser_of(colleague)
    url, since = page_stamp(watcher, f"/inbox/{item['id']}/")
    assert url == f"/live/?item={item['id']}"
    acting = browser_of(manager)
    for act in (lambda: acting.post(f"/inbox/{item['id']}/take/", {"holder": ""}),
                lambda: acting.post(f"/inbox/{item['id']}/comment/", {"body": "On it."}),
                lambda: acting.post(f"/inbox/{item['id']}/assign/", {"person": "colleague@example.com"}),
                lambda: decide(manager, item, "approved")):
        assert poll(watcher, url, since).status_code == 204
        committed(act)
        news = poll(watcher, url, since)
        assert news.status_code == 200
        since = news.json()["stamp"]
    page = watcher.get(f"/inbox/{item['id']}/").content.decode()
    assert 'data-live-part="item-state"' in page and "This item was decided by manager@example.com" in page


def test_another_organizations_changes_are_no_news(purchase, browser_of, make_person, other_org, committed):
    stranger = make_person("stranger@example.com", groups=["managers"], organization=other_org)
    client = browser_of(stranger)
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    url, since = page_stamp(client, "/inbox/")
    # Watching an item of another organization by its id watches a stamp nobody there touches.
    assert poll(client, f"/live/?item={item['id']}", "x").status_code == 200  # its first look is news
    watched = poll(client, f"/live/?item={item['id']}", "x").json()["stamp"]
    committed(lambda: decide(purchase.people["manager"], item, "approved"))
    assert poll(client, f"/live/?item={item['id']}", watched).status_code == 204
    assert poll(client, url, since).status_code == 204


def test_a_poll_with_nothing_new_reads_no_table_of_its_own(purchase, browser_of):
    manager = browser_of(purchase.people["manager"])
    url, since = page_stamp(manager, "/inbox/")
    poll(manager, url, since)  # the person's groups are now remembered
    with CaptureQueriesContext(connection) as queries:
        assert poll(manager, url, since).status_code == 204
    tables = {table for q in queries for table in re.findall(r'FROM "(\w+)"', q["sql"])}
    assert tables <= {"django_session", "accounts_user"}, tables


def test_the_poll_refuses_strangers_and_wants_a_get(client, purchase, browser_of):
    assert client.get("/live/").status_code == 403
    assert browser_of(purchase.people["manager"]).post("/live/").status_code == 405


def test_without_the_cache_pages_are_told_to_poll_slowly(purchase, browser_of, monkeypatch, settings):
    manager = browser_of(purchase.people["manager"])
    url, since = page_stamp(manager, "/inbox/")
    monkeypatch.setattr(live, "_resting_until", 0.0)  # and back to it after the test
    tried = []

    class Unreachable:
        def __getattr__(self, name):
            tried.append(name)
            raise ConnectionError("cache down")

    monkeypatch.setattr(live, "caches", {settings.LIVE_CACHE: Unreachable()})
    answer = poll(manager, url, since)
    assert answer.status_code == 200 and answer.json() == {"stamp": "", "every": 30}
    assert tried == ["get_many"]
    # Writes still succeed, and for a while nobody waits on the cache again: not the write, not the poll.
    complete_request(purchase.people["buyer"], purchase())
    assert "Notifications: 1 unread" in manager.get("/inbox/").content.decode()
    assert poll(manager, url, since).json() == {"stamp": "", "every": 30}
    assert tried == ["get_many"]


def test_the_pages_mark_their_live_parts_and_carry_no_inline_script(purchase, browser_of):
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    manager = browser_of(purchase.people["manager"])
    inbox = manager.get("/inbox/").content.decode()
    for part in ("bell", "inbox-mine", "notices"):
        assert f'data-live-part="{part}"' in inbox
    page = manager.get(f"/inbox/{item['id']}/").content.decode()
    for part in ("bell", "item-state", "item-taken", "comments", "item-handing"):
        assert f'data-live-part="{part}"' in page
    for html in (inbox, page):
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
        assert not re.search(r"\son[a-z]+=", html), "an inline event handler"


def test_an_agents_claim_and_submission_reach_the_open_run_page_without_a_cache_write(
        purchase, browser_of, agent, committed):
    # A run page's stamp holds the run's revision, which every save moves: an agent's writes, the
    # commonest, reach it without renewing a stamp in the shared cache (runs/live.py).
    from django.core.cache import caches

    from runs.models import Run, public_pk

    manager = purchase.people["manager"]
    view = complete_request(purchase.people["buyer"], purchase())
    run_id = view["run"]["id"]
    committed(lambda: decide(manager, open_item(view), "approved"))
    watcher = browser_of(manager)
    url, since = page_stamp(watcher, f"/runs/{run_id}/")
    assert url == f"/live/?run={run_id}"
    assert poll(watcher, url, since).status_code == 204
    run = Run.objects.get(pk=public_pk(run_id, "r"))
    cache, key = caches[settings.LIVE_CACHE], live.run(run.organization_id, run.pk)
    before = cache.get(key)
    claimed = committed(lambda: agent.write("claim", runId=run_id, stepId="order"))
    news = poll(watcher, url, since)
    assert news.status_code == 200
    since = news.json()["stamp"]
    assert poll(watcher, url, since).status_code == 204
    committed(lambda: agent.write("submit", token=claimed["token"], output={"orderId": "PO-1"}, summary="Ordered."))
    news = poll(watcher, url, since)
    assert news.status_code == 200 and cache.get(key) == before
    page = watcher.get(f"/runs/{run_id}/").content.decode()
    assert "ordered" in page
    # A comment does not save the run: it renews the run's stamp in the cache, and reaches the page too.
    since = news.json()["stamp"]
    committed(lambda: watcher.post(f"/runs/{run_id}/comment/", {"body": "Thanks."}))
    assert poll(watcher, url, since).status_code == 200 and cache.get(key) != before


def test_a_run_pages_poll_reads_the_run_by_its_key_and_nothing_else_of_its_own(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    watcher = browser_of(purchase.people["manager"])
    url, since = page_stamp(watcher, f"/runs/{view['run']['id']}/")
    poll(watcher, url, since)  # the person's groups are now remembered
    with CaptureQueriesContext(connection) as queries:
        assert poll(watcher, url, since).status_code == 204
    tables = [table for q in queries for table in re.findall(r'FROM "(\w+)"', q["sql"])]
    assert set(tables) <= {"django_session", "accounts_user", "runs_run"} and tables.count("runs_run") == 1, tables
