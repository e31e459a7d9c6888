"""The sections, registered in the order they run: each module's `@section` functions."""

import importlib

ORDER = ("mcp", "catalogue", "agents", "leases", "people", "ending", "waits", "idempotency", "isolation", "modes",
         "profiles", "rest", "answers")


def load() -> None:
    """Import every scenario module once, which registers its sections in ORDER."""
    for name in ORDER:
        importlib.import_module(f"{__name__}.{name}")
