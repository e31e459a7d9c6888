from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings


class AccountAdapter(DefaultAccountAdapter):
    """People are added by an administrator; open sign-up is off unless ACCOUNT_OPEN_SIGNUP is set."""

    def is_open_for_signup(self, request):
        return getattr(settings, "ACCOUNT_OPEN_SIGNUP", False)
