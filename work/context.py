"""What the top bar of every page needs: how many of the signed-in person's notices are unread."""

from runs.models import Notification


def unread_notices(request) -> dict:
    """The count is read only when a page shows it (the top bar of a signed-in person's page)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"unread_notices": lambda: Notification.objects.filter(user=user, read_at__isnull=True).count()}
