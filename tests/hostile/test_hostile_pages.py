"""Hostile values in every query and form parameter of every page: a 4xx or the page, never a 500.

PAGES names each page and action of the people's urlconfs, and ADMIN_PAGES each page of the processes
admin, with the parameters it reads and a value of each that works; every example replaces some of them (and the ids in the path) with hostile text: other
scripts' digits, numbers past int() and bigint, NUL, lone surrogates, bidirectional controls, huge
strings. Values are percent-encoded as a browser sends them, lone surrogates as their UTF-8 bytes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import uuid
from typing import NamedTuple
from urllib.parse import quote

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import accounts.urls
import runs.urls
import work.urls
from processes.models import Draft
from tests.work.conftest import PURCHASE, TYPED_OUTPUT, open_item

# Per page; HOSTILE_EXAMPLES=1000 searches further by hand.
EXAMPLES_PER_PAGE = int(os.environ.get("HOSTILE_EXAMPLES", "25"))

HOSTILE = st.sampled_from([
    "١٢٣", "²", "٣", "𝟗", "１２", "r_١", "w_²", "-1", "0", "+1", " 1", "1_000", "1e3",
    "9" * 5000, "9" * 19, "9223372036854775808", "18446744073709551616", "-9223372036854775809",
    "\x00", "1\x00", "\ud800", "a\udfffb", "\u202e1", "\u2066isolate\u2069", "\ufeff", "\U0010ffff",
    "", " ", "x" * 100_000, "é" * 5000, "<script>alert(1)</script>", "%00", "../../etc/passwd",
])
HOSTILE_IDS = st.sampled_from(["w_١٢٣", "r_²", "w_" + "9" * 5000, "r_" + "9" * 19, "w_9223372036854775808",
                               "\u202er_1", "w_1\x00", "\ud800", "٣", "x" * 2000])


class Page(NamedTuple):
    name: str  # the URL pattern's name
    method: str
    path_ids: dict  # the pattern's arguments, each the key of an id in the world
    params: dict  # every parameter the page reads, with a value that works


PAGES = [
    Page("home", "GET", {}, {"next": "/inbox/"}),
    Page("inbox", "GET", {}, {"page": "1", "process": "purchase", "show": "groups", "sort": "due"}),
    Page("notices-read", "POST", {}, {"notice": "1"}),
    Page("item", "GET", {"item_id": "item"}, {"x": "1"}),
    Page("item", "POST", {"item_id": "item"}, {
        **TYPED_OUTPUT, "decision": "completed", "requestId": "", "snapshot": "", "seen": "", "op": "",
        "confirm_taken": "1", "kept_file": "f_1", "links": "https://example.com", "summary": "s", "note": "n",
        "output-tags-row": "0", "output-details-col": "0",
    }),
    Page("item-take", "POST", {"item_id": "item"}, {"holder": "1", "back": "inbox"}),
    Page("item-release", "POST", {"item_id": "item"}, {"back": "inbox"}),
    Page("item-comment", "POST", {"item_id": "item"}, {"body": "Looks fine to me."}),
    Page("item-assign", "POST", {"item_id": "item"}, {"person": "colleague@example.com"}),
    Page("run-comment", "POST", {"run_id": "run"}, {"body": "Looks fine to me."}),
    Page("live", "GET", {}, {"item": "w_1", "run": "r_1", "since": "abc"}),
    Page("runs", "GET", {}, {"q": "purchase", "attention": "failed", "period": "24h", "agent": "a_1",
                             "process": "purchase", "state": "active", "page": "1", "sort": "due"}),
    Page("search", "GET", {}, {"q": "123"}),
    Page("run", "GET", {"run_id": "run"}, {"x": "1"}),
    Page("run-cancel", "POST", {"run_id": "run"}, {"reason": "Duplicate.", "requestId": ""}),
    Page("operations", "GET", {}, {"period": "7d"}),
    Page("live-map", "GET", {"name": "process"}, {"version": "1", "period": "24h", "step": "request"}),
    Page("processes", "GET", {}, {"cursor": "WyIyMDI2Il0"}),
    Page("process-start", "GET", {"name": "process"}, {"x": "1"}),
    Page("process-start", "POST", {"name": "process"}, {
        "version": "1", "mode": "test", "requestId": "", "inputs-item": "Laptop", "inputs-budget": "12", "op": "",
    }),
    Page("people-suggest", "GET", {}, {"q": "buy"}),
    Page("connected-agents", "GET", {}, {"x": "1"}),
    Page("connected-agents", "POST", {}, {"agent": "1"}),
    Page("preferences", "POST", {}, {"first_name": "A", "last_name": "B", "time_zone": "UTC",
                                     "email_notices": "at_once"}),
    Page("authorize", "GET", {}, {"response_type": "code", "client_id": "", "scope": "agentprocess", "state": "s",
                                  "redirect_uri": "http://127.0.0.1:33418/callback", "code_challenge": "",
                                  "code_challenge_method": "S256", "resource": ""}),
    Page("authorize", "POST", {}, {"request": "", "scopes": "agentprocess", "action": "grant", "client_id": ""}),
    Page("token", "POST", {}, {"grant_type": "authorization_code", "code": "c", "client_id": "",
                               "redirect_uri": "http://127.0.0.1:33418/callback", "code_verifier": "v",
                               "refresh_token": "r", "resource": ""}),
    Page("device-code", "POST", {}, {"client_id": "", "scope": "agentprocess"}),
    Page("revoke", "POST", {}, {"token": "t", "client_id": ""}),
    Page("client-registration", "POST", {}, {"client_name": "c", "redirect_uris": "https://ok.test/cb"}),
    Page("oidc-logout", "GET", {}, {"client_id": "", "post_logout_redirect_uri": "https://ok.test/bye",
                                    "id_token_hint": "", "state": "s"}),
    Page("oauth-authorization-server", "GET", {}, {"x": "1"}),
    Page("oauth-protected-resource", "GET", {}, {"x": "1"}),
    Page("oauth-protected-resource-mcp", "GET", {}, {"x": "1"}),
    Page("file-download", "GET", {"public_id": "file"}, {"e": "1", "s": "0" * 32}),
]

# Patterns of these urlconfs that are not ours to list: included urlconfs, fuzzed by their own projects.
INCLUDED = {"allauth.idp.urls"}


def patterns_of(urlconf) -> set[str]:
    names = set()
    for pattern in urlconf.urlpatterns:
        if isinstance(pattern, URLResolver):
            included = getattr(pattern.urlconf_name, "__name__", pattern.urlconf_name)
            assert included in INCLUDED, f"an include this test does not know: {included}"
        else:
            assert isinstance(pattern, URLPattern) and pattern.name, f"a page without a name: {pattern}"
            names.add(pattern.name)
    return names


def test_the_list_names_every_page_of_the_people_urlconfs():
    """A new page or action cannot be missed: each named pattern is in PAGES."""
    listed = {page.name for page in PAGES}
    for urlconf in (work.urls, accounts.urls, runs.urls):
        missing = patterns_of(urlconf) - listed
        assert not missing, f"{urlconf.__name__}: add these pages to PAGES: {sorted(missing)}"


def encoded(value: str) -> str:
    """Percent-encode as a browser would; a lone surrogate as the UTF-8 bytes a broken client would send."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def form(values: dict) -> str:
    return "&".join(f"{encoded(k)}={encoded(v)}" for k, v in values.items())


@pytest.fixture
def world(publish, agent, make_person):
    """A purchase run whose request waits on the signed-in operator (also a buyer), and a public OAuth client."""
    publish(PURCHASE)
    ops = make_person("ops@example.com", operator=True, groups=["buyers"])
    make_person("buyer@example.com", groups=["buyers"])
    view = agent.write("start_run", process="purchase", inputs={"item": "Laptop", "budget": 2000})
    oauth_client = OAuthClient(name="Fuzz", type=OAuthClient.Type.PUBLIC)
    oauth_client.set_redirect_uris(["http://127.0.0.1:33418/callback"])
    oauth_client.set_grant_types([OAuthClient.GrantType.AUTHORIZATION_CODE, OAuthClient.GrantType.REFRESH_TOKEN])
    oauth_client.set_scopes(["agentprocess"])
    oauth_client.save()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(secrets.token_bytes(32)).digest()).rstrip(b"=").decode()
    browser = Client()
    browser.force_login(ops.user)
    ids = {"item": open_item(view)["id"], "run": view["run"]["id"], "process": "purchase", "file": "f_1"}
    return browser, ids, {"client_id": oauth_client.id, "code_challenge": challenge}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: f"{page.method} {page.name}")
def test_hostile_values_in_every_parameter_get_a_4xx_or_the_page(world, page):
    hostile_examples(world, page)


def hostile_examples(world, page: Page) -> None:
    """Send the page with hostile values in some of its parameters and path ids; never a 500."""
    browser, ids, filled = world
    names = {key: f"--{key}--" for key in page.path_ids}
    template = reverse(page.name, kwargs=names)
    working = {key: filled.get(key, value) for key, value in page.params.items()}

    @settings(max_examples=EXAMPLES_PER_PAGE, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(changed=st.fixed_dictionaries({}, optional=dict.fromkeys(page.params, HOSTILE)),
           path_ids=st.fixed_dictionaries({}, optional=dict.fromkeys(page.path_ids, HOSTILE_IDS)))
    def check(changed, path_ids):
        path = template
        for key, placeholder in names.items():
            path = path.replace(placeholder, encoded(path_ids.get(key, ids[page.path_ids[key]])))
        values = {**working, **changed}
        if "requestId" in values and "requestId" not in changed:
            values["requestId"] = str(uuid.uuid4())
        if page.method == "GET":
            response = browser.get(f"{path}?{form(values)}")
        else:
            response = browser.post(path, form(values), content_type="application/x-www-form-urlencoded")
        assert response.status_code < 500, (page.method, path[:200], {k: v[:40] for k, v in changed.items()})

    check()


# The processes admin: Django's changelists and change pages, and this project's import and binding pages.
ADMIN_LISTING = {"p": "1", "q": "purchase", "o": "1", "organization__id__exact": "1", "e": "1", "all": ""}
ADMIN_PAGES = [
    Page("admin:processes_process_changelist", "GET", {}, ADMIN_LISTING),
    Page("admin:processes_process_change", "GET", {"object_id": "process"}, {"_changelist_filters": "p=1"}),
    Page("admin:processes_process_history", "GET", {"object_id": "process"}, {"p": "1"}),
    Page("admin:processes_process_delete", "GET", {"object_id": "process"}, {"x": "1"}),
    Page("admin:processes_process_add", "GET", {}, {"x": "1"}),
    Page("admin:processes_processversion_changelist", "GET", {}, {**ADMIN_LISTING, "process__id__exact": "1"}),
    Page("admin:processes_processversion_change", "GET", {"object_id": "version"}, {"x": "1"}),
    Page("admin:processes_processversion_history", "GET", {"object_id": "version"}, {"x": "1"}),
    Page("admin:processes_processversion_delete", "GET", {"object_id": "version"}, {"x": "1"}),
    Page("admin:processes_processversion_add", "GET", {}, {"x": "1"}),
    Page("admin:processes_draft_changelist", "GET", {}, ADMIN_LISTING),
    Page("admin:processes_draft_import", "POST", {}, {"organization": "1", "text": PURCHASE, "folder_name": "purchase"}),
    Page("admin:processes_draft_change", "POST", {"object_id": "draft"}, {
        "role_0": "", "role_0_new": "Buyers", "role_1": "", "role_1_new": "Managers", "_publish": "1",
    }),
    Page("admin:processes_draft_history", "GET", {"object_id": "draft"}, {"x": "1"}),
    Page("admin:processes_draft_delete", "POST", {"object_id": "draft"}, {"post": "yes"}),
    Page("admin:processes_draft_add", "GET", {}, {"x": "1"}),
]


def test_the_admin_list_names_every_page_of_the_processes_admin():
    """A page added to the processes admin (a model, or a view of its own) cannot be missed."""
    named = set()
    for pattern in admin.site.get_urls():
        if isinstance(pattern, URLResolver) and str(pattern.pattern).startswith("processes/"):
            named |= {f"admin:{p.name}" for p in _flatten(pattern) if p.name}
    assert "admin:processes_draft_import" in named
    missing = named - {page.name for page in ADMIN_PAGES}
    assert not missing, f"add these admin pages to ADMIN_PAGES: {sorted(missing)}"


def _flatten(resolver):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            yield from _flatten(pattern)
        else:
            yield pattern


@pytest.fixture
def admin_world(publish, make_person, org):
    version = publish(PURCHASE)
    admin = make_person("admin@example.com", operator=True)
    admin.user.is_staff = admin.user.is_superuser = True
    admin.user.save(update_fields=["is_staff", "is_superuser"])
    browser = Client()
    browser.force_login(admin.user)
    imported = browser.post(reverse("admin:processes_draft_import"),
                            {"organization": org.pk, "text": PURCHASE.replace("name: purchase", "name: purchase-2")})
    assert imported.status_code == 302, imported.content.decode()[:500]
    ids = {"process": str(version.process_id), "version": str(version.pk), "draft": str(Draft.objects.latest("pk").pk)}
    return browser, ids, {"organization": str(org.pk)}


@pytest.mark.parametrize("page", ADMIN_PAGES, ids=lambda page: f"{page.method} {page.name}")
def test_hostile_values_in_the_processes_admin_get_a_4xx_or_the_page(admin_world, page):
    hostile_examples(admin_world, page)
