"""A password reset mails only an address that has an account, and answers the same either way."""

import pytest

pytestmark = pytest.mark.django_db


def test_a_reset_for_an_address_without_an_account_sends_nothing(client, make_user, mailoutbox):
    make_user("mira@example.com")
    unknown = client.post("/accounts/password/reset/", {"email": "nobody@example.com"})
    assert unknown.status_code == 302
    assert mailoutbox == []
    known = client.post("/accounts/password/reset/", {"email": "mira@example.com"})
    # The same answer, so the page tells nobody which addresses have an account.
    assert known.status_code == 302 and known["Location"] == unknown["Location"]
    assert [message.to for message in mailoutbox] == [["mira@example.com"]]
