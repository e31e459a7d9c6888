"""Organizations, the people and agents in them, and the groups roles map to."""

from django.contrib.auth.base_user import BaseUserManager
from django.contrib.auth.models import AbstractUser
from django.db import models

DEFAULT_ORGANIZATION = "default"


class Organization(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class UserManager(BaseUserManager):
    use_in_migrations = True

    def _create_user(self, email, password, **extra_fields):
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra_fields)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", False)
        extra_fields.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra_fields)

    def create_superuser(self, email, password=None, **extra_fields):
        extra_fields.setdefault("is_staff", True)
        extra_fields.setdefault("is_superuser", True)
        return self._create_user(email, password, **extra_fields)


class EmailNotices(models.TextChoices):
    IMMEDIATELY = "immediately", "Immediately"
    DIGEST = "digest", "A daily digest"
    OFF = "off", "Off (in the app only)"


class User(AbstractUser):
    """A person; they sign in with their email address."""

    username = None
    email = models.EmailField("email address", unique=True)
    # How the pages show moments to this person; an IANA zone name (zoneinfo), UTC until they choose.
    time_zone = models.CharField(max_length=64, default="UTC")
    email_notices = models.CharField(
        "email notices", max_length=16, choices=EmailNotices.choices, default=EmailNotices.IMMEDIATELY
    )
    # When their last daily digest went out: the next goes a day later.
    last_digest_at = models.DateTimeField(null=True, blank=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    objects = UserManager()

    class Meta:
        ordering = ["email"]

    def __str__(self) -> str:
        return self.email

    @property
    def ref(self) -> str:
        return f"u_{self.pk}"


class Membership(models.Model):
    """A person's place in one organization; operators see escalations and may cancel runs."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="membership")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    is_operator = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.user} in {self.organization}"


class Group(models.Model):
    """A group of people in one organization; a process role is bound to one at publication."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    members = models.ManyToManyField(User, blank=True, related_name="process_groups")

    class Meta:
        ordering = ["organization", "name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="group_name_unique_in_org")]

    def __str__(self) -> str:
        return f"{self.name} ({self.organization})"

    @property
    def ref(self) -> str:
        return f"g_{self.pk}"


class Agent(models.Model):
    """A program that calls the tools: with an OAuth client of its own, or connected by a person.

    An agent an administrator made has a client-credentials client (`client_id`). An agent a person
    connected from an MCP client by signing in and consenting acts for that person (`for_user`) through
    a client registered dynamically or named by its metadata document (`connected_client_id`); it is
    still an agent, so it can never decide (spec §6 rule 4).
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=100)
    # The allauth OAuth client's id; a string, so accounts' migrations need not follow allauth's.
    client_id = models.CharField(max_length=100, unique=True, null=True, blank=True)
    for_user = models.ForeignKey(
        User, on_delete=models.CASCADE, null=True, blank=True, related_name="connected_agents",
        verbose_name="acts for",
    )
    # The client a person authorised; one client serves many people, so it is not unique here.
    connected_client_id = models.CharField("connected client", max_length=255, null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField("last used", null=True, blank=True)

    class Meta:
        ordering = ["organization", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"],
                condition=models.Q(for_user__isnull=True),
                name="agent_name_unique_in_org",
            ),
            models.UniqueConstraint(
                fields=["for_user", "connected_client_id"],
                condition=models.Q(for_user__isnull=False),
                name="agent_connection_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(for_user__isnull=True, connected_client_id__isnull=True)
                | models.Q(for_user__isnull=False, connected_client_id__isnull=False, client_id__isnull=True),
                name="agent_own_client_or_connected",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.organization})"

    @property
    def ref(self) -> str:
        return f"a_{self.pk}"

    @property
    def is_connected(self) -> bool:
        """Tell whether a person connected this agent (it acts for them) rather than an administrator."""
        return self.for_user_id is not None


class SpentRefreshToken(models.Model):
    """A refresh token already exchanged, by its hash: should it come back, its grant has leaked.

    allauth deletes a refresh token once it is exchanged, so only this row remembers which grant it
    belonged to (RFC 9700 §4.14.2: a replayed refresh token revokes the grant). The raw token is never
    stored, only the hash allauth's adapter makes of it.
    """

    hash = models.CharField(max_length=255, primary_key=True)
    # allauth's client and grant ids (strings, so these migrations need not follow allauth's).
    client_id = models.CharField(max_length=100)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    grant_id = models.CharField(max_length=64, blank=True, help_text="empty when the token named no grant")
    spent_at = models.DateTimeField()
    # Kept until then: when the spent token would itself have expired.
    forget_after = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"refresh token of client {self.client_id} spent at {self.spent_at:%Y-%m-%d %H:%M}"
