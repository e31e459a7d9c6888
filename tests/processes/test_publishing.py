"""The publishing services: drafts, bindings, numbered immutable versions and packages."""

import io
import threading
import time
import zipfile

import pytest
from django.db import connection

from accounts.models import Group
from processes import capabilities, hashing, parsing, publishing
from processes.models import Draft, ImmutableVersionError, Process, ProcessVersion, RoleBinding
from tests.conftest import fixture_path

SIMPLE = """\
---
name: simple-approval
description: Ask an approver to approve a request.
inputs:
  request: string
steps:
  - id: review
    person: approver
    approve: Approve the request when it is complete.
    next: check
  - id: check
    person: checker
    task: Check the request.
    next: done
  - id: done
    finish: approved
---

# Simple approval

The approver approves.
"""

WITH_SYSTEMS = SIMPLE.replace("inputs:", "requires:\n  systems: [crm, ledger]\ninputs:")

# Three independent problems: a bad name, an unknown field and a dangling on_reject.
BROKEN = """\
---
name: Not_A_Name
description: Broken on purpose.
colour: blue
steps:
  - id: review
    person: approver
    approve: Approve it.
    on_reject: nowhere
    next: done
  - id: done
    finish: approved
---
body
"""


def content_hash_of(text):
    parsed = parsing.parse_process(text)
    return hashing.content_hash(parsed.frontmatter, parsed.body)


def make_zip(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def bound_draft(org, text=SIMPLE):
    result = publishing.import_draft(organization=org, text=text)
    groups = {role: Group.objects.get_or_create(organization=org, name=role)[0] for role in result.roles}
    publishing.bind_roles(draft=result.draft, bindings=groups)
    return result.draft


# --- import_draft ------------------------------------------------------------------------------


def test_import_creates_a_draft_with_roles_and_systems(org):
    # spec §7: import creates a draft and asks for every role; requires.systems is shown.
    result = publishing.import_draft(organization=org, text=WITH_SYSTEMS)
    assert not result.refused
    assert result.roles == ["approver", "checker"]
    assert result.unbound_roles == ["approver", "checker"]
    assert result.systems == ["crm", "ledger"]
    assert result.sha256 == content_hash_of(WITH_SYSTEMS)
    draft = result.draft
    assert draft.pk is not None and draft.name == "simple-approval"
    assert draft.source == WITH_SYSTEMS
    assert draft.issues == []
    assert not Process.objects.exists()


def test_refused_import_names_every_issue_and_stores_nothing(org):
    # spec §2: every issue at once; a document that can never be published is not kept.
    result = publishing.import_draft(organization=org, text=BROKEN)
    assert result.refused and result.draft is None
    assert len(result.issues) >= 3
    joined = "\n".join(result.issues)
    assert "name" in joined and "colour" in joined and "nowhere" in joined
    assert not Draft.objects.exists() and not Process.objects.exists()


def test_unreadable_import_is_refused_without_a_draft(org):
    result = publishing.import_draft(organization=org, text=b"no frontmatter here\n")
    assert result.refused and result.issues
    assert not Draft.objects.exists()


@pytest.mark.parametrize(
    "text", ["---\nname: \ud800\n---\n", b"---\nname: \xff\n---\n", "---\nname: a\x00\n---\n"]
)
def test_text_that_cannot_be_stored_is_refused_and_can_be_shown_again(org, text):
    result = publishing.import_draft(organization=org, text=text)
    assert result.refused and not Draft.objects.exists()
    shown = publishing.document_text(text)
    assert shown.startswith("---\nname: ") and "\x00" not in shown
    shown.encode("utf-8")  # no lone surrogate left


def test_oversized_import_is_refused_without_storing_it(org, settings):
    settings.MAX_PROCESS_BYTES = 1000
    result = publishing.import_draft(organization=org, text=SIMPLE + "x" * 1000)
    assert result.refused and "limit" in result.issues[0]
    assert not Draft.objects.exists()


def test_nul_in_body_is_refused_because_it_cannot_be_stored(org):
    result = publishing.import_draft(organization=org, text=SIMPLE + "\x00\n")
    assert any("NUL" in issue for issue in result.issues)
    assert not Draft.objects.exists()


def test_folder_name_must_equal_name(org):
    # spec §2.1: an importer given a folder refuses a mismatch.
    result = publishing.import_draft(organization=org, text=SIMPLE, folder_name="another-name")
    assert result.refused
    assert any("another-name" in issue for issue in result.issues)
    assert not Draft.objects.exists()


def test_unchanged_import_creates_nothing(org, publish):
    # spec issue §5: importing a document whose hash equals the latest version's creates nothing.
    version = publish(SIMPLE)
    drafts = Draft.objects.count()
    result = publishing.import_draft(organization=org, text=SIMPLE)
    assert result.unchanged == version
    assert result.draft is None
    assert Draft.objects.count() == drafts
    assert ProcessVersion.objects.count() == 1


def test_same_text_in_another_organization_is_not_unchanged(org, other_org, publish):
    publish(SIMPLE)
    result = publishing.import_draft(organization=other_org, text=SIMPLE)
    assert result.unchanged is None and result.draft is not None


# --- bind_roles --------------------------------------------------------------------------------


def test_bind_roles_returns_what_is_left(org):
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    approvers = Group.objects.create(organization=org, name="approvers")
    assert publishing.bind_roles(draft=draft, bindings={"approver": approvers}) == ["checker"]
    assert draft.bindings == {"approver": approvers.pk}
    assert publishing.bind_roles(draft=draft, bindings={"approver": None}) == ["approver", "checker"]


def test_group_of_another_organization_cannot_be_bound(org, other_org):
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    foreign = Group.objects.create(organization=other_org, name="approvers")
    with pytest.raises(publishing.BindingError) as refused:
        publishing.bind_roles(draft=draft, bindings={"approver": foreign, "nobody": foreign})
    # Every problem at once: the foreign group and the unknown role.
    assert len(refused.value.issues) == 2
    assert "other" in refused.value.issues[0] and "approver" in refused.value.issues[0]
    assert "nobody" in refused.value.issues[1]
    draft.refresh_from_db()
    assert draft.bindings == {}


def test_bind_roles_creates_the_new_groups_it_is_given(org, other_org):
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    Group.objects.create(organization=other_org, name="reviewers")
    assert publishing.bind_roles(draft=draft, bindings={}, new_groups={"approver": "reviewers"}) == ["checker"]
    reviewers = Group.objects.get(organization=org, name="reviewers")
    assert draft.bindings == {"approver": reviewers.pk}


def test_bind_roles_refuses_every_bad_new_group_at_once_and_creates_none(org):
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    approvers = Group.objects.create(organization=org, name="Approvers")
    groups = Group.objects.count()
    with pytest.raises(publishing.BindingError) as refused:
        publishing.bind_roles(
            draft=draft,
            bindings={"checker": approvers},
            new_groups={"approver": "APPROVERS", "checker": "checkers", "nobody": "x" * 101},
        )
    assert refused.value.issues == [
        "role 'nobody': the process has no such role (its roles: approver, checker)",
        "role 'checker': is given both a group and a new group's name",
        "role 'approver': a group named 'Approvers' already exists in organization "
        f"'{org.slug}'; pick it from the list",
    ]
    assert Group.objects.count() == groups
    draft.refresh_from_db()
    assert draft.bindings == {}


def test_a_group_created_meanwhile_refuses_the_binding_and_keeps_nothing(org, monkeypatch):
    # Another request creates the group between the name check and the insert.
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    check = publishing.check_new_group_names

    def check_then_someone_creates(*, organization, names):
        problems = check(organization=organization, names=names)
        Group.objects.create(organization=organization, name="checkers")
        return problems

    monkeypatch.setattr(publishing.binding, "check_new_group_names", check_then_someone_creates)
    with pytest.raises(publishing.BindingError) as refused:
        publishing.bind_roles(draft=draft, bindings={}, new_groups={"approver": "approvers", "checker": "checkers"})
    assert refused.value.issues == ["role 'checker': a group named 'checkers' was created meanwhile; pick it from the list"]
    assert not Group.objects.filter(name="approvers").exists()
    draft.refresh_from_db()
    assert draft.bindings == {}


def refused_draft(org):
    """Return a draft as earlier releases stored a refused import: with its issues."""
    parsed = parsing.parse_process(BROKEN)
    return Draft.objects.create(
        organization=org, name="", source=BROKEN, frontmatter=parsed.frontmatter, body=parsed.body,
        issues=["name: must match ^[a-z0-9]+(-[a-z0-9]+)*$"],
    )


def test_refused_draft_cannot_be_bound(org):
    draft = refused_draft(org)
    group = Group.objects.create(organization=org, name="g")
    with pytest.raises(publishing.BindingError):
        publishing.bind_roles(draft=draft, bindings={"approver": group})


# --- publish_draft -----------------------------------------------------------------------------


def test_publish_creates_version_one_with_its_hash_and_bindings(org, make_user):
    # spec §6 rule 5: a numbered version with SHA-256 over RFC 8785 JSON, a newline, the body.
    publisher = make_user("publisher@example.com")
    draft = bound_draft(org)
    result = publishing.publish_draft(draft=draft, published_by=publisher)
    version = result.version
    assert not result.unchanged
    assert version.number == 1
    assert version.sha256 == content_hash_of(SIMPLE)
    assert version.process.name == "simple-approval" and version.process.organization == org
    assert version.source == SIMPLE
    assert version.body == parsing.parse_process(SIMPLE).body
    assert version.frontmatter == parsing.parse_process(SIMPLE).frontmatter
    assert version.published_by == publisher and version.published_at is not None
    assert {(b.role, b.group.name) for b in version.bindings.all()} == {
        ("approver", "approver"),
        ("checker", "checker"),
    }
    assert draft.published_version == version


def test_hash_is_of_the_parsed_document_even_where_json_storage_differs(org):
    # jsonb gives 1e21 back as an integer; the version's hash must still be of the parsed float.
    text = SIMPLE.replace(
        "  request: string", "  request: string\n  size: { type: number, one_of: [1e21, 0.5] }"
    )
    version = publishing.publish_draft(draft=bound_draft(org, text)).version
    assert version.sha256 == content_hash_of(text)


def test_publish_with_an_unbound_role_is_refused_naming_it(org):
    draft = publishing.import_draft(organization=org, text=SIMPLE).draft
    group = Group.objects.create(organization=org, name="approvers")
    publishing.bind_roles(draft=draft, bindings={"approver": group})
    with pytest.raises(publishing.PublishError) as refused:
        publishing.publish_draft(draft=draft)
    assert refused.value.issues == ["role 'checker': is not bound to a group"]
    assert not ProcessVersion.objects.exists()


def test_publish_of_a_refused_draft_is_refused_with_its_issues(org):
    draft = refused_draft(org)
    with pytest.raises(publishing.PublishError) as refused:
        publishing.publish_draft(draft=draft)
    assert refused.value.issues == draft.issues


def test_publish_when_a_bound_group_was_deleted(org):
    draft = bound_draft(org)
    Group.objects.get(name="checker").delete()
    with pytest.raises(publishing.PublishError) as refused:
        publishing.publish_draft(draft=draft)
    assert refused.value.issues == ["role 'checker': its group no longer exists; bind it again"]


def test_a_draft_is_published_once(org):
    draft = bound_draft(org)
    publishing.publish_draft(draft=draft)
    with pytest.raises(publishing.PublishError, match="already published as version 1"):
        publishing.publish_draft(draft=draft)


def test_changed_content_publishes_the_next_number(org):
    versions = [
        publishing.publish_draft(draft=bound_draft(org, SIMPLE + f"Revision {n}.\n")).version
        for n in range(3)
    ]
    assert [v.number for v in versions] == [1, 2, 3]
    assert len({v.sha256 for v in versions}) == 3
    assert Process.objects.count() == 1


def test_publishing_content_equal_to_the_latest_is_unchanged(org):
    # Two drafts of the same text: the second finds the first already published.
    first, second = bound_draft(org), bound_draft(org)
    version = publishing.publish_draft(draft=first).version
    result = publishing.publish_draft(draft=second)
    assert result.unchanged and result.version == version
    assert ProcessVersion.objects.count() == 1
    second.refresh_from_db()
    assert second.published_version == version


def test_publication_checks_capabilities_again(org, monkeypatch):
    # spec §8 / implementing.md Step 1: refuse at publication a tool the server no longer offers.
    text = SIMPLE.replace(
        "    task: Check the request.\n", "    task: Check the request.\n    evidence: [file]\n"
    )
    draft = bound_draft(org, text)
    offered = capabilities.offered_tools()
    monkeypatch.setattr(capabilities, "offered_tools", lambda: offered - {"upload"})
    with pytest.raises(publishing.PublishError) as refused:
        publishing.publish_draft(draft=draft)
    assert any("upload" in issue for issue in refused.value.issues)


def test_version_number_is_taken_under_a_lock_on_the_process_row(org, monkeypatch):
    # By construction: the row lock is what keeps two publishers from taking the same number.
    calls = []
    original = Process.objects.select_for_update

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(Process.objects, "select_for_update", spy)
    publishing.publish_draft(draft=bound_draft(org))
    assert calls, "publish_draft must lock the Process row with select_for_update"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_take_distinct_numbers(org, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks (DATABASE_URL is not PostgreSQL)")
    create = ProcessVersion.objects.create

    def slow_create(**kwargs):
        # Widen the gap between reading the latest number and committing N+1, where a race would bite.
        time.sleep(0.2)
        return create(**kwargs)

    monkeypatch.setattr(ProcessVersion.objects, "create", slow_create)
    # The process exists already, so only the row lock (not its unique name) orders the publishers.
    publishing.publish_draft(draft=bound_draft(org))
    drafts = [bound_draft(org, SIMPLE + f"Concurrent {n}.\n") for n in range(4)]
    barrier = threading.Barrier(len(drafts))
    numbers, errors = [], []

    def worker(draft):
        try:
            barrier.wait()
            numbers.append(publishing.publish_draft(draft=draft).version.number)
        except Exception as exc:  # collected so the assertion shows it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(draft,)) for draft in drafts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(numbers) == [2, 3, 4, 5]


# --- immutability (spec §6 rule 5) -------------------------------------------------------------


def test_a_published_version_cannot_be_saved_or_deleted(publish):
    version = publish(SIMPLE)
    version.body = "changed"
    with pytest.raises(ImmutableVersionError):
        version.save()
    with pytest.raises(ImmutableVersionError):
        version.delete()
    with pytest.raises(ImmutableVersionError):
        ProcessVersion.objects.filter(pk=version.pk).update(body="changed")
    with pytest.raises(ImmutableVersionError):
        ProcessVersion.objects.filter(pk=version.pk).delete()
    assert ProcessVersion.objects.get(pk=version.pk).body == parsing.parse_process(SIMPLE).body


def test_role_bindings_cannot_change(publish):
    version = publish(SIMPLE)
    binding = version.bindings.first()
    with pytest.raises(ImmutableVersionError):
        binding.save()
    with pytest.raises(ImmutableVersionError):
        binding.delete()
    with pytest.raises(ImmutableVersionError):
        RoleBinding.objects.all().update(role="x")
    with pytest.raises(ImmutableVersionError):
        RoleBinding.objects.all().delete()


# --- import_process ----------------------------------------------------------------------------


def test_import_process_creates_missing_groups_and_publishes(org):
    Group.objects.create(organization=org, name="approvers")
    outcome = publishing.import_process(
        organization=org, text=SIMPLE, bindings={"approver": "approvers", "checker": "checkers"}, publish=True
    )
    assert outcome.status == "published"
    assert outcome.lines() == [f"published simple-approval version 1 sha256 {content_hash_of(SIMPLE)}"]
    assert set(Group.objects.filter(organization=org).values_list("name", flat=True)) == {
        "approvers",
        "checkers",
    }


def test_import_process_with_an_unknown_role_stores_nothing(org):
    outcome = publishing.import_process(
        organization=org, text=SIMPLE, bindings={"ghost": "ghosts"}, publish=True
    )
    assert outcome.status == "refused"
    assert outcome.lines() == ["role 'ghost': the process has no such role (its roles: approver, checker)"]
    assert not Draft.objects.exists() and not Group.objects.filter(name="ghosts").exists()


def test_import_process_needs_a_path_or_a_text(org):
    with pytest.raises(TypeError):
        publishing.import_process(organization=org)


def test_draft_line_wording():
    assert publishing.draft_line("p", ["a", "b"], []) == "draft p: roles to bind: a, b"
    assert publishing.draft_line("p", [], []) == "draft p: ready to publish"
    assert publishing.draft_line("p", ["a"], ["crm"]) == "draft p: roles to bind: a; requires systems: crm"


# --- packages (spec §7) ------------------------------------------------------------------------


def test_read_package_of_a_file_a_folder_and_a_zip(tmp_path):
    folder = tmp_path / "simple-approval"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(SIMPLE)
    assert publishing.read_package(folder / "PROCESS.md") == (SIMPLE.encode(), None)
    assert publishing.read_package(folder) == (SIMPLE.encode(), "simple-approval")
    nested = tmp_path / "nested.zip"
    nested.write_bytes(make_zip({"simple-approval/PROCESS.md": SIMPLE, "simple-approval/notes.txt": "x"}))
    assert publishing.read_package(nested) == (SIMPLE.encode(), "simple-approval")
    root = tmp_path / "root.zip"
    root.write_bytes(make_zip({"PROCESS.md": SIMPLE}))
    assert publishing.read_package(root) == (SIMPLE.encode(), None)


def test_read_package_of_the_fixtures_names_their_folder():
    text, folder_name = publishing.read_package(fixture_path("blog-publication"))
    assert folder_name == "blog-publication" and text.startswith(b"---\n")


def test_read_package_refuses_what_is_not_there(tmp_path):
    with pytest.raises(publishing.PackageError, match="no such file or folder"):
        publishing.read_package(tmp_path / "missing")
    with pytest.raises(publishing.PackageError, match="no such file"):
        publishing.read_package(tmp_path)


@pytest.mark.parametrize(
    "name",
    [
        "../evil/PROCESS.md",
        "simple-approval/../../PROCESS.md",
        "/etc/PROCESS.md",
        "C:/PROCESS.md",
        "a\\..\\b",
    ],
)
def test_zip_with_path_traversal_is_refused(name):
    data = make_zip({"simple-approval/PROCESS.md": SIMPLE, name: "x"})
    with pytest.raises(publishing.PackageError) as refused:
        publishing.read_upload(data, filename="p.zip")
    assert repr(name) in refused.value.issues[0]


def test_zip_bomb_is_refused_without_decompressing_it(settings):
    settings.MAX_PROCESS_BYTES = 64 * 1024
    data = make_zip({"simple-approval/PROCESS.md": SIMPLE + "0" * (5 * 1024 * 1024)})
    assert len(data) < 64 * 1024
    with pytest.raises(publishing.PackageError, match="larger than the limit"):
        publishing.read_upload(data, filename="bomb.zip")


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"readme.txt": "x"}, "holds no PROCESS.md"),
        ({"a/PROCESS.md": SIMPLE, "b/PROCESS.md": SIMPLE}, "more than one PROCESS.md"),
        ({"a/b/PROCESS.md": SIMPLE}, "holds no PROCESS.md"),
    ],
)
def test_zip_without_exactly_one_process_is_refused(members, message):
    with pytest.raises(publishing.PackageError, match=message):
        publishing.read_upload(make_zip(members), filename="p.zip")


def test_macos_resource_folder_is_ignored():
    data = make_zip({"simple-approval/PROCESS.md": SIMPLE, "__MACOSX/PROCESS.md": "junk"})
    assert publishing.read_upload(data, filename="p.zip") == (SIMPLE.encode(), "simple-approval")


def test_not_a_zip_is_refused():
    with pytest.raises(publishing.PackageError, match="not a readable zip"):
        publishing.read_upload(b"PK garbage", filename="p.zip")


def test_zip_folder_name_must_equal_name(org):
    text, folder_name = publishing.read_upload(make_zip({"wrong-name/PROCESS.md": SIMPLE}), filename="p.zip")
    result = publishing.import_draft(organization=org, text=text, folder_name=folder_name)
    assert result.refused and any("wrong-name" in issue for issue in result.issues)


def test_oversized_plain_upload_is_refused(settings):
    settings.MAX_PROCESS_BYTES = 100
    with pytest.raises(publishing.PackageError, match="larger than the limit"):
        publishing.read_upload(SIMPLE.encode(), filename="PROCESS.md")
