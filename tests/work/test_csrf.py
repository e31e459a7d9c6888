"""Every form a page posts carries its CSRF token, and a post without one is refused and changes nothing."""

import re

from django.test import Client
from django.utils import timezone

from accounts.models import User
from runs.models import Notification, Run
from tests.work.conftest import open_item

POST_FORM = re.compile(r"<form\b[^>]*\bmethod=\"post\"[^>]*>(.*?)</form>", re.S | re.I)


def post_forms(html: str) -> list[str]:
    return POST_FORM.findall(html)


def token_of(client) -> str:
    return client.cookies["csrftoken"].value


def test_every_post_form_on_every_page_carries_its_token(purchase, browser_of, client):
    view = purchase()
    people = purchase.people
    root = User.objects.create_superuser("root@example.com", "pw")
    pages = {
        people["buyer"]: ["/inbox/", f"/inbox/{open_item(view)['id']}/", "/processes/purchase/",
                          f"/runs/{view['run']['id']}/", "/accounts/email/", "/accounts/password/change/"],
        people["ops"]: [f"/runs/{view['run']['id']}/"],
    }
    forms = 0
    for identity, urls in pages.items():
        signed_in = browser_of(identity, enforce_csrf=True)
        for url in urls:
            response = signed_in.get(url)
            assert response.status_code == 200, url
            for form in post_forms(response.content.decode()):
                assert 'name="csrfmiddlewaretoken"' in form, (url, form[:200])
                forms += 1
    admin = Client(enforce_csrf_checks=True)
    admin.force_login(root)
    for url in ("/admin/processes/draft/import/", "/admin/accounts/agent/add/"):
        for form in post_forms(admin.get(url).content.decode()):
            assert 'name="csrfmiddlewaretoken"' in form, url
            forms += 1
    for form in post_forms(client.get("/accounts/login/").content.decode()):
        assert 'name="csrfmiddlewaretoken"' in form
        forms += 1
    # decide, return, start, cancel, notices, sign-out, e-mail, password, import, agent, sign-in
    assert forms >= 11


def test_a_post_without_its_token_is_refused_and_changes_nothing(purchase, browser_of):
    view = purchase()
    run_id = view["run"]["id"]
    buyer = browser_of(purchase.people["buyer"], enforce_csrf=True)
    ops = browser_of(purchase.people["ops"], enforce_csrf=True)
    buyer.get("/inbox/")
    ops.get(f"/runs/{run_id}/")
    runs_before = Run.objects.count()
    Notification.objects.create(user=purchase.people["buyer"].user, run=Run.objects.get(pk=int(run_id[2:])),
                                step_id="request", kind="overdue", text="Overdue.", created_at=timezone.now())
    unread = Notification.objects.filter(read_at__isnull=True).count()
    assert unread > 0
    refused = [
        (buyer, "/processes/purchase/", {"inputs-item": "Monitor", "inputs-budget": "300", "mode": "test"}),
        (ops, f"/runs/{run_id}/cancel/", {"reason": "Not needed."}),
        (buyer, "/inbox/notifications/read/", {}),
        (buyer, "/accounts/logout/", {}),
    ]
    for client, url, data in refused:
        assert client.post(url, data).status_code == 403, url
    assert Run.objects.count() == runs_before and not Run.objects.get(pk=int(run_id[2:])).is_over
    assert Notification.objects.filter(read_at__isnull=True).count() == unread
    assert buyer.get("/inbox/").status_code == 200  # still signed in
    # The same posts with the token go through.
    for client, url, data in refused:
        assert client.post(url, {**data, "csrfmiddlewaretoken": token_of(client)}).status_code == 302, url
    assert Run.objects.get(pk=int(run_id[2:])).is_over and Run.objects.count() == runs_before + 1
    assert Notification.objects.filter(read_at__isnull=True).count() < unread
    assert buyer.get("/inbox/").status_code == 302  # signed out
