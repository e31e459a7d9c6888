"""DATABASE_URL and its companions become the DATABASES entry the deploy guide describes."""

import pytest

from config.settings import database_from_url

URL = "postgres://app:secret@db.internal:5432/process"


def test_postgres_binds_on_the_server_and_prepares_repeated_statements(monkeypatch):
    monkeypatch.delenv("DATABASE_PREPARE_THRESHOLD", raising=False)
    entry = database_from_url(URL)
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["NAME"], entry["USER"], entry["HOST"], entry["PORT"]) == ("process", "app", "db.internal", "5432")
    assert entry["OPTIONS"]["server_side_binding"] is True
    assert entry["OPTIONS"]["prepare_threshold"] == 5


@pytest.mark.parametrize(("value", "expected"), [("0", None), ("2", 2)])
def test_prepared_statements_follow_the_environment(monkeypatch, value, expected):
    # docs/deploy.md: 0 turns preparing off, for a pooler that cannot carry prepared statements.
    monkeypatch.setenv("DATABASE_PREPARE_THRESHOLD", value)
    assert database_from_url(URL)["OPTIONS"]["prepare_threshold"] == expected


def test_sqlite_urls_need_no_server_options():
    entry = database_from_url("sqlite:///tmp/x.sqlite3")
    assert entry["ENGINE"] == "django.db.backends.sqlite3"
    assert "server_side_binding" not in entry["OPTIONS"]


def test_an_unknown_scheme_is_refused_by_name():
    with pytest.raises(ValueError, match="mysql"):
        database_from_url("mysql://x@y/z")
