"""What answers before or instead of a view: text no database can store in a path, query or cookie; a
number a page cannot read; and the count of every response."""

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.shortcuts import render

from base import metrics
from base.params import BadParameter
from base.storable import text_problem
from runs.errors import Invalid


def _first_problem(pairs) -> str | None:
    for key, values in pairs:
        for text in (key, *values):
            problem = text_problem(text)
            if problem:
                return problem
    return None


class RefuseUnstorableText:
    """A path no page has is 404; a query or cookie no form could have sent is 400 (base.storable).

    It runs before the session is read, so no look-up ever carries such text to the database.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if text_problem(request.path_info):
            return HttpResponseNotFound("Not found: no page has this path.", content_type="text/plain")
        problem = _first_problem(request.GET.lists()) or _first_problem(
            (name, [value]) for name, value in request.COOKIES.items()
        )
        if problem:
            return HttpResponseBadRequest(f"Bad request: the query or a cookie: {problem}.",
                                          content_type="text/plain")
        return self.get_response(request)


class CountResponses:
    """Count every response by its status class, for the 5xx rate (base.metrics.HTTP_RESPONSES)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        metrics.HTTP_RESPONSES.labels(f"{response.status_code // 100}xx").inc()
        return response


class RefuseBadParameters:
    """A page sent a number it cannot read (base.params.BadParameter) answers 400, naming every problem."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, BadParameter):
            return None
        error = Invalid("This page cannot be shown as asked.", exception.problems)
        return render(request, "work/refused.html", {"error": error}, status=400)
