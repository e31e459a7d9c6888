"""Placeholder; replaced by the OAuth bearer-token authentication."""
from rest_framework.authentication import BaseAuthentication, SessionAuthentication


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        return None


class SameOriginSessionAuthentication(SessionAuthentication):
    pass
