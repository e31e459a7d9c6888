"""Every script the pages need runs under their Content-Security-Policy, in Chromium: no violation is
reported while the inbox, a mermaid diagram, a form's added lines, the admin, the API docs and the
consent page do their work."""

from __future__ import annotations

import re

import pytest
from allauth.idp.oidc.models import Client as OAuthClient
from playwright.sync_api import expect

from tests.browser.conftest import sign_in, wait_for_diagrams
from tests.browser.pages import consent_url
from tests.browser.test_diagrams import DIAGRAMMED, import_process
from tests.work.conftest import open_item
from tests.work.test_typed_forms import EXPENSES

# Chromium reports a refused script, style or form on the console; the page's own event says the same.
REPORT_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.violatedDirective} refused ${event.blockedURI || "inline"}`);
});"""


@pytest.fixture
def watched(new_page):
    """Return (page, violations): a fresh page, and every CSP violation reported on it so far."""
    page = new_page()
    violations: list[str] = []
    page.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda message: violations.append(message.text)
            if re.search("Content Security Policy|CSP violation", message.text) else None)
    return page, violations


def test_the_inbox_and_an_item_draw_their_mermaid_diagrams_under_the_policy(tmp_path, agent, make_person, watched):
    page, violations = watched
    import_process(tmp_path, DIAGRAMMED)
    reviewer = make_person("reviewer@example.com", groups=["reviewers"], operator=True)
    view = agent.write("start_run", process="diagrammed", inputs={"title": "Q3 report"})
    sign_in(page, reviewer)
    expect(page.locator(f"a[href='/inbox/{open_item(view)['id']}/']").first).to_be_visible()
    page.goto(f"/inbox/{open_item(view)['id']}/")
    wait_for_diagrams(page)
    expect(page.locator("pre.mermaid svg")).to_have_count(2)
    page.goto(f"/runs/{view['run']['id']}/")
    wait_for_diagrams(page)
    expect(page.locator("pre.mermaid svg")).to_have_count(1)
    assert violations == []


def test_a_form_adds_its_lines_by_script_under_the_policy(publish, make_person, watched):
    page, violations = watched
    publish(EXPENSES)
    claimant = make_person("claimant@example.com")
    sign_in(page, claimant)
    page.goto("/processes/expenses/")
    lines = page.locator("#field-inputs-lines ol.lines > li")
    before = lines.count()
    page.evaluate("window.stillThisPage = true")
    page.get_by_role("button", name="Add a line to Lines").click()
    expect(lines).to_have_count(before + 1)
    # forms.js added it: the page was not sent and drawn again by the server.
    assert page.evaluate("window.stillThisPage === true")
    assert violations == []


def test_the_admin_runs_its_scripts_under_the_policy(make_person, watched):
    page, violations = watched
    admin = make_person("admin@example.com", operator=True)
    admin.user.is_staff = admin.user.is_superuser = True
    admin.user.save(update_fields=["is_staff", "is_superuser"])
    make_person("other@example.com")
    sign_in(page, admin)
    page.goto("/admin/accounts/user/")
    # The admin's actions.js: "select all" checks every row.
    page.locator("#action-toggle").check()
    expect(page.locator("input.action-select:checked")).to_have_count(2)
    assert violations == []


def test_the_api_docs_render_their_operations_under_the_policy(watched):
    page, violations = watched
    page.goto("/api/docs/")
    expect(page.locator(".opblock").first).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/api/tools/submit")).to_have_count(1)
    assert violations == []


def test_the_consent_page_redirects_to_the_registered_client_under_the_policy(make_person, watched):
    page, violations = watched
    ops = make_person("ops@example.com", operator=True)
    client = OAuthClient(name="Claude Code", type=OAuthClient.Type.PUBLIC)
    client.set_redirect_uris(["http://127.0.0.1:33418/callback"])
    client.set_grant_types([OAuthClient.GrantType.AUTHORIZATION_CODE])
    client.set_scopes(["agentprocess"])
    client.save()
    sign_in(page, ops)
    page.goto(consent_url(client_id=client.id))
    page.route("http://127.0.0.1:33418/**", lambda route: route.fulfill(body="done"))
    page.get_by_role("button", name="Connect").click()
    page.wait_for_url("http://127.0.0.1:33418/callback*")
    assert violations == []
