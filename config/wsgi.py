"""The WSGI application: Django, with chunked request bodies read as bodies of known length."""

import io
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class ChunkedBodies:
    """Give a body sent with `Transfer-Encoding: chunked` and no Content-Length its length.

    Django reads exactly CONTENT_LENGTH bytes of a body, so without one it reads none. A server that
    ends the input stream at the body's end (PEP 3333's `wsgi.input_terminated`, which gunicorn sets)
    lets it be read here, up to one byte past the largest body accepted: what is larger stays
    larger and is refused as such.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if (
            not environ.get("CONTENT_LENGTH")
            and environ.get("wsgi.input_terminated")
            and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        ):
            body = environ["wsgi.input"].read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


application = ChunkedBodies(get_wsgi_application())
