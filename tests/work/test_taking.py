"""Who is on it: a person takes a group's item, colleagues see it, anyone may still decide once they confirm.

The spec lets any member of an item's assignment decide, the first decision winning (spec §3.4); taking
an item only tells colleagues, and every take is on the run's timeline.
"""

import re

from runs.models import ItemTake, WorkItem
from tests.work.conftest import complete_request, form_fields, open_item


def manager_item(purchase) -> dict:
    """A run waiting on the managers' approval; return its open item."""
    return open_item(complete_request(purchase.people["buyer"], purchase()))


def take(client, item_id: str, holder: str = "", back: str = ""):
    return client.post(f"/inbox/{item_id}/take/", {"holder": holder, "back": back})


def test_a_taken_item_shows_who_is_on_it_to_colleagues(purchase, browser_of):
    item = manager_item(purchase)
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    response = take(browser_of(manager), item["id"])
    assert response.status_code == 302 and response["Location"] == f"/inbox/{item['id']}/"
    row = WorkItem.objects.get(pk=int(item["id"][2:]))
    assert row.taken_by_id == manager.user.pk and row.taken_at is not None
    # The colleague sees it in the inbox and on the item page, with a button to take it over.
    inbox = browser_of(colleague).get("/inbox/").content.decode()
    assert "manager@example.com is working on this since" in inbox
    page = browser_of(colleague).get(f"/inbox/{item['id']}/").content.decode()
    assert "manager@example.com is working on this</strong>" in page and "Take it over" in page
    # The taker sees their own take, and can let it go.
    mine = browser_of(manager).get(f"/inbox/{item['id']}/").content.decode()
    assert "You are working on this" in mine and "Let it go" in mine


def test_deciding_an_item_a_colleague_took_needs_a_confirmation(purchase, browser_of):
    item = manager_item(purchase)
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    client = browser_of(colleague)
    page = client.get(f"/inbox/{item['id']}/").content.decode()  # read before the manager took it
    fields = form_fields(page, "approve")
    take(browser_of(manager), item["id"])
    refused = client.post(f"/inbox/{item['id']}/", {**fields, "decision": "approved"})
    assert refused.status_code == 409
    html = refused.content.decode()
    assert "manager@example.com is working on this, so nothing was sent" in html
    assert WorkItem.objects.get(pk=int(item["id"][2:])).state == "open"
    # The page now offers the confirmation, naming the holder; with it ticked the decision goes through.
    assert f'name="confirm_taken" value="{manager.user.pk}" required' in html
    decided = client.post(f"/inbox/{item['id']}/",
                          {**form_fields(html, "approve"), "decision": "approved", "confirm_taken": manager.user.pk})
    assert decided.status_code == 302
    row = WorkItem.objects.get(pk=int(item["id"][2:]))
    assert row.state == "decided" and row.decided_by == colleague.ref


def test_a_confirmation_for_an_earlier_holder_does_not_carry_over(purchase, browser_of):
    item = manager_item(purchase)
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    take(browser_of(manager), item["id"])
    client = browser_of(colleague)
    html = client.get(f"/inbox/{item['id']}/").content.decode()
    fields = {**form_fields(html, "approve"), "decision": "approved", "confirm_taken": manager.user.pk}
    # The colleague takes it over in another tab, then the manager takes it back: the box ticked for the
    # manager's first take still names the manager, so it holds; one naming the colleague would not.
    take(client, item["id"], holder=str(manager.user.pk))
    take(browser_of(manager), item["id"], holder=str(colleague.user.pk))
    stale = client.post(f"/inbox/{item['id']}/", {**fields, "confirm_taken": colleague.user.pk})
    assert stale.status_code == 409
    assert client.post(f"/inbox/{item['id']}/", fields).status_code == 302


def test_taking_over_needs_to_have_seen_the_holder(purchase, browser_of):
    item = manager_item(purchase)
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    take(browser_of(manager), item["id"])
    # The colleague's page said nobody was on it: their take is refused, and says why.
    response = browser_of(colleague).post(f"/inbox/{item['id']}/take/", {"holder": ""}, follow=True)
    assert "Someone else took this item a moment ago" in response.content.decode()
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id == manager.user.pk
    # Having seen the manager hold it, they take it over.
    take(browser_of(colleague), item["id"], holder=str(manager.user.pk))
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id == colleague.user.pk
    first, second = ItemTake.objects.order_by("pk")
    assert (first.user_id, first.taken_over_by_id) == (manager.user.pk, colleague.user.pk)
    assert first.released_at == second.taken_at and second.released_at is None


def test_only_the_assignment_may_take_and_a_personal_item_has_nothing_to_take(purchase, browser_of):
    item = manager_item(purchase)
    assert browser_of(purchase.people["buyer"]).post(f"/inbox/{item['id']}/take/").status_code == 403
    assert browser_of(purchase.people["outsider"]).post(f"/inbox/{item['id']}/take/").status_code == 403
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id is None
    assert browser_of(purchase.people["manager"]).get(f"/inbox/{item['id']}/take/").status_code == 405


def test_letting_go_clears_the_take_and_the_timeline_keeps_it(purchase, browser_of):
    item = manager_item(purchase)
    manager, colleague = purchase.people["manager"], purchase.people["colleague"]
    client = browser_of(manager)
    take(client, item["id"])
    assert client.post(f"/inbox/{item['id']}/release/", {"back": "inbox"})["Location"] == "/inbox/"
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id is None
    # Letting go of an item someone else holds changes nothing.
    take(browser_of(colleague), item["id"])
    client.post(f"/inbox/{item['id']}/release/")
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id == colleague.user.pk
    run_id = WorkItem.objects.get(pk=int(item["id"][2:])).run.public_id
    timeline = browser_of(manager).get(f"/runs/{run_id}/").content.decode().split('id="timeline-heading"')[1]
    lines = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", line)).strip()
             for line in re.findall(r'<div class="what">(.*?)</div>', timeline, re.S)]
    assert "manager@example.com took Approve" in lines
    assert "manager@example.com let go of Approve" in lines
    assert "colleague@example.com took Approve" in lines


def test_the_inbox_filters_mine_my_groups_taken_by_me_and_nobody_on_it(purchase, publish, make_person, agent,
                                                                       browser_of):
    publish("""---
name: chore
description: One person's chore.
inputs:
  owner: person
steps:
  - id: sweep
    person: inputs.owner
    task: Sweep the floor.
  - id: done
    finish: ok
---
""")
    manager = purchase.people["manager"]
    taken, free = manager_item(purchase), manager_item(purchase)
    personal = open_item(agent.write("start_run", process="chore", inputs={"owner": "manager@example.com"}))
    client = browser_of(manager)
    take(client, taken["id"])

    def listed(show: str) -> set[str]:
        return set(re.findall(r'<a class="title" href="/inbox/(w_\d+)/"', client.get(f"/inbox/?show={show}").content.decode()))

    assert listed("") == {taken["id"], free["id"], personal["id"]}
    assert listed("mine") == {personal["id"]}
    assert listed("groups") == {taken["id"], free["id"]}
    assert listed("taken") == {taken["id"]}
    assert listed("unassigned") == {free["id"]}
    assert listed("nonsense") == listed("")
    # A person in no group sees nothing under their groups' filters.
    loner = browser_of(make_person("loner@example.com"))
    assert "Nothing here" in loner.get("/inbox/?show=groups").content.decode()
