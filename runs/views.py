"""Signed downloads of uploaded files (spec §5)."""

from django.http import Http404, HttpResponse

from .files import signature_valid
from .models import Upload


def download(request, public_id: str):
    """Serve an upload as an attachment when its link's signature is valid and unexpired."""
    if not signature_valid(public_id, request.GET.get("e", ""), request.GET.get("s", "")):
        raise Http404("This link is invalid or has expired.")
    upload = Upload.objects.filter(public_id=public_id).first()
    if upload is None:
        raise Http404("No such file.")
    response = HttpResponse(bytes(upload.content), content_type=upload.content_type or "application/octet-stream")
    safe_name = upload.file_name.replace('"', "").replace("\r", "").replace("\n", "")
    response["Content-Disposition"] = f'attachment; filename="{safe_name}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response
