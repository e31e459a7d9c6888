from rest_framework.parsers import JSONParser
from rest_framework.views import exception_handler as drf_exception_handler


class StrictJSONParser(JSONParser):
    pass


def exception_handler(exc, context):
    return drf_exception_handler(exc, context)
