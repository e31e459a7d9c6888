"""A person's settings: their name, the time zone every page shows moments in, and how notices are emailed."""

import re

from tests.work.conftest import complete_request


def test_settings_save_the_zone_and_the_email_choice(purchase, browser_of):
    manager = purchase.people["manager"]
    client = browser_of(manager)
    page = client.get("/accounts/settings/").content.decode()
    assert 'value="Europe/Berlin"' in page and 'value="digest"' in page
    response = client.post("/accounts/settings/", {"first_name": "Mia", "last_name": "Berg",
                                                   "time_zone": "Europe/Berlin", "email_notices": "digest"})
    assert response.status_code == 302
    manager.user.refresh_from_db()
    assert (manager.user.time_zone, manager.user.email_notices, manager.user.get_full_name()) == (
        "Europe/Berlin", "digest", "Mia Berg")


def test_bad_settings_name_every_problem_and_change_nothing(purchase, browser_of):
    manager = purchase.people["manager"]
    response = browser_of(manager).post("/accounts/settings/", {"time_zone": "Mars/Olympus",
                                                                "email_notices": "hourly"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Time zone: Select a valid choice" in html and "Email notices: Select a valid choice" in html
    manager.user.refresh_from_db()
    assert (manager.user.time_zone, manager.user.email_notices) == ("UTC", "immediately")


def test_pages_show_moments_in_the_persons_zone(purchase, browser_of):
    view = complete_request(purchase.people["buyer"], purchase())
    manager = purchase.people["manager"]
    client = browser_of(manager)
    run_page = f"/runs/{view['run']['id']}/"

    def shown() -> tuple[str, str]:
        html = client.get(run_page).content.decode()
        return re.search(r'<time datetime="([^"]+)">([^<]+)</time>', html).groups()

    stamp, utc_text = shown()
    assert utc_text.endswith(" UTC")
    manager.user.time_zone = "Asia/Kolkata"  # UTC+05:30 all year
    manager.user.save()
    same_stamp, local_text = shown()
    assert same_stamp == stamp  # the machine-readable moment stays UTC
    assert local_text.endswith(" IST") and local_text != utc_text
    hour, minute = (int(x) for x in re.search(r", (\d\d):(\d\d) ", local_text).groups())
    utc_hour, utc_minute = (int(x) for x in re.search(r", (\d\d):(\d\d) ", utc_text).groups())
    assert (hour * 60 + minute - utc_hour * 60 - utc_minute) % (24 * 60) == 330
