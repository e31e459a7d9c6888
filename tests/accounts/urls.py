"""The project's URLs plus a protected dummy API view that reports who is calling."""

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import HasIdentity
from config.urls import urlpatterns as project_urlpatterns


def describe(identity):
    """Return the parts of an identity the tests look at."""
    return {
        "organization": identity.organization.slug,
        "kind": identity.kind,
        "ref": identity.ref,
        "is_human": identity.is_human,
        "via_client": identity.via_client,
        "is_operator": identity.is_operator,
        "email": identity.email,
    }


class WhoAmI(APIView):
    permission_classes = [HasIdentity]

    def get(self, request):
        return Response(describe(request.auth))

    def post(self, request):
        return Response(describe(request.auth))


urlpatterns = [path("api/test/whoami", WhoAmI.as_view()), *project_urlpatterns]
