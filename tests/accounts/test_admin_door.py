"""The admin signs people in through the same allauth sign-in as the pages: second factor, lockout, limits.

The door is tested on a node of three gunicorn workers, on Redis and on the database's cache table, so
that nothing a single process remembers can pass these tests.
"""

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.utils import encrypt

from tests.accounts.workers import (
    CACHE_BACKENDS,
    PASSWORD,
    Browser,
    at_once,
    fail_until_locked_out,
    new_totp_secret,
    node_with_workers,
    refused_everywhere,
    totp_code,
)


@pytest.fixture(scope="module", params=CACHE_BACKENDS)
def node(request, tmp_path_factory):
    with node_with_workers(tmp_path_factory.mktemp("admin-door"), request.param, "admin_door") as started:
        yield started


def test_the_admin_door_asks_for_the_second_factor(node):
    email = "staff-totp@example.com"
    secret = new_totp_secret()
    node.add_person(email, staff=True, totp_secret=secret)
    browser = Browser(node.base)

    # The admin's own form would sign a staff person in with the password alone: it sends to the sign-in.
    answer = browser.post("/admin/login/?next=/admin/", {"username": email, "password": PASSWORD})
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    assert browser.get("/admin/").headers["Location"].startswith("/admin/login/")

    # The sign-in asks for the code after the password; nothing of the admin opens before it.
    answer = browser.post("/accounts/login/", {"login": email, "password": PASSWORD, "next": "/admin/"})
    assert answer.status_code == 302 and answer.headers["Location"] == "/accounts/2fa/authenticate/"
    assert browser.get("/admin/").status_code == 302
    answer = browser.post("/accounts/2fa/authenticate/", {"code": totp_code(secret)})
    assert answer.status_code == 302 and answer.headers["Location"] == "/admin/"
    assert browser.get("/admin/").status_code == 200


def test_the_admin_door_locks_out_after_failed_passwords(node):
    email = "staff-locked@example.com"
    node.add_person(email, staff=True)
    browser = Browser(node.base)

    # Forty wrong passwords at the admin's login, then the right one: that door signs nobody in.
    at_once(40, lambda i: browser.post_apart("/admin/login/?next=/admin/", {"username": email, "password": f"no-{i}"}))
    answer = browser.post("/admin/login/?next=/admin/", {"username": email, "password": PASSWORD})
    assert answer.status_code == 302 and answer.headers["Location"].startswith("/accounts/login/")
    assert browser.get("/admin/").status_code == 302

    # The sign-in it leads to: five failures, spread over the workers, lock the address, and then the
    # right password is refused on every one of them.
    assert fail_until_locked_out(browser, email) <= 5
    assert refused_everywhere(browser, email) == []
    assert browser.get("/admin/").status_code == 302


# --- in this process ---


def test_the_admin_login_page_sends_to_the_sign_in(client):
    answer = client.get("/admin/login/?next=/admin/processes/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/?next=%2Fadmin%2Fprocesses%2F"


@pytest.mark.django_db
def test_a_signed_in_person_who_is_not_staff_is_refused_at_the_admin(client, make_user):
    client.force_login(make_user("mira@example.com"))
    assert client.get("/admin/login/").status_code == 403
    assert client.get("/admin/", follow=True).status_code == 403


@pytest.fixture
def staff(make_user):
    return make_user("staff@example.com", is_staff=True, is_superuser=True)


def add_authenticator(user) -> None:
    Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP, data={"secret": encrypt(new_totp_secret())})


def test_staff_without_an_authenticator_set_one_up_first_when_required(client, staff, settings):
    settings.STAFF_REQUIRE_MFA = True
    client.force_login(staff)
    for path in ("/admin/", "/admin/processes/", "/inbox/", "/accounts/settings/"):
        answer = client.get(path)
        assert answer.status_code == 302 and answer["Location"] == "/accounts/2fa/totp/activate/", path
    # Setting one up opens (after allauth asks for the password again).
    assert client.get("/accounts/2fa/totp/activate/", follow=True).status_code == 200
    add_authenticator(staff)
    assert client.get("/admin/").status_code == 200


def test_people_who_are_not_staff_are_not_asked_for_an_authenticator(client, make_user, settings):
    settings.STAFF_REQUIRE_MFA = True
    client.force_login(make_user("mira@example.com"))
    assert client.get("/inbox/").status_code == 200


def test_staff_may_go_without_an_authenticator_unless_required(client, staff, settings):
    settings.STAFF_REQUIRE_MFA = False
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200
