"""manage.py import_process and demo_data, run on the conformance fixtures."""

import io
import shutil
import zipfile

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Group, Membership, Organization, User
from processes import hashing, parsing, validation
from processes.demo import CORE_FIXTURES
from processes.models import Draft, Process, ProcessVersion
from tests.conftest import fixture_path


def run(*args):
    """Run import_process and return (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_process", *[str(a) for a in args], stdout=out, stderr=err)
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def expected(path):
    """Return (name, roles, content hash) of a PROCESS.md folder, computed independently."""
    parsed = parsing.parse_process((path / "PROCESS.md").read_bytes())
    frontmatter = parsed.frontmatter
    return (
        frontmatter["name"],
        validation.role_names(frontmatter),
        hashing.content_hash(frontmatter, parsed.body),
    )


def bind_all(roles):
    return [arg for role in roles for arg in ("--bind", f"{role}={role}")]


def copy_fixture(tmp_path, name, folder_name=None, append=""):
    folder = tmp_path / (folder_name or name)
    shutil.copytree(fixture_path(name), folder)
    if append:
        with open(folder / "PROCESS.md", "a", encoding="utf-8") as handle:
            handle.write(append)
    return folder


@pytest.mark.parametrize("name", CORE_FIXTURES)
def test_every_core_fixture_publishes_with_every_role_bound(org, name):
    # conformance/README.md: a conforming server publishes all ten core fixtures.
    path = fixture_path(name)
    process_name, roles, sha256 = expected(path)
    assert process_name == name
    status, out, err = run(path, "--publish", *bind_all(roles))
    assert (status, err) == (0, "")
    assert out == f"published {name} version 1 sha256 {sha256}\n"
    version = ProcessVersion.objects.get(process__organization=org, process__name=name)
    assert version.number == 1 and version.sha256 == sha256
    assert {(b.role, b.group.name) for b in version.bindings.all()} == {(role, role) for role in roles}


@pytest.mark.parametrize(("name", "profile"), [("major-incident", "parallel-1"), ("vendor-check", "check-1")])
def test_profile_fixtures_are_refused_naming_their_profile(org, name, profile, monkeypatch):
    # spec §8: refused at publication while the server lacks the profile.
    monkeypatch.setattr("processes.capabilities.IMPLEMENTED_PROFILES", ())
    path = fixture_path(name)
    status, out, err = run(path, "--publish", *bind_all(expected(path)[1]))
    assert status == 1 and out == ""
    lines = err.splitlines()
    assert lines and any(profile in line for line in lines)
    assert not ProcessVersion.objects.exists()
    # A refused import stores nothing; the issues are the answer.
    assert not Draft.objects.exists()


def test_major_incident_publishes_with_the_parallel_profile(org):
    # profiles/parallel.md: a server with the profile publishes the fixture.
    path = fixture_path("major-incident")
    _, roles, sha256 = expected(path)
    status, out, err = run(path, "--publish", *bind_all(roles))
    assert (status, err) == (0, "") and out == f"published major-incident version 1 sha256 {sha256}\n"


def test_reimport_is_unchanged(org):
    path = fixture_path("invoice-approval")
    _, roles, sha256 = expected(path)
    assert run(path, "--publish", *bind_all(roles))[0] == 0
    drafts = Draft.objects.count()
    # The hash is printed again, so a caller learns it whether or not this import published anything.
    unchanged = f"unchanged invoice-approval version 1 sha256 {sha256}\n"
    assert run(path, "--publish", *bind_all(roles)) == (0, unchanged, "")
    assert run(path) == (0, unchanged, "")
    assert ProcessVersion.objects.count() == 1 and Draft.objects.count() == drafts


def test_changed_body_publishes_version_two(org, tmp_path):
    original = fixture_path("supplier-rfp")
    _, roles, _ = expected(original)
    run(original, "--publish", *bind_all(roles))
    changed = copy_fixture(tmp_path, "supplier-rfp", append="\nOne more sentence for version 2.\n")
    _, _, sha256 = expected(changed)
    assert run(changed, "--publish", *bind_all(roles)) == (
        0,
        f"published supplier-rfp version 2 sha256 {sha256}\n",
        "",
    )
    assert list(Process.objects.get(name="supplier-rfp").versions.values_list("number", flat=True)) == [2, 1]


def test_without_publish_a_draft_lists_the_roles_to_bind(org):
    status, out, _ = run(fixture_path("contract-review"))
    assert status == 0
    assert (
        out
        == "draft contract-review: roles to bind: legal-reviewer, finance-reviewer, authorized-signatory\n"
    )
    assert not ProcessVersion.objects.exists()
    assert Draft.objects.get(name="contract-review").bindings == {}


def test_partly_bound_publish_stays_a_draft(org):
    status, out, _ = run(fixture_path("contract-review"), "--publish", "--bind", "legal-reviewer=legal")
    assert status == 0
    assert out == "draft contract-review: roles to bind: finance-reviewer, authorized-signatory\n"
    assert not ProcessVersion.objects.exists()


def test_fully_bound_without_publish_is_ready(org):
    path = fixture_path("blog-publication")
    _, roles, _ = expected(path)
    assert run(path, *bind_all(roles)) == (0, "draft blog-publication: ready to publish\n", "")


def test_process_without_roles_is_ready_and_publishes_without_binds(org):
    path = fixture_path("incident-postmortem")
    assert run(path) == (0, "draft incident-postmortem: ready to publish\n", "")
    assert run(path, "--publish")[1].startswith("published incident-postmortem version 1 sha256 ")


def test_required_systems_are_shown_on_the_draft_line(org, tmp_path):
    folder = tmp_path / "crm-update"
    folder.mkdir()
    (folder / "PROCESS.md").write_text(
        "---\nname: crm-update\ndescription: Update the CRM.\nrequires:\n  systems: [crm, billing]\n"
        "steps:\n  - id: update\n    person: sales-ops\n    task: Update the record.\n    next: done\n"
        "  - id: done\n    finish: updated\n---\nBody.\n"
    )
    assert run(folder) == (
        0,
        "draft crm-update: roles to bind: sales-ops; requires systems: crm, billing\n",
        "",
    )


def test_folder_name_different_from_name_is_refused(org, tmp_path):
    folder = copy_fixture(tmp_path, "blog-publication", folder_name="blog")
    status, out, err = run(folder, "--publish", "--bind", "editor=editor")
    assert status == 1 and out == ""
    assert any("blog" in line and "blog-publication" in line for line in err.splitlines())
    assert not Draft.objects.exists()


def test_a_process_md_path_is_not_checked_against_its_folder(org, tmp_path):
    folder = copy_fixture(tmp_path, "blog-publication", folder_name="elsewhere")
    assert (
        run(folder / "PROCESS.md", "--bind", "editor=editor")[1]
        == "draft blog-publication: ready to publish\n"
    )


def test_bind_creates_a_missing_group_and_reuses_an_existing_one(org, other_org):
    existing = Group.objects.create(organization=org, name="editors")
    Group.objects.create(organization=other_org, name="editors-elsewhere")
    status, _, _ = run(fixture_path("blog-publication"), "--publish", "--bind", "editor=editors")
    assert status == 0
    assert ProcessVersion.objects.get().bindings.get().group == existing
    status, _, _ = run(fixture_path("support-escalation"), "--bind", "tier1-lead=tier1")
    assert Group.objects.filter(organization=org, name="tier1").exists()


def test_bind_without_equals_is_a_clear_error(org):
    with pytest.raises(CommandError, match="expected ROLE=GROUP"):
        run(fixture_path("blog-publication"), "--bind", "editor")
    assert not Draft.objects.exists()


def test_bind_of_an_unknown_role_is_refused_and_stores_nothing(org):
    status, out, err = run(fixture_path("blog-publication"), "--bind", "editr=editors")
    assert status == 1 and out == ""
    assert err == "role 'editr': the process has no such role (its roles: editor)\n"
    assert not Draft.objects.exists() and not Group.objects.filter(name="editors").exists()


def test_unknown_organization_is_named(db):
    with pytest.raises(CommandError, match="organization 'nope' does not exist"):
        run(fixture_path("blog-publication"), "--org", "nope")


def test_org_option_publishes_into_that_organization(other_org):
    status, _, _ = run(
        fixture_path("blog-publication"), "--org", "other", "--publish", "--bind", "editor=editors"
    )
    assert status == 0
    version = ProcessVersion.objects.get()
    assert version.process.organization == other_org
    assert version.bindings.get().group.organization == other_org


def test_missing_path_is_refused(db, tmp_path):
    assert run(tmp_path / "missing") == (1, "", f"{tmp_path / 'missing'}: no such file or folder\n")


def test_zipped_folder_publishes_and_traversal_is_refused(org, tmp_path):
    source = fixture_path("blog-publication") / "PROCESS.md"
    good = tmp_path / "blog.zip"
    with zipfile.ZipFile(good, "w") as archive:
        archive.write(source, "blog-publication/PROCESS.md")
    _, _, sha256 = expected(fixture_path("blog-publication"))
    assert run(good, "--publish", "--bind", "editor=editor") == (
        0,
        f"published blog-publication version 1 sha256 {sha256}\n",
        "",
    )
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.write(source, "blog-publication/PROCESS.md")
        archive.writestr("../../outside.txt", "x")
    status, out, err = run(evil, "--publish")
    assert (status, out) == (1, "") and "path traversal" in err


# --- demo_data ---------------------------------------------------------------------------------


def demo(monkeypatch, port=None):
    if port:
        monkeypatch.setenv("PORT", port)
    else:
        monkeypatch.delenv("PORT", raising=False)
    out, err = io.StringIO(), io.StringIO()
    call_command("demo_data", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_demo_data_is_idempotent(org, monkeypatch):
    fixture_path("blog-publication")  # skips when the fixtures are absent
    out, err = demo(monkeypatch)
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "Sign in at http://127.0.0.1:8000/accounts/login/ as demo@example.com / demo"
    # The ten core fixtures, and major-incident while parallel-1 is offered.
    assert "11 processes (11 published, 0 unchanged)" in lines[1]
    state = (
        User.objects.count(),
        Group.objects.count(),
        ProcessVersion.objects.count(),
        Draft.objects.count(),
        Membership.objects.count(),
    )
    out, err = demo(monkeypatch, port="9123")
    assert err == ""
    assert out.splitlines()[0].startswith("Sign in at http://127.0.0.1:9123/accounts/login/")
    assert "11 processes (0 published, 11 unchanged)" in out.splitlines()[1]
    assert state == (
        User.objects.count(),
        Group.objects.count(),
        ProcessVersion.objects.count(),
        Draft.objects.count(),
        Membership.objects.count(),
    )
    assert set(Process.objects.values_list("name", flat=True)) == {*CORE_FIXTURES, "major-incident"}


def test_demo_people_can_sign_in_and_cover_every_role(org, monkeypatch):
    fixture_path("blog-publication")
    demo(monkeypatch)
    demo_user = User.objects.get(email="demo@example.com")
    colleague = User.objects.get(email="colleague@example.com")
    assert demo_user.check_password("demo") and colleague.check_password("demo")
    assert demo_user.is_staff and demo_user.is_superuser and demo_user.membership.is_operator
    assert not colleague.is_staff and not colleague.membership.is_operator
    assert demo_user.membership.organization == org == colleague.membership.organization
    roles = {b.role for v in ProcessVersion.objects.all() for b in v.bindings.all()}
    assert roles and set(demo_user.process_groups.values_list("name", flat=True)) == roles
    assert set(colleague.process_groups.values_list("name", flat=True)) == roles
    assert Organization.objects.count() == 1
