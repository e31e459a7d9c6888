"""The agent tools over REST: `POST /api/tools/<tool>` with the tool's arguments as the JSON body."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from base import json_text
from processes.capabilities import TOOLS
from runs import files
from runs.errors import ToolError, database_unavailable
from runs.tools import call_tool

from .parsers import too_large

log = logging.getLogger(__name__)

STATUS_UNAUTHENTICATED = 401


def envelope_error(error: dict, http_status: int, headers: dict | None = None) -> Response:
    return Response({"ok": False, "error": error}, status=http_status, headers=headers)


def exception_handler(exc, context):
    """Render the errors this API knows as the tools.md envelope; anything else stays a 500."""
    if isinstance(exc, ToolError):
        return envelope_error(exc.as_error(), exc.status)
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database is unreachable, even before the tool ran (the bearer-token check): a transient state.
        log.warning("%s: database unavailable: %s", context["request"].path, exc)
        error = database_unavailable()
        return envelope_error(error.as_error(), error.status)
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        response = drf_exception_handler(exc, context)
        headers = {"WWW-Authenticate": response.get("WWW-Authenticate", 'Bearer realm="agentprocess"')}
        return envelope_error(
            {"code": "forbidden", "message": f"Authentication required: {exc.detail}"},
            STATUS_UNAUTHENTICATED,
            headers,
        )
    if isinstance(exc, exceptions.ParseError):
        return envelope_error({"code": "invalid", "message": str(exc.detail), "issues": ["body: not JSON"]}, 400)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return envelope_error({"code": "invalid", "message": str(exc.detail)}, 415)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return envelope_error({"code": "invalid", "message": str(exc.detail)}, 405)
    if isinstance(exc, exceptions.PermissionDenied):
        challenge = getattr(exc, "challenge", None)
        headers = {"WWW-Authenticate": challenge} if challenge else None
        return envelope_error({"code": "forbidden", "message": str(exc.detail)}, 403, headers)
    return drf_exception_handler(exc, context)


class ToolView(APIView):
    """One tool call; the response is always the tools.md envelope."""

    @extend_schema(
        operation_id="call_tool",
        parameters=[OpenApiParameter("tool", str, OpenApiParameter.PATH, enum=list(TOOLS))],
        request={"application/json": {"type": "object"}},
        responses={200: {"type": "object"}, 400: {"type": "object"}, 401: {"type": "object"}},
        examples=[OpenApiExample("describe", value={})],
        description="Call one agentprocess tool. The body is the tool's arguments (tools.md); the response "
        "is `{ok: true, data}` or `{ok: false, error: {code, message, issues?}}`.",
    )
    def post(self, request, tool: str):
        identity = request.auth
        if identity is None:
            raise exceptions.NotAuthenticated("send a bearer token (Authorization: Bearer …) or sign in")
        with files.serving(request):
            try:
                arguments = request.data
            except RequestDataTooBig as exc:
                raise too_large(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) from exc
            data = call_tool(identity, tool, arguments)
        # The answer's bytes as DRF's JSON renderer writes them, in a plain response: a tool call's answer
        # is JSON whatever the request accepts, so it needs none of a DRF Response's negotiated rendering.
        return HttpResponse(json_text.rendered({"ok": True, "data": data}, _RENDERER), content_type=_RENDERER.media_type)


_RENDERER = JSONRenderer()
