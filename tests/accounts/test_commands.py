"""manage.py add_org and add_person."""

import io

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Group, Membership, Organization, User


def run(command, *args):
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_add_org_creates_then_renames_then_reports_it_exists(db):
    assert run("add_org", "acme", "--name", "Acme Ltd") == "created organization acme (Acme Ltd)\n"
    assert Organization.objects.get(slug="acme").name == "Acme Ltd"
    assert run("add_org", "acme", "--name", "Acme Inc") == "renamed organization acme to Acme Inc\n"
    assert run("add_org", "acme") == "organization acme already exists (Acme Inc)\n"
    assert Organization.objects.filter(slug="acme").count() == 1


def test_add_org_name_defaults_to_the_slug(db):
    run("add_org", "beta")
    assert Organization.objects.get(slug="beta").name == "beta"


def test_add_org_refuses_a_bad_slug(db):
    with pytest.raises(CommandError, match="letters, digits"):
        run("add_org", "not a slug")


def test_add_person_creates_a_person_with_password_groups_and_operator(org):
    line = run(
        "add_person",
        "Ann@Example.com",
        "--password",
        "a-Long-test-passw0rd",
        "--group",
        "editors",
        "--group",
        "legal",
        "--operator",
    )
    assert line == "created ann@example.com in default (operator; groups: editors, legal)\n"
    person = User.objects.get(email="ann@example.com")
    assert person.check_password("a-Long-test-passw0rd")
    assert person.membership.organization == org and person.membership.is_operator
    assert set(person.process_groups.values_list("name", flat=True)) == {"editors", "legal"}
    assert all(group.organization == org for group in Group.objects.all())


def test_add_person_without_password_gets_an_unusable_one_and_a_note(org):
    line = run("add_person", "bob@example.com")
    assert "no password set" in line and "/accounts/password/reset/" in line
    person = User.objects.get(email="bob@example.com")
    assert not person.has_usable_password()
    assert not person.membership.is_operator


def test_add_person_updates_an_existing_person(org):
    run("add_person", "cy@example.com", "--group", "a", "--operator")
    line = run(
        "add_person", "CY@example.com", "--group", "b", "--no-operator", "--password", "a-Long-test-passw0rd"
    )
    assert line == "updated cy@example.com in default (not operator; groups: a, b)\n"
    person = User.objects.get()
    assert person.check_password("a-Long-test-passw0rd")
    assert not person.membership.is_operator
    assert Membership.objects.count() == 1
    # Without --operator or --password, both are kept.
    run("add_person", "cy@example.com", "--operator")
    run("add_person", "cy@example.com")
    person.refresh_from_db()
    assert person.membership.is_operator and person.check_password("a-Long-test-passw0rd")


def test_add_person_in_another_organization(org, other_org):
    run("add_person", "dee@example.com", "--org", "other", "--group", "ops")
    person = User.objects.get(email="dee@example.com")
    assert person.membership.organization == other_org
    assert Group.objects.get(name="ops").organization == other_org


def test_add_person_refuses_to_move_a_person_between_organizations(org, other_org):
    run("add_person", "eve@example.com")
    with pytest.raises(CommandError, match="is a member of organization 'default', not 'other'"):
        run("add_person", "eve@example.com", "--org", "other")


@pytest.mark.parametrize("command", ["add_person", "import_process"])
def test_unknown_organization_is_named(db, command):
    with pytest.raises(CommandError, match="organization 'ghost' does not exist"):
        run(command, "x@example.com" if command == "add_person" else "PROCESS.md", "--org", "ghost")


def test_add_person_refuses_a_bad_email_and_a_weak_password(org):
    with pytest.raises(CommandError, match="not a valid email"):
        run("add_person", "not-an-email")
    with pytest.raises(CommandError, match="--password"):
        run("add_person", "fay@example.com", "--password", "123")
    assert not User.objects.exists()
