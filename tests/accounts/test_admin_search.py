"""Every admin list with a search box finds nothing for an overlong search, and says why, on any database
(SQLite refuses a LIKE pattern over 50,000 bytes; PostgreSQL would scan every row for nothing)."""

import pytest
from allauth.idp.oidc.models import Client
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.hashers import make_password
from django.urls import reverse

from accounts.admin import MAX_SEARCH, CappedSearch
from accounts.models import Agent
from processes.models import Draft
from tests.runs.conftest import publish_text
from tests.work.conftest import PURCHASE

pytestmark = pytest.mark.django_db


def _searchable():
    for model in apps.get_models():
        if admin.site.is_registered(model) and admin.site.get_model_admin(model).search_fields:
            yield model


def test_every_admin_list_with_a_search_caps_it():
    searchable = list(_searchable())
    assert len(searchable) >= 8
    for model in searchable:
        assert isinstance(admin.site.get_model_admin(model), CappedSearch), model._meta.label


@pytest.fixture
def rows(org, make_user):
    """A row in every list, so that each search is matched against something (an empty table is never)."""
    version = publish_text(org, PURCHASE)
    Draft.objects.create(organization=org, name="purchase", source=PURCHASE)
    Agent.objects.create(organization=org, name="screener")
    Client.objects.create(id="a-client", name="A client", secret=make_password(None))
    return version


@pytest.mark.parametrize("model", list(_searchable()), ids=lambda model: model._meta.label)
def test_an_overlong_search_finds_nothing_and_says_why(client, make_user, rows, model):
    client.force_login(make_user("staff@example.com", is_staff=True, is_superuser=True))
    assert model.objects.exists()
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    answer = client.get(url, {"q": "x" * 100_000})
    assert answer.status_code == 200
    assert f"A search can be at most {MAX_SEARCH} characters long; this one is 100000." in answer.content.decode()
    assert answer.context["cl"].result_count == 0
    # A search within the cap still searches.
    assert client.get(url, {"q": "x" * MAX_SEARCH}).status_code == 200
