"""The operators' pages: the overview, a process's live map, and the runs needing attention."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs import figures
from runs.models import How, Passage, RunStep
from runs.tools import call_tool
from tests.runs.conftest import age, rid
from tests.work.conftest import complete_request, decide, open_item
from work.operations import span


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def svg_of(html: str) -> str:
    start = html.index('<svg class="process-map"')
    return html[start:html.index("</svg>", start) + 6]


def step_box(svg: str, step_id: str) -> str:
    start = svg.index(f'data-step="{step_id}"')
    return svg[start:svg.index("</a>", start)]


@pytest.fixture
def scripted(purchase, agent):
    """Four purchase runs: one sent back once and ordered, one overdue at approval, one failed, one cancelled."""
    buyer, manager, ops = purchase.people["buyer"], purchase.people["manager"], purchase.people["ops"]
    ordered = complete_request(buyer, purchase())
    ordered = decide(manager, open_item(ordered), "rejected", note="The quote is old.")
    ordered = complete_request(buyer, ordered)
    ordered = decide(manager, open_item(ordered), "approved")
    token = agent.write("claim", runId=ordered["run"]["id"], stepId="order")["token"]
    agent.fails("submit", "not_accepted", token=token, output={"orderId": 7}, summary="x", requestId=rid())
    agent.write("submit", token=token, output={"orderId": "PO-1"}, summary="Ordered.")
    late = complete_request(buyer, purchase(item="Desk"))
    age(late["run"]["id"], 2 * 86400)
    failed = purchase(item="Chair")
    decide(buyer, open_item(failed), "failed", note="The vendor went out of business.")
    cancelled = purchase(item="Lamp")
    call_tool(ops, "cancel", {"runId": cancelled["run"]["id"], "reason": "Bought elsewhere.", "requestId": rid()})
    return {"ordered": ordered, "late": late, "failed": failed, "cancelled": cancelled}


# --- the live map -------------------------------------------------------------------------------


def test_the_live_map_shows_the_runs_at_each_step_and_the_passages_of_each_route(purchase, scripted, browser_of):
    html = browser_of(purchase.people["ops"]).get("/operations/purchase/").content.decode()
    svg = svg_of(html)
    assert 'role="group"' in svg
    approve = step_box(svg, "approve")
    assert "state-overdue" in svg.split('data-step="approve"')[0].rsplit("<g", 1)[1]
    assert "1 with a person" in approve and "1 overdue" in approve
    request = step_box(svg, "request")
    assert "none here now" in request and "1 cancelled · 1 failed" in request  # where those two ended
    # request → approve three times (twice in the loop), approve → request once, back on rejection
    assert re.search(r'class="map-count next"[^>]*>3 passed<', svg)
    assert re.search(r'class="map-count reject"[^>]*>1 sent back<', svg)
    assert "1 ended here" in svg  # the ordered run reached done
    rows = text_of(html.split('id="steps-heading"')[1])
    assert "Request" in rows and "1 cancelled · 1 failed" in rows


def test_each_step_is_a_named_link_to_the_runs_at_it_now(purchase, scripted, browser_of):
    ops = browser_of(purchase.people["ops"])
    svg = svg_of(ops.get("/operations/purchase/?period=24h").content.decode())
    links = dict(re.findall(r'<a class="map-link" href="([^"]+)" aria-label="([^"]+)"', svg))
    by_step = {re.search(r"step=(\w+)", href).group(1): name for href, name in links.items()}
    assert set(by_step) == {"request", "approve", "order"}  # a finish is nowhere to be at
    assert by_step["approve"].startswith("Approve: 1 with a person; 1 overdue")
    href = next(href for href in links if "step=approve" in href).replace("&amp;", "&")
    html = ops.get("/operations/purchase/" + href.split("#")[0]).content.decode()
    listed = html.split('id="at-step"')[1]
    late = scripted["late"]["run"]["id"]
    assert f'href="/runs/{late}/"' in listed and "Overdue" in listed
    assert scripted["ordered"]["run"]["id"] not in listed


def test_a_step_with_nobody_at_it_lists_no_runs(purchase, scripted, browser_of):
    html = browser_of(purchase.people["ops"]).get("/operations/purchase/?step=order").content.decode()
    assert "No run is at this step now." in html


def test_times_are_the_median_and_90th_percentile_of_the_period(purchase, scripted, org, browser_of):
    version = RunStep.objects.get(run_id=int(scripted["late"]["run"]["id"][2:]), step_id="approve").version
    now = timezone.now()
    Passage.objects.filter(step_id="order").delete()
    for seconds in (10, 20, 30, 40, 100):
        Passage.objects.create(organization=org, run_id=1, process_name="purchase", version=version, step_id="order",
                               how=How.PASSED, went_to="done", by="a_1", at=now, seconds=seconds)
    # Outside the period: counted in neither the times nor the passages.
    Passage.objects.create(organization=org, run_id=1, process_name="purchase", version=version, step_id="order",
                           how=How.PASSED, went_to="done", by="a_1", at=now - dt.timedelta(days=2), seconds=5000)
    found = figures.map_figures(org.pk, version, _definition(version), now - dt.timedelta(days=1))
    order = found.steps["order"]
    assert (order.median, order.p90, order.timed) == (30, pytest.approx(76), 5)
    assert found.edges[("order", "done", "forward")] == 5
    html = browser_of(purchase.people["ops"]).get("/operations/purchase/?period=24h").content.decode()
    assert "median 30s · p90 1m" in step_box(svg_of(html), "order")
    week = browser_of(purchase.people["ops"]).get("/operations/purchase/?period=7d").content.decode()
    assert "6 passed" in svg_of(week)  # the older one counts in a week


def _definition(version):
    from processes.definition import definition_for

    return definition_for(version)


def test_percentile_cont_matches_postgresql():
    assert figures.percentile_cont([5.0], 0.9) == 5.0
    assert figures.percentile_cont([1.0, 2.0], 0.5) == 1.5
    assert figures.percentile_cont([10, 20, 30, 40, 100], 0.9) == pytest.approx(76)


@pytest.mark.parametrize(("seconds", "words"), [(4, "4s"), (59.4, "59s"), (60, "1m"), (3599, "1h"), (3660, "1h 1m"),
                                                 (10 * 3600 + 59, "10h"), (86400 + 3 * 3600, "1d 3h"),
                                                 (12 * 86400, "12d")])
def test_times_are_said_to_a_minute(seconds, words):
    assert span(seconds) == words


def test_the_map_reads_a_constant_number_of_queries(purchase, agent, browser_of, scripted):
    ops = browser_of(purchase.people["ops"])
    ops.get("/operations/purchase/?step=approve")  # sessions and caches warmed

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert ops.get("/operations/purchase/?step=approve").status_code == 200
        return len(captured)

    before = count()
    for _ in range(3):
        complete_request(purchase.people["buyer"], purchase())
    assert count() == before


def test_bad_choices_are_named_together(purchase, browser_of):
    response = browser_of(purchase.people["ops"]).get("/operations/purchase/?period=1y&version=9&step=nope")
    assert response.status_code == 400
    text = text_of(response.content.decode())
    assert "period: '1y' is not one of 24h, 7d, 30d" in text
    assert "version: '9' is not a published version; one of 1" in text
    assert "step: 'nope' is no step of version 1" in text


def test_an_unknown_process_is_not_found(purchase, browser_of):
    assert browser_of(purchase.people["ops"]).get("/operations/nothing/").status_code == 404


# --- the overview -------------------------------------------------------------------------------


def test_the_overview_counts_each_process_and_links_its_map_and_lists(purchase, scripted, browser_of):
    html = browser_of(purchase.people["ops"]).get("/operations/").content.decode()
    row = text_of(html.split("<tbody>")[1].split("</tr>")[0])
    # at work: the late run; past due: its approval; nobody on it, escalated: none; failed and cancelled apart
    assert re.search(r"Purchase purchase · v1 Live map 1 1 past due 0 0 1 failed 1 cancelled", row), row
    assert 'href="/operations/purchase/?period=7d"' in html
    assert 'href="/runs/?attention=failed&amp;process=purchase&amp;period=7d"' in html
    assert 'href="/runs/?attention=overdue&amp;process=purchase"' in html
    agents = text_of(html.split('id="agents-heading"')[1])
    assert "screener (agent) 1 0 Runs of screener (agent)" in agents


def test_the_nav_and_the_catalogue_lead_operators_here(purchase, browser_of):
    ops = browser_of(purchase.people["ops"]).get("/processes/").content.decode()
    buyer = browser_of(purchase.people["buyer"]).get("/processes/").content.decode()
    assert 'href="/operations/"' in ops and 'href="/operations/purchase/"' in ops
    assert 'href="/operations/"' not in buyer and "/operations/purchase/" not in buyer


# --- the runs needing attention -------------------------------------------------------------------


def listed_runs(html: str) -> list[str]:
    return re.findall(r'<td data-label="Run"><a href="/runs/(r_\d+)/">', html)


def test_failed_and_cancelled_runs_are_listed_apart_with_their_notes(purchase, scripted, browser_of):
    ops = browser_of(purchase.people["ops"])
    html = ops.get("/runs/?attention=failed").content.decode()
    assert listed_runs(html) == [scripted["failed"]["run"]["id"]]
    text = text_of(html)
    assert "Failed at Request" in text and "The vendor went out of business." in text
    assert "Failed in the last 7 days" in text and "Bought elsewhere." not in text
    html = ops.get("/runs/?attention=cancelled").content.decode()
    assert listed_runs(html) == [scripted["cancelled"]["run"]["id"]]
    text = text_of(html)
    assert "Cancelled at Request" in text and "Bought elsewhere." in text and "Cancelled in the last 7 days" in text
    overview = text_of(ops.get("/operations/").content.decode())
    assert "1 failed in the last 7 days" in overview and "1 cancelled in the last 7 days" in overview


def test_overdue_runs_are_listed(purchase, scripted, browser_of):
    html = browser_of(purchase.people["ops"]).get("/runs/?attention=overdue").content.decode()
    assert listed_runs(html) == [scripted["late"]["run"]["id"]]
    assert "Approve was due" in text_of(html)


def test_agent_steps_nobody_claimed_for_too_long_are_listed(purchase, scripted, browser_of, settings):
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    waiting = decide(manager, open_item(complete_request(buyer, purchase())), "approved")
    fresh = decide(manager, open_item(complete_request(buyer, purchase())), "approved")
    RunStep.objects.filter(run_id=int(waiting["run"]["id"][2:]), step_id="order").update(
        ready_since=timezone.now() - dt.timedelta(hours=settings.UNCLAIMED_AFTER_HOURS, minutes=1))
    html = browser_of(purchase.people["ops"]).get("/runs/?attention=unclaimed").content.decode()
    assert listed_runs(html) == [waiting["run"]["id"]]
    assert fresh["run"]["id"] not in html
    assert "Order ready for an agent" in text_of(html)


def test_an_agents_troubled_runs_are_listed(purchase, scripted, agent, browser_of):
    ref = agent.identity.ref
    html = browser_of(purchase.people["ops"]).get(f"/runs/?attention=agent&agent={ref}").content.decode()
    assert listed_runs(html) == [scripted["ordered"]["run"]["id"]]
    assert "1 submission refused at Order" in text_of(html)
    assert "Trouble for screener (agent) in the last 7 days" in text_of(html)


def test_the_search_box_stays_and_narrows_an_attention_list(purchase, scripted, browser_of):
    html = browser_of(purchase.people["ops"]).get("/runs/?attention=cancelled&q=Lamp").content.decode()
    assert 'id="runs-q"' in html
    assert listed_runs(html) == [scripted["cancelled"]["run"]["id"]]


def test_bad_attention_choices_are_named_together(purchase, browser_of):
    response = browser_of(purchase.people["ops"]).get("/runs/?attention=agent&agent=bob&period=2d")
    assert response.status_code == 400
    text = text_of(response.content.decode())
    assert "period: '2d' is not one of" in text and "agent: name the agent by its ref" in text
    response = browser_of(purchase.people["ops"]).get("/runs/?attention=lost")
    assert response.status_code == 400 and "attention: 'lost' is not one of" in text_of(response.content.decode())


# --- who sees what --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/operations/", "/operations/purchase/", "/runs/?attention=failed",
                                  "/runs/?attention=overdue", "/runs/?attention=agent&agent=a_1"])
def test_only_operators_see_these(purchase, browser_of, path):
    response = browser_of(purchase.people["manager"]).get(path)
    assert response.status_code == 403
    assert "Only the operators of your organization" in response.content.decode()


@pytest.mark.parametrize("path", ["/operations/", "/operations/purchase/"])
def test_nothing_is_posted_to_these_pages(purchase, browser_of, path):
    assert browser_of(purchase.people["ops"], enforce_csrf=True).post(path).status_code == 403  # no token
    assert browser_of(purchase.people["ops"]).post(path).status_code == 405


def test_another_organizations_operator_sees_none_of_these_numbers(purchase, scripted, other_org, make_person,
                                                                   publish, agent, browser_of):
    from tests.work.conftest import PURCHASE

    publish(PURCHASE, organization=other_org)
    outsider = browser_of(make_person("ops@other.example", operator=True, organization=other_org))
    overview = outsider.get("/operations/").content.decode()
    row = text_of(overview.split("<tbody>")[1].split("</tr>")[0])
    assert re.search(r"Live map 0 0 0 0", row), row
    assert "screener" not in overview
    html = outsider.get("/operations/purchase/").content.decode()
    assert "passed" not in svg_of(html) and "with a person" not in svg_of(html)
    for listed in ("failed", "overdue", f"agent&agent={agent.identity.ref}"):
        page = outsider.get(f"/runs/?attention={listed}").content.decode()
        assert listed_runs(page) == [], listed
    at_step = outsider.get("/operations/purchase/?step=approve").content.decode()
    assert scripted["late"]["run"]["id"] not in at_step


# --- whole days, counted once ---------------------------------------------------------------------


def test_whole_days_are_counted_once_and_read_with_the_rest(purchase, scripted, org):
    from runs.models import PassageDay

    version = RunStep.objects.get(run_id=int(scripted["late"]["run"]["id"][2:]), step_id="approve").version
    definition = _definition(version)
    now = timezone.now()
    for days_ago, seconds in ((3, 10), (3, 20), (4, 30), (5, 40), (5, 100), (40, 7)):
        Passage.objects.create(organization=org, run_id=1, process_name="purchase", version=version, step_id="order",
                               how=How.PASSED, went_to="done", by="a_1", at=now - dt.timedelta(days=days_ago),
                               seconds=seconds)
    week = figures.map_figures(org.pk, version, definition, now - dt.timedelta(days=7), now=now)
    assert PassageDay.objects.filter(version=version, step_id="order").exists()
    order = week.steps["order"]
    assert week.edges[("order", "done", "forward")] == 6  # five days ago and more, and today's from the script
    assert order.timed == 6
    # Whole days' times are kept to within 5%: the median and 90th percentile come out that close.
    exact = figures.percentile_cont(sorted([10, 20, 30, 40, 100, next(
        p.seconds for p in Passage.objects.filter(step_id="order", how=How.PASSED, at__gt=now - dt.timedelta(days=1)))]), 0.5)
    assert order.median == pytest.approx(exact, rel=0.05)
    counted = PassageDay.objects.count()
    again = figures.map_figures(org.pk, version, definition, now - dt.timedelta(days=7), now=now)
    assert PassageDay.objects.count() == counted  # counted once
    assert again.edges == week.edges and again.steps["order"].median == order.median
    assert figures.map_figures(org.pk, version, definition, now - dt.timedelta(days=30), now=now).edges[
        ("order", "done", "forward")] == 6  # the 40-day-old one is in no period


# --- escalations, and test runs left out ------------------------------------------------------------


def escalated_order(purchase, agent, *, mode: str = "live", note: str = "The vendor portal is down.") -> dict:
    buyer, manager = purchase.people["buyer"], purchase.people["manager"]
    view = decide(manager, open_item(complete_request(buyer, purchase(mode=mode))), "approved")
    token = agent.write("claim", runId=view["run"]["id"], stepId="order")["token"]
    return agent.write("escalate", token=token, note=note)


def test_escalations_have_their_own_count_card_and_list(purchase, scripted, agent, browser_of):
    # spec §3.4: an escalated agent step waits for the operators
    escalated = escalated_order(purchase, agent)
    ops = browser_of(purchase.people["ops"])
    html = ops.get("/operations/").content.decode()
    assert re.search(r'<a href="/runs/\?attention=escalated"><strong>1</strong> escalation waiting for operators</a>',
                     html)
    row = text_of(html.split("<tbody>")[1].split("</tr>")[0])
    assert "1 escalated" in row
    assert 'href="/runs/?attention=escalated&amp;process=purchase"' in html
    html = ops.get("/runs/?attention=escalated").content.decode()
    assert listed_runs(html) == [escalated["run"]["id"]]
    text = text_of(html)
    assert "Escalated to operators now" in text and "Order escalated to operators" in text
    assert "The vendor portal is down." in text
    assert '<option value="escalated" selected>' in html  # a filter of the runs list like the others
    # Nobody else has one: the other runs are in no escalation list.
    assert listed_runs(ops.get("/runs/?attention=escalated&process=other").content.decode()) == []


def test_test_runs_are_left_out_of_every_figure_and_list(purchase, agent, browser_of):
    ops = purchase.people["ops"]
    escalated_order(purchase, agent, mode="test")
    failed = purchase(mode="test", item="Chair")
    decide(purchase.people["buyer"], open_item(failed), "failed", note="Not needed.")
    cancelled = purchase(mode="test", item="Lamp")
    call_tool(ops, "cancel", {"runId": cancelled["run"]["id"], "reason": "A trial.", "requestId": rid()})
    late = complete_request(purchase.people["buyer"], purchase(mode="test", item="Desk"))
    age(late["run"]["id"], 2 * 86400)
    client = browser_of(ops)
    html = client.get("/operations/").content.decode()
    row = text_of(html.split("<tbody>")[1].split("</tr>")[0])
    assert re.search(r"Purchase purchase · v1 Live map 0 0 0 0 0 0", row), row
    for key in ("failed", "cancelled", "escalated", "overdue"):
        assert listed_runs(client.get(f"/runs/?attention={key}").content.decode()) == [], key
    svg = svg_of(client.get("/operations/purchase/").content.decode())
    assert "with a person" not in svg and "failed" not in svg and "escalated" not in svg
    # The runs list still shows them, each marked as a test.
    html = client.get("/runs/").content.decode()
    assert len(listed_runs(html)) == 4 and html.count('<span class="badge badge-test">Test</span>') == 4
