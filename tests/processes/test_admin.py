"""The admin: import an upload, bind roles, publish, and read versions that never change."""

import io
import zipfile

import pytest
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


def test_broken_upload_shows_every_issue(admin_client, org):
    response = upload(admin_client, org, "PROCESS.md", BROKEN.encode())
    draft = Draft.objects.get()
    assert response.status_code == 302
    page = admin_client.get(draft_url(draft)).content.decode()
    assert len(draft.issues) >= 3
    for issue in draft.issues:
        assert escape(issue) in page
    assert 'name="_publish"' not in page


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


def test_the_admin_index_names_each_section_once_and_spells_processes(admin_client):
    # issue: the people's first day: "Processs", and two sections both called "Accounts".
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "Processs" not in page and ">Processes<" in page
    assert page.count(">Accounts<") <= 1
    assert "Organizations, people and agents" in page
