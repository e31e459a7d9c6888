"""Every limit and lockout counts in one cache all workers and nodes share: never a per-process one."""

import os

from django.conf import settings


def test_the_default_cache_is_shared_by_every_worker():
    backend = settings.CACHES["default"]["BACKEND"]
    if os.environ.get("REDIS_URL"):
        assert backend == "django.core.cache.backends.redis.RedisCache"
    else:
        assert backend == "django.core.cache.backends.db.DatabaseCache"


def test_the_pages_change_stamps_are_shared_when_there_is_redis():
    live = settings.CACHES[settings.LIVE_CACHE]
    if os.environ.get("REDIS_URL"):
        assert live["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
        assert live["KEY_PREFIX"] != settings.CACHES["default"]["KEY_PREFIX"]
