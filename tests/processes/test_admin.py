"""The admin: import an upload, bind roles, publish, and read versions that never change."""

import io
import re
import zipfile
from html import unescape
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.contrib import admin
from django.contrib.auth.models import Group as AuthGroup
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils.html import escape

from accounts.models import Group, User
from processes import hashing, parsing, publishing
from processes.models import Draft, ProcessVersion
from tests.conftest import fixture_path
from tests.processes.test_publishing import BROKEN, SIMPLE

IMPORT_URL = "admin:processes_draft_import"


@pytest.fixture
def admin_client(client, make_user):
    user = make_user("admin@example.com", is_staff=True, is_superuser=True)
    client.force_login(user)
    client.user = user
    return client


def upload(client, org, name, data):
    return client.post(reverse(IMPORT_URL), {"organization": org.pk, "file": SimpleUploadedFile(name, data)})


def draft_url(draft):
    return reverse("admin:processes_draft_change", args=[draft.pk])


def role_fields(draft, groups_by_role):
    """Return the POST data that picks a group for each role, in the form's numbering."""
    return {
        f"role_{index}": groups_by_role[role].pk for index, role in enumerate(publishing.draft_roles(draft))
    }


def test_draft_changelist_links_to_the_import_view(admin_client, org):
    response = admin_client.get(reverse("admin:processes_draft_changelist"))
    assert response.status_code == 200
    assert reverse(IMPORT_URL) in response.content.decode()
    page = admin_client.get(reverse(IMPORT_URL))
    assert page.status_code == 200
    assert 'type="file"' in page.content.decode() and 'name="organization"' in page.content.decode()


def test_import_bind_and_publish_a_fixture_end_to_end(admin_client, org, other_org):
    # spec §7: import creates a draft, every role is mapped to a group, publish on request.
    data = (fixture_path("contract-review") / "PROCESS.md").read_bytes()
    parsed = parsing.parse_process(data)
    sha256 = hashing.content_hash(parsed.frontmatter, parsed.body)
    roles = ["legal-reviewer", "finance-reviewer", "authorized-signatory"]
    groups = {role: Group.objects.create(organization=org, name=f"{role}s") for role in roles}
    foreign = Group.objects.create(organization=other_org, name="foreign-group")

    response = upload(admin_client, org, "PROCESS.md", data)
    draft = Draft.objects.get()
    assert response.status_code == 302 and response["Location"] == draft_url(draft)

    page = admin_client.get(draft_url(draft)).content.decode()
    for role in roles:
        assert role in page
    assert "legal-reviewers" in page and "foreign-group" not in page  # only this organization's groups
    assert 'name="_publish"' in page

    response = admin_client.post(
        draft_url(draft), {**role_fields(draft, groups), "_publish": "Publish"}, follow=True
    )
    version = ProcessVersion.objects.get()
    assert response.redirect_chain[-1][0] == reverse(
        "admin:processes_processversion_change", args=[version.pk]
    )
    page = response.content.decode()
    assert f"published contract-review version 1 sha256 {sha256}" in page.lower()  # the admin capitalises
    assert version.number == 1 and version.sha256 == sha256 and sha256 in page
    assert version.published_by == admin_client.user
    assert {(b.role, b.group) for b in version.bindings.all()} == set(groups.items())
    assert foreign.role_bindings.count() == 0


def counts():
    return Draft.objects.count(), ProcessVersion.objects.count(), Group.objects.count()


def textarea(page: str) -> str:
    """Return the text the import form's textarea holds, unescaped."""
    match = re.search(r'<textarea name="text"[^>]*>\n?(.*?)</textarea>', page, re.S)
    assert match, "the import form has no text area"
    return unescape(match.group(1))


def test_a_refused_upload_lists_every_issue_keeps_its_text_and_stores_nothing(admin_client, org):
    # An importer fixes what the server refused in the form itself; nothing half-imported is kept.
    before = counts()
    response = upload(admin_client, org, "PROCESS.md", BROKEN.encode())
    assert response.status_code == 200
    page = response.content.decode()
    issues = publishing.import_draft(organization=org, text=BROKEN).issues
    assert len(issues) >= 3
    for issue in issues:
        assert escape(issue) in page
    assert f"refused this PROCESS.md with {len(issues)} issues" in page
    assert textarea(page) == BROKEN
    assert counts() == before


def test_a_refused_paste_is_shown_again_with_crlf_undone(admin_client, org):
    before = counts()
    pasted = BROKEN.replace("\n", "\r\n")  # what a browser sends from a textarea
    response = admin_client.post(reverse(IMPORT_URL), {"organization": org.pk, "text": pasted})
    assert response.status_code == 200
    page = response.content.decode()
    assert escape("nowhere") in page and textarea(page) == BROKEN
    assert counts() == before


def test_a_refused_zipped_folder_comes_back_as_its_text_and_folder_name(admin_client, org):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("approval/PROCESS.md", SIMPLE)
    response = upload(admin_client, org, "approval.zip", buffer.getvalue())
    assert response.status_code == 200
    page = response.content.decode()
    assert "approval" in page and "simple-approval" in page  # the folder-name mismatch is named
    assert textarea(page) == SIMPLE
    assert 'name="folder_name" value="approval"' in page
    assert not Draft.objects.exists()

    # Corrected in the form (the folder name cleared), the text imports.
    response = admin_client.post(
        reverse(IMPORT_URL), {"organization": org.pk, "text": SIMPLE.replace("\n", "\r\n"), "folder_name": ""}
    )
    draft = Draft.objects.get()
    assert response.status_code == 302 and response["Location"] == draft_url(draft)
    assert draft.source == SIMPLE and draft.folder_name == ""


def test_an_import_with_neither_file_nor_text_says_so(admin_client, org):
    response = admin_client.post(reverse(IMPORT_URL), {"organization": org.pk, "text": ""})
    assert response.status_code == 200
    assert "paste the text of a PROCESS.md" in response.content.decode()
    assert not Draft.objects.exists()


def test_a_draft_refused_by_an_earlier_release_still_shows_its_issues(admin_client, org):
    draft = Draft.objects.create(organization=org, source=BROKEN, issues=["name: first", "colour: second"])
    page = admin_client.get(draft_url(draft)).content.decode()
    assert "name: first" in page and "colour: second" in page
    assert 'name="_publish"' not in page and 'class="process-map"' not in page


def test_publishing_with_a_role_unbound_shows_the_refusal(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    approvers = Group.objects.create(organization=org, name="approvers")
    response = admin_client.post(
        draft_url(draft), {"role_0": approvers.pk, "role_1": "", "_publish": "Publish"}
    )
    assert response.status_code == 200
    assert escape("role 'checker': is not bound to a group") in response.content.decode()
    assert not ProcessVersion.objects.exists()
    draft.refresh_from_db()
    assert draft.bindings == {"approver": approvers.pk}  # the choice made is kept


def test_a_group_of_another_organization_is_not_a_valid_choice(admin_client, org, other_org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    foreign = Group.objects.create(organization=other_org, name="approvers")
    response = admin_client.post(draft_url(draft), {"role_0": foreign.pk, "_publish": "Publish"})
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not ProcessVersion.objects.exists()


def test_save_bindings_without_publishing(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    approvers = Group.objects.create(organization=org, name="approvers")
    response = admin_client.post(draft_url(draft), {"role_0": approvers.pk, "_save": "Save bindings"})
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.bindings == {"approver": approvers.pk}
    assert not ProcessVersion.objects.exists()


def test_required_systems_are_shown(admin_client, org):
    text = SIMPLE.replace("inputs:", "requires:\n  systems: [crm]\ninputs:")
    upload(admin_client, org, "PROCESS.md", text.encode())
    page = admin_client.get(draft_url(Draft.objects.get())).content.decode()
    assert 'id="required-systems"' in page and "crm" in page


def test_zipped_folder_upload(admin_client, org):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("simple-approval/PROCESS.md", SIMPLE)
    upload(admin_client, org, "simple-approval.zip", buffer.getvalue())
    draft = Draft.objects.get()
    assert draft.folder_name == "simple-approval" and draft.issues == []


def test_path_traversal_zip_is_refused_on_the_import_page(admin_client, org):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("simple-approval/PROCESS.md", SIMPLE)
        archive.writestr("../escape.txt", "x")
    response = upload(admin_client, org, "evil.zip", buffer.getvalue())
    assert response.status_code == 200
    assert "path traversal" in response.content.decode()
    assert not Draft.objects.exists()


def test_unchanged_upload_goes_to_the_existing_version(admin_client, org, publish):
    version = publish(SIMPLE)
    drafts = Draft.objects.count()
    response = upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    assert response["Location"] == reverse("admin:processes_processversion_change", args=[version.pk])
    assert Draft.objects.count() == drafts


def test_published_version_is_read_only_in_the_admin(admin_client, publish):
    # spec §6 rule 5: no add, no change, no delete.
    version = publish(SIMPLE)
    change_url = reverse("admin:processes_processversion_change", args=[version.pk])
    page = admin_client.get(change_url)
    assert page.status_code == 200
    html = page.content.decode()
    assert version.sha256 in html and "approver → approver" in html
    assert escape('"name": "simple-approval"') in html  # the frontmatter, pretty-printed
    assert 'name="sha256"' not in html and 'name="body"' not in html
    assert admin_client.post(change_url, {"body": "changed"}).status_code == 403
    assert admin_client.get(reverse("admin:processes_processversion_add")).status_code == 403
    delete_url = reverse("admin:processes_processversion_delete", args=[version.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    assert ProcessVersion.objects.get(pk=version.pk).body == version.body


def test_process_changelist_shows_latest_version(admin_client, publish):
    publish(SIMPLE)
    publish(SIMPLE + "Second.\n")
    page = admin_client.get(reverse("admin:processes_process_changelist")).content.decode()
    assert "simple-approval" in page and "version 2" in page


def test_staff_without_permission_cannot_import(client, make_user, org):
    client.force_login(make_user("staff@example.com", is_staff=True))
    assert client.get(reverse(IMPORT_URL)).status_code == 403


def test_accounts_admin_and_no_auth_groups(admin_client, org):
    assert not admin.site.is_registered(AuthGroup)
    for name in ("user", "organization", "membership", "group", "agent"):
        assert admin_client.get(reverse(f"admin:accounts_{name}_changelist")).status_code == 200
    response = admin_client.post(
        reverse("admin:accounts_user_add"),
        {
            "email": "New.Person@Example.com",
            "usable_password": "true",
            "password1": "a-Long-test-passw0rd",
            "password2": "a-Long-test-passw0rd",
        },
    )
    assert response.status_code == 302, response.content.decode()
    person = User.objects.get(email="new.person@example.com")
    assert person.check_password("a-Long-test-passw0rd")
    assert admin_client.get(reverse("admin:accounts_user_change", args=[person.pk])).status_code == 200


def test_the_admin_index_names_each_section_once_and_spells_every_plural(admin_client):
    # issue: the people's first day: "Processs", and two sections both called "Accounts".
    response = admin_client.get(reverse("admin:index"))
    page = response.content.decode()
    apps = response.context["app_list"]
    sections = [str(app["name"]).casefold() for app in apps]  # the admin shows them in capitals
    assert len(sections) == len(set(sections)), sections
    for app in apps:
        assert page.count(f'class="section" title="Models in the {app["name"]} application"') == 1
    assert "Organizations, people and agents" in page and ">Processes<" in page
    shown = [str(model["name"]) for app in apps for model in app["models"]]
    assert "Processes" in shown and "Process versions" in shown
    plurals = [str(model._meta.verbose_name_plural) for model in django_apps.get_models()]
    for plural in shown + plurals:
        assert not plural.casefold().endswith("ss"), plural


# --- binding a role to a new group ------------------------------------------------------------


def test_a_role_is_bound_to_a_new_group_created_in_the_drafts_organization(admin_client, org, other_org):
    Group.objects.create(organization=other_org, name="checkers")  # another organization's name is free
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    approvers = Group.objects.create(organization=org, name="approvers")
    page = admin_client.get(draft_url(draft)).content.decode()
    assert 'name="role_1_new"' in page and "New group…" in page

    response = admin_client.post(
        draft_url(draft), {"role_0": approvers.pk, "role_1": "new", "role_1_new": "  checkers ", "_save": "Save"}
    )
    assert response.status_code == 302
    checkers = Group.objects.get(organization=org, name="checkers")
    draft.refresh_from_db()
    assert draft.bindings == {"approver": approvers.pk, "checker": checkers.pk}
    # The new group is now one to pick, and is picked.
    page = admin_client.get(draft_url(draft)).content.decode()
    assert f'<option value="{checkers.pk}" selected>checkers</option>' in page


def test_two_roles_may_share_one_new_group_and_a_typed_name_alone_means_new(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    response = admin_client.post(
        draft_url(draft),
        {"role_0": "new", "role_0_new": "reviewers", "role_1": "", "role_1_new": "reviewers", "_publish": "Publish"},
    )
    version = ProcessVersion.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{version.pk}/change/")
    reviewers = Group.objects.get(organization=org, name="reviewers")
    assert {(b.role, b.group) for b in version.bindings.all()} == {("approver", reviewers), ("checker", reviewers)}


def test_binding_problems_are_all_named_at_once_and_nothing_is_created(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    Group.objects.create(organization=org, name="Approvers")
    groups = Group.objects.count()
    response = admin_client.post(
        draft_url(draft),
        {"role_0": "new", "role_0_new": "approvers", "role_1": "new", "role_1_new": " ", "_publish": "Publish"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert escape(f"A group named 'Approvers' already exists in organization '{org.slug}'; pick it from the list.") in page
    assert "Type a name for the new group." in page
    assert Group.objects.count() == groups and not ProcessVersion.objects.exists()
    draft.refresh_from_db()
    assert draft.bindings == {}
    assert 'value="approvers"' in page  # what was typed stays in the form


def test_a_group_and_a_new_name_for_one_role_is_refused(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    approvers = Group.objects.create(organization=org, name="approvers")
    long_name = "x" * 101
    response = admin_client.post(
        draft_url(draft),
        {"role_0": approvers.pk, "role_0_new": "others", "role_1": "new", "role_1_new": long_name, "_save": "Save"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert escape("Pick a group or type a new group's name, not both.") in page
    assert "A group name is at most 100 characters (this one has 101)." in page
    assert not Group.objects.filter(name__in=["others", long_name]).exists()


def test_a_failed_publish_keeps_the_new_group_bound_and_shows_it_chosen(admin_client, org):
    upload(admin_client, org, "PROCESS.md", SIMPLE.encode())
    draft = Draft.objects.get()
    response = admin_client.post(
        draft_url(draft), {"role_0": "new", "role_0_new": "approvers", "role_1": "", "_publish": "Publish"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert escape("role 'checker': is not bound to a group") in page
    approvers = Group.objects.get(organization=org, name="approvers")
    assert f'<option value="{approvers.pk}" selected>approvers</option>' in page
    assert 'value="approvers"' not in page.replace(f'value="{approvers.pk}"', "")  # the name field is empty again


# --- the draft page ---------------------------------------------------------------------------


def test_the_draft_page_draws_the_process_map_above_the_source(admin_client, org):
    # The same map as the people pages: every step with its actor, and the on_reject loop.
    upload(admin_client, org, "PROCESS.md", (fixture_path("blog-publication") / "PROCESS.md").read_bytes())
    draft = Draft.objects.get()
    page = admin_client.get(draft_url(draft)).content.decode()
    assert page.index('class="process-map"') < page.index('id="draft-source"')
    for step in ("draft", "editor_review", "publication_time", "publish", "done"):
        assert f'data-step="{step}"' in page
    assert ">editor</text>" in page  # the person step's role
    assert 'class="map-edge reject"' in page
    assert "css/map.css" in page and "admin-map" in page
    assert escape("Draft the post from the brief") in page  # the source, as written


def test_the_admin_map_palette_is_the_people_pages_palette():
    # The map draws with app.css's colours; the admin sets them on the map, and they must agree.
    static = Path(__file__).resolve().parents[2] / "static" / "css"

    def colours(name):
        return dict(re.findall(r"--([a-z0-9-]+):\s*(#[0-9a-fA-F]{6})", (static / name).read_text()))

    people, admin_map = colours("app.css"), colours("admin.css")
    used = set(re.findall(r"var\(--([a-z0-9-]+)\)", (static / "map.css").read_text())) - {"font"}
    assert used <= set(admin_map)
    assert {n: c for n, c in admin_map.items() if n != "bg"} == {n: people[n] for n in admin_map if n != "bg"}
