"""The admin's process import, in Chromium at desktop and phone width: refused, corrected, bound, published."""

import pytest
from playwright.sync_api import expect

from accounts.models import Group
from processes.models import Draft, ProcessVersion
from tests.browser.conftest import screenshot, sign_in
from tests.conftest import fixture_path


def overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize("width", [1280, 390])
def test_an_admin_imports_a_process_fixes_it_and_binds_its_role_to_a_new_group(new_page, make_person, org, width):
    admin = make_person("admin@example.com", operator=True)
    admin.user.is_staff = admin.user.is_superuser = True
    admin.user.save(update_fields=["is_staff", "is_superuser"])
    Group.objects.create(organization=org, name="Editors")
    good = (fixture_path("blog-publication") / "PROCESS.md").read_text()
    broken = good.replace("on_reject: draft", "on_reject: redraft").replace("brief: string", "brief: text")
    page = new_page(width=width)
    sign_in(page, admin)

    # A refused file: every issue listed, its text in the form, nothing stored.
    page.goto("/admin/processes/draft/import/")
    page.set_input_files(
        "input[name=file]", files=[{"name": "PROCESS.md", "mimeType": "text/markdown", "buffer": broken.encode()}]
    )
    page.get_by_role("button", name="Import").click()
    issues = page.locator("#import-issues li")
    issues.first.wait_for()
    expect(issues).to_have_count(2)
    assert "redraft" in issues.all_inner_texts()[0] + issues.all_inner_texts()[1]
    expect(page.locator("textarea[name=text]")).to_have_value(broken)
    assert not Draft.objects.exists()
    screenshot(page, f"admin-import-refused-{width}")
    assert overflow(page) <= 0

    # Corrected in place, it imports as a draft whose page draws the map.
    page.locator("textarea[name=text]").fill(good)
    page.get_by_role("button", name="Import").click()
    page.locator("svg.process-map").wait_for()
    expect(page.locator('svg.process-map [data-step="editor_review"]')).to_be_visible()

    # A new group's name that is taken is refused; a free one is created and bound.
    page.get_by_label("editor", exact=True).select_option(label="New group…")
    page.get_by_placeholder("new group name").fill("editors")
    page.get_by_role("button", name="Save bindings").click()
    page.get_by_text("A group named 'Editors' already exists").wait_for()
    screenshot(page, f"admin-draft-taken-name-{width}")
    assert overflow(page) <= 0
    page.get_by_placeholder("new group name").fill("blog editors")
    page.get_by_role("button", name="Save bindings").click()
    page.get_by_text("Role bindings saved.").wait_for()
    blog_editors = Group.objects.get(organization=org, name="blog editors")
    expect(page.get_by_label("editor", exact=True)).to_have_value(str(blog_editors.pk))
    screenshot(page, f"admin-draft-bound-{width}")
    assert overflow(page) <= 0

    page.get_by_role("button", name="Publish").click()
    page.get_by_text("published blog-publication version 1", exact=False).wait_for()
    version = ProcessVersion.objects.get()
    assert [(b.role, b.group) for b in version.bindings.all()] == [("editor", blog_editors)]
