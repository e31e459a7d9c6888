"""Numbers a page is sent are ASCII digits within the database's integer range, or a 400 naming them."""

import pytest

from base.params import BIGINT_MAX, BadParameter, optional_integer, parse_integer, prefixed_id, read_integer
from runs.models import Notification, WorkItem
from tests.work.conftest import complete_request, open_item
from tests.work.test_search import CLAIM, found_runs

TOO_MANY_DIGITS = "9" * 5000  # int() refuses over 4300 digits with a ValueError (Python 3.11)


@pytest.mark.parametrize("text", ["١٢٣", "²", "٣", "１２", "𝟗", "-1", "+1", " 1", "1 ", "1_000", "1e3", "0x1", "",
                                  TOO_MANY_DIGITS, str(BIGINT_MAX + 1), "1\x00", "\u202e1"])
def test_anything_but_ascii_digits_within_bigint_is_no_whole_number(text):
    assert read_integer(text) is None
    with pytest.raises(BadParameter) as refused:
        parse_integer(text, "page")
    [problem] = refused.value.problems
    assert problem.startswith("page: ") and "digits 0-9" in problem
    assert "\x00" not in problem and "\u202e" not in problem  # quoted printable, never as it came


def test_ascii_digits_within_range_are_read():
    assert read_integer("0") == 0
    assert read_integer("007") == 7
    assert read_integer(str(BIGINT_MAX)) == BIGINT_MAX
    assert read_integer("0", minimum=1) is None
    assert read_integer("12", maximum=11) is None
    assert optional_integer({"page": ""}, "page") is None
    assert optional_integer({}, "page") is None
    assert optional_integer({"page": "3"}, "page", minimum=1) == 3
    assert prefixed_id("r_12", "r") == 12
    assert prefixed_id("r_²", "r") is None
    assert prefixed_id("w_12", "r") is None
    assert prefixed_id("r_" + "9" * 19, "r") is None


@pytest.mark.parametrize("value", ["²", "١٢٣", TOO_MANY_DIGITS, str(BIGINT_MAX + 1), "0"])
def test_the_inbox_page_number_is_a_400_naming_it(purchase, browser_of, value):
    response = browser_of(purchase.people["manager"]).get("/inbox/", {"page": value})
    assert response.status_code == 400
    assert "page:" in response.content.decode()


def test_a_notice_number_that_is_not_one_is_a_400_and_marks_nothing_read(purchase, browser_of):
    manager = purchase.people["manager"]
    complete_request(purchase.people["buyer"], purchase())  # tells the managers of the new approval
    unread = Notification.objects.filter(user=manager.user, read_at__isnull=True).count()
    assert unread
    for value in ["²", TOO_MANY_DIGITS, str(BIGINT_MAX + 1)]:
        response = browser_of(manager).post("/inbox/notifications/read/", {"notice": value})
        assert response.status_code == 400
        assert "notice:" in response.content.decode()
    assert Notification.objects.filter(user=manager.user, read_at__isnull=True).count() == unread
    assert browser_of(manager).post("/inbox/notifications/read/", {}).status_code == 302  # no number: all of them
    assert not Notification.objects.filter(user=manager.user, read_at__isnull=True).exists()


@pytest.mark.parametrize("value", ["²", TOO_MANY_DIGITS, str(BIGINT_MAX + 1)])
def test_a_holder_that_is_not_a_number_is_a_400_and_takes_nothing(purchase, browser_of, value):
    item = open_item(complete_request(purchase.people["buyer"], purchase()))
    response = browser_of(purchase.people["manager"]).post(f"/inbox/{item['id']}/take/", {"holder": value})
    assert response.status_code == 400
    assert "holder:" in response.content.decode()
    assert WorkItem.objects.get(pk=int(item["id"][2:])).taken_by_id is None


@pytest.mark.parametrize("value", ["²", "١", TOO_MANY_DIGITS, str(BIGINT_MAX + 1)])
def test_a_live_map_version_that_is_not_a_number_is_a_400_naming_the_versions(purchase, browser_of, value):
    response = browser_of(purchase.people["ops"]).get("/operations/purchase/", {"version": value})
    assert response.status_code == 400
    assert "is not a published version; one of 1" in response.content.decode()


@pytest.mark.parametrize("value", ["²", "r_١٢٣", "١٢٣", TOO_MANY_DIGITS[:200], "12.5"])
def test_other_scripts_digits_are_searched_for_as_text(purchase, publish, agent, browser_of, value):
    publish(CLAIM)
    agent.write("start_run", process="expense-claim", inputs={"claim_id": "C-1", "amount": 12.5, "details": {}})
    agent.write("start_run", process="expense-claim", inputs={"claim_id": "١٢٣", "amount": 123, "details": {}})
    client = browser_of(purchase.people["manager"])
    for path in ("/search/", "/runs/"):
        assert client.get(path, {"q": value}).status_code == 200
    # The text ١٢٣ finds the run holding that text, not the one holding the number 123.
    expected = {"١٢٣": 1, "12.5": 1}.get(value, 0)
    assert len(found_runs(client, value)) == expected


def test_a_runs_page_number_in_another_script_is_a_400_naming_it(purchase, browser_of):
    response = browser_of(purchase.people["ops"]).get("/runs/", {"page": "²"})
    assert response.status_code == 400
    assert "page:" in response.content.decode()


def test_the_agent_to_disconnect_is_a_number_or_a_400(purchase, browser_of):
    response = browser_of(purchase.people["ops"]).post("/accounts/agents/", {"agent": "²"})
    assert response.status_code == 400
    assert "agent:" in response.content.decode()


def test_a_number_field_reads_numbers_in_ascii_only():
    from work.cells import parse_number

    assert parse_number(" 1250.50 ") == 1250.5
    assert parse_number("-12") == -12
    assert parse_number("9" * 300) == int("9" * 300)  # exactly, as JSON carries it
    for text in ("١٢", "²", "１２", "1_000", TOO_MANY_DIGITS, "1e400", "nan", "inf"):
        assert parse_number(text) is None, text
