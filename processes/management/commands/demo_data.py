"""Load demo people, groups and the ten core conformance processes; safe to run again."""

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import DEFAULT_ORGANIZATION, Group, Membership, Organization, User
from processes import capabilities, parsing, publishing, validation
from processes.demo import CORE_FIXTURES, DEMO_PEOPLE, PROFILE_FIXTURES

PROFILE_OF = {"major-incident": "parallel-1", "vendor-check": "check-1"}
DEMO_PASSWORD = "demo"


def fixture_dirs() -> list[Path]:
    """Return the places the conformance fixtures are looked for, in order."""
    places = []
    if os.environ.get("AGENTPROCESS_FIXTURES"):
        places.append(Path(os.environ["AGENTPROCESS_FIXTURES"]))
    base = Path(settings.BASE_DIR)
    places += [
        base / "conformance" / "fixtures",
        base.parent / "shared" / "agentprocess" / "conformance" / "fixtures",
    ]
    return places


def find_fixtures() -> Path | None:
    """Return the first fixtures folder that holds every core fixture, or None."""
    for place in fixture_dirs():
        if all((place / name / publishing.PROCESS_FILE).is_file() for name in CORE_FIXTURES):
            return place
    return None


class Command(BaseCommand):
    help = (
        "Create demo@example.com (operator, admin) and colleague@example.com, both with password 'demo', "
        "in the default organization, one group per role of the ten core fixtures with both as members, "
        "and publish those fixtures with each role bound to its same-named group. Idempotent. Fixtures are "
        "read from $AGENTPROCESS_FIXTURES, ./conformance/fixtures or ../shared/agentprocess/conformance/fixtures."
    )

    def handle(self, *args, **options):
        organization = Organization.objects.get_or_create(
            slug=DEFAULT_ORGANIZATION, defaults={"name": "Default organization"}
        )[0]
        folder = find_fixtures()
        packages = []
        if folder is None:
            places = ", ".join(str(p) for p in fixture_dirs())
            self.stderr.write(f"conformance fixtures not found (looked in {places}); no processes loaded")
        else:
            offered = capabilities.enabled_profiles()
            names = [*CORE_FIXTURES, *(n for n in PROFILE_FIXTURES if PROFILE_OF[n] in offered)]
            packages = [publishing.read_package(folder / name) for name in names]
        roles = sorted({role for text, _ in packages for role in _roles(text)})
        counts = {"published": 0, "unchanged": 0, "refused": 0, "draft": 0}
        with transaction.atomic():
            people = [_person(organization, email, operator) for email, operator in DEMO_PEOPLE]
            for role in roles:
                group, _ = Group.objects.get_or_create(organization=organization, name=role)
                group.members.add(*people)
            for text, folder_name in packages:
                outcome = publishing.import_process(
                    organization=organization,
                    text=text,
                    folder_name=folder_name,
                    bindings={role: role for role in _roles(text)},
                    publish=True,
                    created_by=people[0],
                )
                counts[outcome.status] += 1
                if outcome.status in ("refused", "draft"):
                    for line in outcome.lines():
                        self.stderr.write(f"{folder_name}: {line}")
        port = os.environ.get("PORT") or "8000"
        self.stdout.write(
            f"Sign in at http://127.0.0.1:{port}/accounts/login/ as demo@example.com / {DEMO_PASSWORD}"
        )
        summary = (
            f"demo data in '{organization.slug}': {len(people)} people, {len(roles)} groups, "
            f"{len(packages)} processes ({counts['published']} published, {counts['unchanged']} unchanged"
        )
        failed = counts["refused"] + counts["draft"]
        self.stdout.write(summary + (f", {failed} not published)" if failed else ")"))


def _roles(text: bytes) -> list[str]:
    parsed = parsing.parse_process(text)
    return validation.role_names(parsed.frontmatter) if parsed.frontmatter else []


def _person(organization: Organization, email: str, is_demo_admin: bool) -> User:
    """Create or refresh one demo person; the demo password bypasses validators on purpose."""
    user = User.objects.filter(email=email).first() or User(email=email)
    user.set_password(DEMO_PASSWORD)
    user.is_staff = user.is_superuser = is_demo_admin
    user.save()
    membership = Membership.objects.filter(user=user).first()
    if membership is None:
        Membership.objects.create(user=user, organization=organization, is_operator=is_demo_admin)
    elif membership.organization_id == organization.pk and membership.is_operator != is_demo_admin:
        membership.is_operator = is_demo_admin
        membership.save(update_fields=["is_operator"])
    return user
