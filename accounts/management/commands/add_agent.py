"""Create an agent and its OAuth client from the command line."""

from django.core.management.base import BaseCommand, CommandError

from accounts.models import DEFAULT_ORGANIZATION, Agent, Organization
from accounts.oauth import AgentNameTaken, create_agent
from base.names import name_problem


class Command(BaseCommand):
    help = (
        "Create an agent and its OAuth client, and print its client credentials (the secret only this once)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the agent's name, unique in its organization")
        parser.add_argument(
            "--org", default=DEFAULT_ORGANIZATION, help=f"organization slug (default: {DEFAULT_ORGANIZATION})"
        )

    def handle(self, *args, name, org, **options):
        name = name.strip()
        max_length = Agent._meta.get_field("name").max_length
        if not name:
            raise CommandError("the agent name must not be empty")
        if len(name) > max_length:
            raise CommandError(f"the agent name must be at most {max_length} characters")
        if problem := name_problem(name):
            raise CommandError(f"the agent name {problem}")
        organization = Organization.objects.filter(slug=org).first()
        if organization is None:
            raise CommandError(f"organization '{org}' does not exist")
        try:
            _agent, client_id, client_secret = create_agent(organization=organization, name=name)
        except AgentNameTaken:
            raise CommandError(f"agent '{name}' already exists in organization '{org}'") from None
        # Shell assignments, so `eval "$(python manage.py add_agent NAME)"` sets both.
        self.stdout.write(f"CLIENT_ID={client_id}")
        self.stdout.write(f"CLIENT_SECRET={client_secret}")
