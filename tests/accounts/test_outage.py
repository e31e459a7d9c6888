"""A signed-in person's API call while the database is unreachable is a `retry`, never a 500."""

from django.db import OperationalError
from django.test import Client


def test_a_session_call_during_a_database_outage_answers_retry(make_user, monkeypatch):
    # spec §5: `retry` is transient server state; the caller sends the same requestId again. The session's
    # person is read first by the time-zone middleware, before the API could answer the outage itself.
    person = make_user("outage@example.com")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(person)
    browser.get("/inbox/")
    csrf = browser.cookies["csrftoken"].value

    def unreachable(request):
        raise OperationalError("connection to server failed: Connection refused")

    monkeypatch.setattr("django.contrib.auth.get_user", unreachable)
    response = browser.post("/api/tools/get_work", "{}", content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 503, response.content[:500]
    assert response.json()["error"]["code"] == "retry"
