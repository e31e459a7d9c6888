"""Signing in: allauth email and password, sign out, password reset by email, optional TOTP (issue 4 §1)."""

import re

import pytest

from accounts.models import Membership, User


@pytest.fixture
def person(org):
    user = User.objects.create_user("mira@example.com", "a-Long-test-passw0rd")
    Membership.objects.create(user=user, organization=org)
    return user


def test_sign_in_with_email_and_password_lands_in_the_inbox(person, client):
    page = client.get("/accounts/login/").content.decode()
    assert 'type="email" name="login"' in page and "Forgot your password?" in page
    assert "sign up" not in page.lower()  # people are added by an administrator
    response = client.post("/accounts/login/", {"login": "mira@example.com", "password": "a-Long-test-passw0rd"})
    assert response.status_code == 302 and response["Location"] == "/inbox/"
    assert client.get("/inbox/").status_code == 200


def test_a_wrong_password_says_so(person, client):
    response = client.post("/accounts/login/", {"login": "mira@example.com", "password": "wrong"})
    assert response.status_code == 200
    assert "not correct" in response.content.decode()


def test_sign_in_returns_to_the_page_asked_for(person, client):
    response = client.get("/runs/")
    assert response["Location"] == "/accounts/login/?next=/runs/"
    response = client.post("/accounts/login/?next=/runs/", {"login": "mira@example.com",
                                                             "password": "a-Long-test-passw0rd", "next": "/runs/"})
    assert response["Location"] == "/runs/"


def test_sign_out_is_a_post_from_the_account_menu(person, client):
    client.force_login(person)
    inbox = client.get("/inbox/").content.decode()
    for url in ("/accounts/email/", "/accounts/password/change/", "/accounts/2fa/"):
        assert f'href="{url}"' in inbox
    assert '<form method="post" action="/accounts/logout/">' in inbox
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/inbox/").status_code == 302


def test_password_reset_by_email(person, client, mailoutbox):
    client.post("/accounts/password/reset/", {"email": "mira@example.com"})
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["mira@example.com"]
    link = re.search(r"https?://[^/]+(/accounts/password/reset/key/\S+)", mailoutbox[0].body).group(1)
    page = client.get(link, follow=True)
    assert page.status_code == 200
    form_url = page.redirect_chain[-1][0] if page.redirect_chain else link
    response = client.post(form_url, {"password1": "another-Long-passw0rd", "password2": "another-Long-passw0rd"})
    assert response.status_code == 302
    assert client.login(username="mira@example.com", password="another-Long-passw0rd")


def test_two_factor_pages_are_there(person, client):
    client.force_login(person)
    page = client.get("/accounts/2fa/")
    assert page.status_code == 200 and "Authenticator App" in page.content.decode()
    assert 'class="btn' in page.content.decode()
    # activation asks for the password again first (allauth reauthentication), or shows the QR code
    activate = client.get("/accounts/2fa/totp/activate/", follow=True)
    assert activate.status_code == 200


def test_a_person_with_totp_enters_a_code_after_the_password(person, client):
    from allauth.mfa.totp.internal.auth import (
        TOTP,
        format_hotp_value,
        generate_totp_secret,
        hotp_value,
        yield_hotp_counters_from_time,
    )

    secret = generate_totp_secret()
    TOTP.activate(person, secret)
    response = client.post("/accounts/login/", {"login": "mira@example.com", "password": "a-Long-test-passw0rd"})
    assert response.status_code == 302 and response["Location"] == "/accounts/2fa/authenticate/"
    page = client.get(response["Location"]).content.decode()
    assert 'name="code"' in page
    assert client.get("/inbox/").status_code == 302  # not signed in until the code is given
    code = format_hotp_value(hotp_value(secret, next(yield_hotp_counters_from_time())))
    response = client.post("/accounts/2fa/authenticate/", {"code": code})
    assert response.status_code == 302 and response["Location"] == "/inbox/"
    assert client.get("/inbox/").status_code == 200
