"""Import a PROCESS.md, bind its roles and publish it from the command line (spec §7)."""

import sys

from django.core.management.base import BaseCommand, CommandError

from accounts.models import DEFAULT_ORGANIZATION, Organization
from processes import publishing


class Command(BaseCommand):
    help = (
        "Import PATH (a PROCESS.md, a folder holding one, or a zip of such a folder) as a draft, bind "
        "roles with --bind ROLE=GROUP (creating each group that does not exist) and publish with "
        "--publish. On success prints one line to stdout and exits 0: "
        "'published NAME version N sha256 HEX', 'unchanged NAME version N sha256 HEX', "
        "'draft NAME: roles to bind: a, b' or 'draft NAME: ready to publish', the draft line followed by "
        "'; requires systems: x, y' when the process names systems. A refused document exits 1 and "
        "prints one line per issue to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="A PROCESS.md, a folder holding one, or a .zip of that folder.")
        parser.add_argument(
            "--org",
            default=DEFAULT_ORGANIZATION,
            help=f"Organization slug (default: {DEFAULT_ORGANIZATION}).",
        )
        parser.add_argument(
            "--bind",
            action="append",
            default=[],
            metavar="ROLE=GROUP",
            help="Bind a role name to a group of the organization, creating the group when missing. Repeatable.",
        )
        parser.add_argument("--publish", action="store_true", help="Publish once every role is bound.")

    def handle(self, *args, **options):
        organization = Organization.objects.filter(slug=options["org"]).first()
        if organization is None:
            raise CommandError(
                f"organization '{options['org']}' does not exist; create it with: manage.py add_org {options['org']}"
            )
        bindings = parse_bindings(options["bind"])
        outcome = publishing.import_process(
            organization=organization, path=options["path"], bindings=bindings, publish=options["publish"]
        )
        if outcome.status == "refused":
            for line in outcome.lines():
                self.stderr.write(line)
            sys.exit(1)
        for line in outcome.lines():
            self.stdout.write(line)


def parse_bindings(values: list[str]) -> dict[str, str]:
    """Turn ROLE=GROUP arguments into a mapping, refusing every malformed one at once."""
    bindings: dict[str, str] = {}
    problems = []
    for value in values:
        role, sep, group = value.partition("=")
        role, group = role.strip(), group.strip()
        if not sep or not role or not group:
            problems.append(f"--bind {value!r}: expected ROLE=GROUP, for example --bind editor=editors")
        elif role in bindings and bindings[role] != group:
            problems.append(f"--bind {value!r}: role '{role}' is already bound to '{bindings[role]}'")
        else:
            bindings[role] = group
    if problems:
        raise CommandError("\n".join(problems))
    return bindings
