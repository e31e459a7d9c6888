"""Show every moment on a signed-in person's pages in the time zone they chose."""

from __future__ import annotations

import contextlib
import zoneinfo

from django.db import InterfaceError, OperationalError
from django.utils import timezone


class PersonTimeZone:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        try:
            zone = getattr(user, "time_zone", "") if user is not None and user.is_authenticated else ""
        except (OperationalError, InterfaceError):
            # The database is unreachable while the session is read. The zone only dresses up moments, so
            # go on in UTC: the view reads the person again and answers an outage as it does (the API with
            # `retry`), where an exception here would be a 500.
            zone = ""
        timezone.deactivate()
        if zone and zone != "UTC":
            with contextlib.suppress(zoneinfo.ZoneInfoNotFoundError, ValueError):  # one no longer known: UTC
                timezone.activate(zoneinfo.ZoneInfo(zone))
        return self.get_response(request)
