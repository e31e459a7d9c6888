"""What every people page shares: the person and operator decorators, refusals in words, request ids and public ids."""

import functools
import re
import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from accounts.identity import Identity
from runs import files
from runs.errors import Forbidden, NotFound, ToolError
from runs.models import public_pk
from work import live_page

PAGE_SIZE = 50
# Which of an item page's forms a decision comes from; each form keeps its own typed values and issues.
FORM_OF = {
    "completed": "complete",
    "approved": "approve",
    "rejected": "reject",
    "returned": "return",
    "failed": "fail",
}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
UPLOAD_ID = re.compile(r"^f_[0-9a-f]{1,64}$")


def person_page(view):
    """Require a signed-in member of an organization and call the view with their human identity."""

    @functools.wraps(view)
    @login_required
    def wrapper(request, *args, **kwargs):
        identity = Identity.for_user(request.user)
        if identity is None:
            return render(request, "accounts/no_membership.html", status=403)
        live_page.remember(request, identity, kwargs)  # before the page reads anything it shows
        with files.serving(request):  # links made here (in emails sent after a decision) name this host
            return view(request, identity, *args, **kwargs)

    return wrapper


def operator_page(view):
    """Require an operator of an organization (others get a plain 403) and call the view with their identity."""

    @functools.wraps(view)
    @person_page
    def wrapper(request, identity: Identity, *args, **kwargs):
        if not identity.is_operator:
            return refused(request, Forbidden("Only the operators of your organization see these figures."))
        return view(request, identity, *args, **kwargs)

    return wrapper


def refused(request, error: ToolError):
    """Render a refusal the person cannot fix on this page: not found is a 404, forbidden a 403."""
    if isinstance(error, NotFound):
        raise Http404(error.message)
    return render(request, "work/refused.html", {"error": error}, status=error.status)


def request_id(value: str | None) -> str:
    """Return the form's requestId when it is one this server could have issued, else a new one."""
    return value if isinstance(value, str) and _UUID.match(value) else str(uuid.uuid4())


def new_request_id() -> str:
    return str(uuid.uuid4())


def key_of(public_id: str, prefix: str) -> int:
    pk = public_pk(public_id, prefix)
    if pk is None:
        raise Http404("No such page.")
    return pk
