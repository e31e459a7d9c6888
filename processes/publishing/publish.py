"""A bound draft published as an immutable, content-hashed version (spec §6 rule 5), or `unchanged` when the content equals the latest."""

from django.db import transaction

from processes import parsing, validation
from processes.models import Draft, Process, ProcessVersion, RoleBinding
from processes.publishing.drafts import bound_groups, content_hash_of, storage_issues, validate
from processes.publishing.packages import max_process_bytes
from processes.publishing.results import PublishError, PublishResult


def publish_in_transaction(*, draft: Draft, published_by) -> PublishResult:
    # Locking the draft keeps two requests from publishing it twice.
    draft = Draft.objects.select_for_update(of=("self",)).select_related("organization").get(pk=draft.pk)
    label = draft.name or "(unnamed)"
    if draft.published_version_id is not None:
        version = draft.published_version
        raise PublishError([f"draft {label}: is already published as version {version.number}"])
    if draft.issues or not isinstance(draft.frontmatter, dict):
        raise PublishError(list(draft.issues) or [f"draft {label}: has no frontmatter"])
    # The hash is of the parsed document (spec §6 rule 5), so the source is parsed again rather than
    # trusting the stored JSON, which a database may hand back with 1e21 turned into an integer.
    parsed = parsing.parse_process(draft.source, max_bytes=max_process_bytes())
    if parsed.frontmatter is None or parsed.issues:
        raise PublishError(list(parsed.issues) or [f"draft {label}: has no frontmatter"])
    frontmatter, body = parsed.frontmatter, parsed.body
    issues = validate(frontmatter, draft.folder_name) + storage_issues(body)
    sha256, hash_issues = content_hash_of(frontmatter, body)
    issues += hash_issues
    roles = validation.role_names(frontmatter)
    groups = bound_groups(draft)
    for role in roles:
        if role not in (draft.bindings or {}):
            issues.append(f"role '{role}': is not bound to a group")
        elif role not in groups:
            issues.append(f"role '{role}': its group no longer exists; bind it again")
        elif groups[role].organization_id != draft.organization_id:
            issues.append(f"role '{role}': group '{groups[role].name}' belongs to another organization")
    if issues:
        raise PublishError(issues)
    process, _ = Process.objects.get_or_create(organization=draft.organization, name=frontmatter["name"])
    # The row lock serializes publishers of one process, so each takes a distinct number N+1.
    process = Process.objects.select_for_update().get(pk=process.pk)
    latest = process.versions.order_by("-number").first()
    if latest is not None and latest.sha256 == sha256:
        draft.published_version = latest
        draft.save(update_fields=["published_version"])
        return PublishResult(version=latest, unchanged=True)
    version = ProcessVersion.objects.create(
        process=process,
        number=(latest.number if latest else 0) + 1,
        sha256=sha256,
        frontmatter=frontmatter,
        body=body,
        source=draft.source,
        published_by=published_by,
    )
    RoleBinding.objects.bulk_create(
        RoleBinding(version=version, role=role, group=groups[role]) for role in roles
    )
    draft.published_version = version
    draft.save(update_fields=["published_version"])
    return PublishResult(version=version)


@transaction.atomic
def publish_draft(*, draft: Draft, published_by=None) -> PublishResult:
    """Publish a fully bound, valid draft as the process's next version, or report it unchanged."""
    result = publish_in_transaction(draft=draft, published_by=published_by)
    draft.refresh_from_db()
    return result
