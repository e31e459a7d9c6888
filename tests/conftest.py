"""Shared fixtures: organizations, people, and publishing a process with every role bound."""

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from accounts.models import DEFAULT_ORGANIZATION, Group, Membership, Organization, User
from processes import parsing, publishing, validation
from processes.demo import CORE_FIXTURES, PROFILE_FIXTURES
from processes.management.commands.demo_data import find_fixtures

FIXTURES_DIR = find_fixtures()

# CI replays the same generated examples every time (a found bug reproduces, nothing flickers);
# run with HYPOTHESIS_PROFILE=explore to search new ones.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", max_examples=1000)
if os.environ.get("HYPOTHESIS_PROFILE"):
    hypothesis_settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def fixture_path(name: str) -> Path:
    """Return the folder of one conformance fixture, skipping the test when they are not present."""
    if FIXTURES_DIR is None:
        pytest.skip("the agentprocess conformance fixtures are not present (set AGENTPROCESS_FIXTURES)")
    return FIXTURES_DIR / name


@pytest.fixture(autouse=True)
def forget_cached_versions():
    # A rolled-back test can hand the next one the same version id for other content; production never can.
    from runs import snapshots, store, tools

    store._versions.clear()
    # Each test's rows are its own: a run's snapshot from an earlier test stands on rows rolled back,
    # as does the version a start_run found last.
    snapshots.forget_all()
    tools.started_versions.clear()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The production hasher is deliberately slow; tests create many people.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def plain_static_storage(settings):
    # The manifest storage needs collectstatic; rendered admin pages in tests only need the URLs.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def own_rate_limits(settings):
    """Give each test a cache key prefix of its own and room for many sign-ins from 127.0.0.1.

    The cache is shared (Redis or a table), so without this one test's sign-ins and failures would count
    against the next. A test of the limits sets ACCOUNT_RATE_LIMITS itself. Never cache.clear(): on Redis
    that empties the whole database.
    """
    settings.CACHES = {
        name: {**entry, "KEY_PREFIX": f"test-{uuid.uuid4().hex}"} for name, entry in settings.CACHES.items()
    }
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login": "10000/m/ip"}


@pytest.fixture
def org(db):
    """Return the default organization that migrations create (again after a transactional test's flush)."""
    return Organization.objects.get_or_create(slug=DEFAULT_ORGANIZATION, defaults={"name": "Default organization"})[0]


@pytest.fixture
def other_org(db):
    return Organization.objects.create(slug="other", name="Other organization")


@pytest.fixture
def make_user(org):
    """Return a factory for people: make_user(email, groups=(), operator=False, organization=org)."""

    def make(email, groups=(), operator=False, organization=None, password="a-Long-test-passw0rd", **extra):
        organization = organization or org
        user = User.objects.create_user(email, password, **extra)
        Membership.objects.create(user=user, organization=organization, is_operator=operator)
        for group in groups:
            if isinstance(group, str):
                group, _ = Group.objects.get_or_create(organization=organization, name=group)
            group.members.add(user)
        return user

    return make


@pytest.fixture
def publish(org):
    """Return publish(text_or_fixture_name, bindings=None, organization=org) -> ProcessVersion.

    Without bindings every role is bound to a group of the same name, created when missing.
    """

    def run(source, bindings=None, organization=None, user=None):
        organization = organization or org
        if "\n" not in source and source in CORE_FIXTURES + PROFILE_FIXTURES:
            text, folder_name = publishing.read_package(fixture_path(source))
        else:
            text, folder_name = source, None
        if bindings is None:
            parsed = parsing.parse_process(text)
            assert parsed.frontmatter is not None, parsed.issues
            bindings = {role: role for role in validation.role_names(parsed.frontmatter)}
        outcome = publishing.import_process(
            organization=organization,
            text=text,
            folder_name=folder_name,
            bindings=bindings,
            publish=True,
            created_by=user,
        )
        assert outcome.status in ("published", "unchanged"), outcome.lines()
        return outcome.version

    return run


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Under REQUIRE_NO_SKIPS (CI, on PostgreSQL and Redis) a skipped test fails the run."""
    import os

    skipped = terminalreporter.stats.get("skipped", [])
    if os.environ.get("REQUIRE_NO_SKIPS") and skipped:
        terminalreporter.write_line(f"REQUIRE_NO_SKIPS: {len(skipped)} test(s) skipped; CI runs everything.", red=True)
        config._require_no_skips_failed = True


def pytest_sessionfinish(session, exitstatus):
    import os

    if os.environ.get("REQUIRE_NO_SKIPS") and session.config.pluginmanager.get_plugin("terminalreporter"):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter.stats.get("skipped") and session.exitstatus == 0:
            session.exitstatus = 1
