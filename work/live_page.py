"""Pages that stay current without a reload: which change stamps a page watches, and the poll that asks.

A person's page watches their own stamp (notices), their groups' and, for an operator, the operators'
(items new, taken, handed over, commented on, closed), and the item or run it shows (runs/live.py).
The page is rendered with the stamp as it was before the view read anything, so a change made while
it was being read is seen at the first poll. static/js/live.js polls GET /live/ with that stamp: an
unchanged one answers 204 from the cache alone (after the session and user Django reads for every
signed-in request; a run page's poll also reads its run's revision, by key); a changed one answers 200 with the new stamp, and the script reads the page again
and swaps in its marked parts (`data-live-part`), never a part someone is typing in.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.models import Membership
from runs import live
from runs.assignments import group_ids
from runs.models import public_pk

# When the cache cannot be reached, pages refresh at this slower pace instead.
FALLBACK_SECONDS = 30


def _who(user) -> dict | None:
    def load():
        membership = Membership.objects.filter(user=user).values("organization_id", "is_operator").first()
        if membership is None:
            return None
        groups = list(user.process_groups.filter(organization_id=membership["organization_id"])
                      .values_list("pk", flat=True))
        return {"org": membership["organization_id"], "operator": membership["is_operator"], "groups": groups}

    return live.who(user, load)


def watched(user_id: int, who: dict, *, item: str = "", run: str = "") -> tuple[list[str], tuple | None]:
    """The stamps a person's page watches (theirs, their groups', the operators', its item's or run's),
    and its run as `live.stamp` takes it, whose revision it watches too."""
    keys = [live.person(user_id), *(live.group(pk) for pk in who["groups"])]
    if who["operator"]:
        keys.append(live.operators(who["org"]))
    item_pk = public_pk(item, "w") if item else None
    if item_pk is not None:
        keys.append(live.item(who["org"], item_pk))
    run_pk = public_pk(run, "r") if run else None
    if run_pk is None:
        return keys, None
    keys.append(live.run(who["org"], run_pk))
    return keys, (who["org"], run_pk)


def remember(request, identity, kwargs: dict) -> None:
    """Read the stamps a person's page watches, before the view reads what the page shows.

    The person's groups are read afresh (one query), and so are current for the polls that follow.
    """
    who = {"org": identity.organization.pk, "operator": identity.is_operator, "groups": group_ids(identity)}
    live.who(identity.user, lambda: who, fresh=True)
    shown = {"item": kwargs.get("item_id", ""), "run": kwargs.get("run_id", "")}
    shown = {key: value for key, value in shown.items() if isinstance(value, str) and value}
    keys, run = watched(identity.user.pk, who, **shown)
    request.live_page = {
        "url": reverse("live") + ("?" + urlencode(shown) if shown else ""),
        "since": live.stamp(keys, run=run) or "",
        "every": settings.LIVE_POLL_SECONDS,
    }


@never_cache
@require_GET
def poll(request):
    """204 when nothing this person's page shows changed since `since`; else 200 with the new stamp."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "Sign in again to keep this page current."}, status=403)
    who = _who(request.user)
    if who is None:
        return JsonResponse({"error": "You are not a member of an organization."}, status=403)
    keys, run = watched(request.user.pk, who, item=request.GET.get("item", "")[:40], run=request.GET.get("run", "")[:40])
    stamp = live.stamp(keys, run=run)
    if stamp is None:
        return JsonResponse({"stamp": "", "every": FALLBACK_SECONDS})
    if stamp == request.GET.get("since"):
        return HttpResponse(status=204)
    return JsonResponse({"stamp": stamp, "every": settings.LIVE_POLL_SECONDS})
