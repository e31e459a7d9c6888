"""Create or update a person, their membership, their groups and their operator flag."""

import argparse

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email
from django.db import transaction

from accounts.models import DEFAULT_ORGANIZATION, Group, Membership, Organization, User


class Command(BaseCommand):
    help = (
        "Create or update the person EMAIL in an organization: set their password (--password; without it "
        "a new person gets an unusable password and can set one by resetting it), add them to groups "
        "(--group, created when missing; existing groups are kept) and set or clear the operator flag "
        "(--operator / --no-operator). A person belongs to one organization. Prints one line."
    )

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument(
            "--org",
            default=DEFAULT_ORGANIZATION,
            help=f"Organization slug (default: {DEFAULT_ORGANIZATION}).",
        )
        parser.add_argument("--password", help="Checked against the password validators in settings.")
        parser.add_argument("--group", action="append", default=[], metavar="NAME", help="Repeatable.")
        parser.add_argument(
            "--operator",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Operators see escalations and may cancel runs (default: unchanged; off for a new person).",
        )

    def handle(self, *args, **options):
        slug = options["org"]
        organization = Organization.objects.filter(slug=slug).first()
        if organization is None:
            raise CommandError(
                f"organization '{slug}' does not exist; create it with: manage.py add_org {slug}"
            )
        email = options["email"].strip()
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"{email!r} is not a valid email address") from None
        groups = [name.strip() for name in options["group"]]
        max_group = Group._meta.get_field("name").max_length
        bad_groups = [name for name in groups if not 0 < len(name) <= max_group]
        if bad_groups:
            raise CommandError(f"--group: a group name must be 1 to {max_group} characters")
        with transaction.atomic():
            line = self._apply(organization, email, options["password"], groups, options["operator"])
        self.stdout.write(line)

    def _apply(self, organization, email, password, group_names, operator) -> str:
        user = User.objects.select_for_update().filter(email__iexact=email).first()
        created = user is None
        if created:
            user = User(email=User.objects.normalize_email(email).lower())
        membership = getattr(user, "membership", None) if not created else None
        if membership is not None and membership.organization_id != organization.pk:
            raise CommandError(
                f"{user.email} is a member of organization '{membership.organization.slug}', not "
                f"'{organization.slug}'; a person belongs to one organization (change it in the admin)"
            )
        note = ""
        if password is not None:
            try:
                password_validation.validate_password(password, user)
            except ValidationError as exc:
                raise CommandError("--password: " + " ".join(exc.messages)) from None
            user.set_password(password)
        elif created:
            user.set_unusable_password()
            note = "; no password set, they can set one at /accounts/password/reset/"
        user.save()
        if membership is None:
            membership = Membership(user=user, organization=organization)
        if operator is not None:
            membership.is_operator = operator
        membership.save()
        for name in group_names:
            group, _ = Group.objects.get_or_create(organization=organization, name=name)
            group.members.add(user)
        all_groups = ", ".join(
            user.process_groups.filter(organization=organization).values_list("name", flat=True)
        )
        role = "operator" if membership.is_operator else "not operator"
        return (
            f"{'created' if created else 'updated'} {user.email} in {organization.slug} ({role}; "
            f"groups: {all_groups or 'none'}){note}"
        )
