"""What this server offers: the tools and the profiles it can honour now (describe, publication)."""

from django.conf import settings

from processes import spec

TOOLS = spec.TOOLS  # every tool tools.md defines

# Profiles the engine implements; check-1 is honoured only while an evaluator is configured.
IMPLEMENTED_PROFILES = ("parallel-1", "check-1")


def evaluator_configured() -> bool:
    return bool(settings.CHECK_EVALUATOR_URL and settings.CHECK_EVALUATOR_MODEL)


def enabled_profiles() -> frozenset[str]:
    profiles = {p for p in IMPLEMENTED_PROFILES if p != "check-1" or evaluator_configured()}
    return frozenset(profiles)


def check_unavailable_reason() -> str | None:
    if "check-1" not in IMPLEMENTED_PROFILES:
        return None
    return None if evaluator_configured() else "no evaluator is configured (CHECK_EVALUATOR_URL)"


def check_limits() -> dict:
    """Return the check-1 defaults `describe.limits` reports (check.md §5)."""
    # getattr: the settings may predate these names.
    return {
        "checkPass": getattr(settings, "CHECK_PASS", 0.9),
        "checkFail": getattr(settings, "CHECK_FAIL", None),
        "checkConfidence": getattr(settings, "CHECK_CONFIDENCE", 0.8),
        "checkStateBytes": getattr(settings, "CHECK_STATE_BYTES", 65536),
    }


def offered_tools() -> frozenset[str]:
    return frozenset(TOOLS)
