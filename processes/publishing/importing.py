"""`import_process`: read, import, bind and publish in one transaction, for the command line and scripts."""

import os
from collections.abc import Mapping

from django.db import transaction

from accounts.models import Organization
from processes import validation
from processes.publishing.binding import bind_in_transaction, group_name_issues, groups_by_name
from processes.publishing.drafts import store_draft
from processes.publishing.packages import read_package
from processes.publishing.publish import publish_in_transaction
from processes.publishing.results import ImportOutcome, PackageError, PublishError, Status


def import_process(
    *,
    organization: Organization,
    path: str | os.PathLike | None = None,
    text: str | bytes | None = None,
    folder_name: str | None = None,
    bindings: Mapping[str, str] | None = None,
    publish: bool = False,
    created_by=None,
) -> ImportOutcome:
    """Import from a path or a text, bind roles to groups by name (creating them), and publish on request."""
    if (path is None) == (text is None):
        raise TypeError("import_process needs exactly one of path= or text=")
    bindings = dict(bindings or {})
    if path is not None:
        try:
            text, folder_name = read_package(path)
        except PackageError as exc:
            return ImportOutcome(status="refused", name="", issues=exc.issues)
    try:
        with transaction.atomic():
            return _import_and_publish(
                organization=organization,
                text=text,
                folder_name=folder_name,
                bindings=bindings,
                publish=publish,
                created_by=created_by,
            )
    except _Abandoned as abandoned:
        # Raised inside the transaction so that nothing of a misdirected import is kept.
        return abandoned.outcome


class _Abandoned(Exception):
    """Roll back an import whose bindings are wrong, carrying the outcome to report."""

    def __init__(self, outcome: ImportOutcome):
        self.outcome = outcome
        super().__init__(outcome.issues)


def _import_and_publish(
    *,
    organization: Organization,
    text: str | bytes,
    folder_name: str | None,
    bindings: dict[str, str],
    publish: bool,
    created_by,
) -> ImportOutcome:
    result = store_draft(organization=organization, text=text, folder_name=folder_name, created_by=created_by)
    if result.refused:
        return ImportOutcome(status="refused", name=result.name, issues=result.issues, draft=result.draft)
    if result.unchanged is not None:
        # Nothing is created, but a --bind naming a role the process lacks is still a mistake.
        roles = validation.role_names(result.unchanged.frontmatter)
        issues = [
            f"role '{role}': the process has no such role (its roles: {', '.join(roles) or 'none'})"
            for role in bindings
            if role not in roles
        ] + group_name_issues(bindings)
        if issues:
            return ImportOutcome(status="refused", name=result.name, issues=issues)
        return ImportOutcome(status="unchanged", name=result.name, version=result.unchanged)
    draft = result.draft
    assert draft is not None
    name_issues = group_name_issues(bindings)
    unknown = [role for role in bindings if role not in result.roles]
    if name_issues or unknown:
        issues = [
            f"role '{role}': the process has no such role (its roles: {', '.join(result.roles) or 'none'})"
            for role in unknown
        ] + name_issues
        raise _Abandoned(ImportOutcome(status="refused", name=result.name, issues=issues))
    unbound = result.unbound_roles
    if bindings:
        unbound = bind_in_transaction(draft=draft, bindings=groups_by_name(organization, bindings))
        draft.refresh_from_db()
    common = {"name": result.name, "draft": draft, "roles": result.roles, "systems": result.systems}
    if not publish or unbound:
        return ImportOutcome(status="draft", unbound_roles=unbound, **common)
    try:
        published = publish_in_transaction(draft=draft, published_by=created_by)
    except PublishError as exc:
        return ImportOutcome(status="refused", issues=exc.issues, **common)
    draft.refresh_from_db()
    status: Status = "unchanged" if published.unchanged else "published"
    return ImportOutcome(status=status, version=published.version, **common)
