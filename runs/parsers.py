"""The request body parser for the tools API."""

import json

from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions
from rest_framework.parsers import JSONParser


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


class StrictJSONParser(JSONParser):
    """JSON without NaN or Infinity, which are not JSON and could not be stored or hashed."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            text = stream.read().decode("utf-8")
            return json.loads(text, parse_constant=_refuse_constant)
        except RequestDataTooBig as exc:
            raise exceptions.ParseError("The request body is larger than this server accepts.") from exc
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise exceptions.ParseError(f"The body is not valid JSON: {str(exc)[:200]}") from exc
