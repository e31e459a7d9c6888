"""What every page's top bar and live script need: how many of the signed-in person's notices are unread,
whether they are an operator (who has the operations page), and the stamps a person's page polls with."""

from runs.models import Notification


def unread_notices(request) -> dict:
    """The count is read only when a page shows it (the top bar of a signed-in person's page)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"unread_notices": lambda: Notification.objects.filter(user=user, read_at__isnull=True).count()}


def operator(request) -> dict:
    """Whether the signed-in person operates their organization: read only when a page asks."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def is_operator() -> bool:
        membership = getattr(user, "membership", None)
        return bool(membership and membership.is_operator)

    return {"is_operator": is_operator}


def live(request) -> dict:
    """What a page's live script needs (work.live_page): set only on a person's pages."""
    return {"live_page": getattr(request, "live_page", None)}
