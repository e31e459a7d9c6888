"""Create an organization, or rename an existing one."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_slug

from accounts.models import Organization


class Command(BaseCommand):
    help = "Create the organization SLUG (or update its name with --name). Prints one line."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="Letters, digits, hyphens and underscores; at most 64 characters.")
        parser.add_argument("--name", help="Display name (default: the slug).")

    def handle(self, *args, **options):
        slug, name = options["slug"], options["name"]
        problems = []
        try:
            validate_slug(slug)
        except ValidationError:
            problems.append(f"slug {slug!r}: use only letters, digits, hyphens and underscores")
        max_slug = Organization._meta.get_field("slug").max_length
        if len(slug) > max_slug:
            problems.append(f"slug {slug!r}: at most {max_slug} characters")
        max_name = Organization._meta.get_field("name").max_length
        if name is not None and not (0 < len(name.strip()) <= max_name):
            problems.append(f"--name: must be 1 to {max_name} characters")
        if problems:
            raise CommandError("\n".join(problems))
        organization, created = Organization.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if created:
            self.stdout.write(f"created organization {slug} ({organization.name})")
        elif name is not None and organization.name != name:
            organization.name = name
            organization.save(update_fields=["name"])
            self.stdout.write(f"renamed organization {slug} to {name}")
        else:
            self.stdout.write(f"organization {slug} already exists ({organization.name})")
