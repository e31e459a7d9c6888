"""A document checked (spec §2, today's capabilities) and stored as a draft, and what a draft still needs: its roles, systems and definition."""

from django.db import transaction

from accounts.models import Group, Organization
from processes import capabilities, hashing, parsing, validation
from processes.definition import Definition, compile_definition, declared_frontmatter
from processes.models import Draft, ProcessVersion
from processes.publishing.packages import max_process_bytes
from processes.publishing.results import ImportResult


def validate(frontmatter: dict, folder_name: str | None) -> list[str]:
    """Validate against what this server offers right now."""
    return validation.validate_process(
        frontmatter,
        folder_name=folder_name or None,
        profiles=capabilities.enabled_profiles(),
        tools=capabilities.offered_tools(),
        check_unavailable_reason=capabilities.check_unavailable_reason(),
    )


def storage_issues(body: str) -> list[str]:
    # PostgreSQL text cannot hold U+0000; the parser already refuses it in the frontmatter.
    if "\x00" in body:
        return ["body: contains a NUL character (U+0000), which cannot be stored"]
    return []


def content_hash_of(frontmatter: dict, body: str) -> tuple[str | None, list[str]]:
    try:
        return hashing.content_hash(frontmatter, body), []
    except Exception as exc:  # the canonical JSON refuses values no validator anticipated
        return None, [f"frontmatter: cannot be hashed as RFC 8785 canonical JSON ({exc})"]


def document_text(text: str | bytes) -> str:
    """Return a document as text that can be stored and shown again, whatever bytes it held."""
    # Bytes that are not UTF-8, lone surrogates and NUL become U+FFFD; an accepted document has
    # none of them, so for it this is exact.
    if isinstance(text, str):
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    else:
        text = bytes(text).decode("utf-8", errors="replace")
    return text.replace("\x00", "\ufffd")


def _latest_version(organization: Organization, name: str) -> ProcessVersion | None:
    return (
        ProcessVersion.objects.filter(process__organization=organization, process__name=name)
        .order_by("-number")
        .first()
    )


def _text_size(text: str | bytes) -> int:
    return len(text) if isinstance(text, bytes | bytearray) else len(text.encode("utf-8", errors="replace"))


def store_draft(
    *, organization: Organization, text: str | bytes, folder_name: str | None, created_by
) -> ImportResult:
    limit = max_process_bytes()
    if _text_size(text) > limit:
        return ImportResult(name="", issues=[f"document: is larger than the limit of {limit} bytes"])
    parsed = parsing.parse_process(text, max_bytes=limit)
    frontmatter = parsed.frontmatter
    issues = list(parsed.issues)
    if frontmatter is not None:
        issues += validate(frontmatter, folder_name)
    issues += storage_issues(parsed.body)
    raw_name = frontmatter.get("name") if isinstance(frontmatter, dict) else None
    name = raw_name[:64] if isinstance(raw_name, str) else ""
    sha256 = None
    if frontmatter is not None and not issues:
        sha256, hash_issues = content_hash_of(frontmatter, parsed.body)
        issues += hash_issues
    if issues:
        return ImportResult(name=name, issues=issues)
    latest = _latest_version(organization, name)
    if latest is not None and latest.sha256 == sha256:
        return ImportResult(name=name, unchanged=latest, sha256=sha256)
    draft = Draft.objects.create(
        organization=organization,
        name=name,
        source=document_text(text),
        folder_name=folder_name or "",
        frontmatter=frontmatter,
        body=parsed.body,
        created_by=created_by,
    )
    roles = validation.role_names(frontmatter)
    return ImportResult(
        name=name,
        draft=draft,
        roles=roles,
        unbound_roles=list(roles),
        systems=validation.required_systems(frontmatter),
        sha256=sha256,
    )


@transaction.atomic
def import_draft(
    *,
    organization: Organization,
    text: str | bytes,
    folder_name: str | None = None,
    created_by=None,
) -> ImportResult:
    """Parse and validate a PROCESS.md and store it as a draft, unless it equals the latest version."""
    return store_draft(organization=organization, text=text, folder_name=folder_name, created_by=created_by)


def draft_roles(draft: Draft) -> list[str]:
    """Return the draft's role names in step order, or none when the draft was refused."""
    if draft.issues or not isinstance(draft.frontmatter, dict):
        return []
    return validation.role_names(draft.frontmatter)


def draft_systems(draft: Draft) -> list[str]:
    """Return the systems the draft's ``requires`` names, shown and never checked (spec §7)."""
    if draft.issues or not isinstance(draft.frontmatter, dict):
        return []
    return validation.required_systems(draft.frontmatter)


def draft_definition(draft: Draft) -> Definition | None:
    """Return the step graph of a draft the server accepted, or None for a refused one."""
    if draft.issues or not isinstance(draft.frontmatter, dict):
        return None
    return compile_definition(declared_frontmatter(draft.source, draft.frontmatter), draft.body)


def unbound_roles(draft: Draft) -> list[str]:
    """Return the draft's roles that have no group yet."""
    return [role for role in draft_roles(draft) if role not in (draft.bindings or {})]


def bound_groups(draft: Draft) -> dict[str, Group]:
    """Return the groups the draft's roles are bound to, skipping groups that no longer exist."""
    ids = {role: gid for role, gid in (draft.bindings or {}).items()}
    groups = Group.objects.in_bulk(list(ids.values()))
    return {role: groups[gid] for role, gid in ids.items() if gid in groups}


def suggested_bindings(draft: Draft) -> dict[str, Group]:
    """Return the draft's bindings, falling back to the latest version's group for the same role."""
    suggestions = {}
    latest = _latest_version(draft.organization, draft.name) if draft.name else None
    if latest is not None:
        suggestions = {b.role: b.group for b in latest.bindings.select_related("group")}
    suggestions.update(bound_groups(draft))
    return {role: suggestions[role] for role in draft_roles(draft) if role in suggestions}
