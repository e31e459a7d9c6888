"""Signed downloads of uploaded files (spec §5)."""

from django.http import Http404, HttpResponse
from django.utils.http import content_disposition_header

from .files import served_content_type, signature_valid
from .models import Upload


def download(request, public_id: str):
    """Serve an upload as an attachment when its link's signature is valid and unexpired."""
    if not signature_valid(public_id, request.GET.get("e", ""), request.GET.get("s", "")):
        raise Http404("This link is invalid or has expired.")
    upload = Upload.objects.filter(public_id=public_id).first()
    if upload is None:
        raise Http404("No such file.")
    response = HttpResponse(bytes(upload.content), content_type=served_content_type(upload.content_type))
    # RFC 6266: quoted when it can be, else filename* (RFC 8187), which carries any name, controls escaped.
    response["Content-Disposition"] = content_disposition_header(True, upload.file_name or "file")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
