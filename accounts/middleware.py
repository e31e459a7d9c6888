"""A signed-in person's pages: in the time zone they chose, and for staff behind a second factor if required."""

from __future__ import annotations

import contextlib
import zoneinfo

from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.shortcuts import redirect
from django.urls import Resolver404, resolve
from django.utils import timezone


class PersonTimeZone:
    """Show every moment on a signed-in person's pages in the time zone they chose."""

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


# What a staff person without an authenticator may still open: setting one up (allauth asks for the
# password again first when the sign-in is not recent) and signing out.
TWO_FACTOR_SETUP = {
    "mfa_index",
    "mfa_activate_totp",
    "mfa_reauthenticate",
    "account_reauthenticate",
    "account_logout",
    "mfa_view_recovery_codes",
    "mfa_generate_recovery_codes",
    "mfa_download_recovery_codes",
}


class StaffTwoFactor:
    """With STAFF_REQUIRE_MFA, send a signed-in staff person who has no authenticator to set one up first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if (
            settings.STAFF_REQUIRE_MFA
            and user is not None
            and user.is_authenticated
            and user.is_staff
            and not is_mfa_enabled(user)
        ):
            try:
                name = resolve(request.path_info).url_name
            except Resolver404:
                name = None
            if name not in TWO_FACTOR_SETUP:
                return redirect("mfa_activate_totp")
        return self.get_response(request)
