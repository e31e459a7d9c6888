def test_healthz_checks_the_database_and_the_broker(client, db, settings):
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "in-process"}}


def test_healthz_reports_an_unreachable_broker(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"].startswith("error")


def test_healthz_with_the_real_redis(client, db, settings):
    import os

    import pytest

    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL is not set")
    settings.REDIS_URL = url
    assert client.get("/healthz").json()["checks"]["broker"] == "ok"
