"""The request body parser for the tools API."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from base import json_text
from base.params import read_integer
from base.storable import MAX_DEPTH, depth_exceeds
from runs.errors import TooLarge


def refuse_constant(name: str):
    """Refuse NaN and Infinity, which json.loads would otherwise accept."""
    raise ValueError(f"{name} is not a JSON number")


def too_large(limit: int) -> TooLarge:
    return TooLarge("The request body is larger than this server accepts.", [f"body: larger than {limit} bytes"])


class StrictJSONParser(JSONParser):
    """JSON without NaN or Infinity (not JSON; could not be stored or hashed), and of bounded depth."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if (read_integer(str(declared)) or 0) > limit:
            raise too_large(limit)
        try:
            raw = stream.read(limit + 1) if stream is not None else b""
            if len(raw) > limit:
                raise too_large(limit)
            text = raw.decode("utf-8")
            value = json_text.loads(text, parse_constant=refuse_constant)
        except RequestDataTooBig as exc:
            raise too_large(limit) from exc
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise exceptions.ParseError(f"The body is not valid JSON: {str(exc)[:200]}") from exc
        if depth_exceeds(value, MAX_DEPTH):
            raise exceptions.ParseError(f"The body nests deeper than {MAX_DEPTH} levels.")
        return value
