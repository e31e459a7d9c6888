"""Import, bind and publish PROCESS.md documents (spec §2, §6 rule 5, §7).

The public entry points each open one transaction; the private ``_`` functions they share assume
they run inside one, so ``import_process`` does everything it does atomically.

Decisions on points the specification leaves open:

- ``import_draft`` stores a draft only for a document the server accepts. A refused document is
  answered with every issue and stores nothing: the importer still holds what they sent (a file, or
  the text the admin's import form shows again), and a draft that can never be published would only
  stand in the way. Nothing is stored either when the import is unchanged (the content hash equals
  the latest published version's). Drafts refused by earlier releases keep their issues and are
  shown, never bound or published.
- Publication parses and validates the draft's source again with today's capabilities, since a
  profile or a tool may have gone away since the import (spec §8: refused "at publication").
- A draft whose content equals the latest version when it is published creates no version; the
  result says ``unchanged`` and the draft points at that version.
- Role bindings live on the draft until publication and are then copied into RoleBindings, which
  never change; a later version is bound afresh (the importer is asked, spec §7).
- A role may be bound to a group created for it, named by the importer: in the admin a name some
  group of the organization already has (in any case) is refused, since the importer meant that
  group and should pick it; the command line binds to such a group instead (``--bind`` creates
  only what is missing).
- A zip holds ``PROCESS.md`` at its root (no folder name to check) or ``<folder>/PROCESS.md``
  (the folder name must equal ``name``). Only that member is decompressed, at most
  ``MAX_PROCESS_BYTES`` of it; any member name that is absolute or climbs out with ``..`` refuses
  the whole archive.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import Literal

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Group, Organization
from processes import capabilities, hashing, parsing, validation
from processes.definition import Definition, compile_definition, declared_frontmatter
from processes.models import Draft, Process, ProcessVersion, RoleBinding

PROCESS_FILE = "PROCESS.md"
MAX_ARCHIVE_MEMBERS = 1000


class PublicationError(Exception):
    """Carry every issue that stopped an operation, one string each."""

    def __init__(self, issues: list[str]):
        self.issues = list(issues)
        super().__init__("; ".join(self.issues))


class PackageError(PublicationError):
    """Raised when a path, folder or zip cannot be read as a process package."""


class BindingError(PublicationError):
    """Raised when role bindings name unknown roles or groups of another organization."""


class PublishError(PublicationError):
    """Raised when a draft cannot be published: it has issues, or roles are unbound."""


@dataclass(frozen=True)
class ImportResult:
    """What one import produced: refused issues, an unchanged version, or a draft to bind."""

    name: str
    issues: list[str] = field(default_factory=list)
    draft: Draft | None = None
    unchanged: ProcessVersion | None = None
    roles: list[str] = field(default_factory=list)
    unbound_roles: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    sha256: str | None = None

    @property
    def refused(self) -> bool:
        return bool(self.issues)


@dataclass(frozen=True)
class PublishResult:
    """The version a publication created, or the latest one when the content was unchanged."""

    version: ProcessVersion
    unchanged: bool = False


Status = Literal["refused", "unchanged", "draft", "published"]


@dataclass(frozen=True)
class ImportOutcome:
    """The end state of ``import_process``; ``lines()`` is what the command prints."""

    status: Status
    name: str
    issues: list[str] = field(default_factory=list)
    draft: Draft | None = None
    version: ProcessVersion | None = None
    roles: list[str] = field(default_factory=list)
    unbound_roles: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Return one line per issue when refused, otherwise the single summary line."""
        if self.status == "refused":
            return list(self.issues)
        if self.status == "published":
            assert self.version is not None
            return [f"published {self.name} version {self.version.number} sha256 {self.version.sha256}"]
        if self.status == "unchanged":
            assert self.version is not None
            return [f"unchanged {self.name} version {self.version.number} sha256 {self.version.sha256}"]
        return [draft_line(self.name, self.unbound_roles, self.systems)]


def draft_line(name: str, unbound_roles: list[str], systems: list[str]) -> str:
    """Word the one line that describes a draft still to be bound or published."""
    line = f"draft {name}: " + (
        f"roles to bind: {', '.join(unbound_roles)}" if unbound_roles else "ready to publish"
    )
    if systems:
        line += f"; requires systems: {', '.join(systems)}"
    return line


# --- reading packages -------------------------------------------------------------------------


def _max_process_bytes() -> int:
    return int(getattr(settings, "MAX_PROCESS_BYTES", 1024 * 1024))


def _max_archive_bytes() -> int:
    # A zip may carry more than PROCESS.md (profiles add files), so the archive gets the upload cap.
    return max(int(getattr(settings, "MAX_UPLOAD_BYTES", 10 * 1024 * 1024)), _max_process_bytes())


def read_package(path: str | os.PathLike) -> tuple[bytes, str | None]:
    """Read a PROCESS.md file, a folder holding one, or a zip of such a folder, as (bytes, folder name)."""
    where = os.fspath(path)
    try:
        info = os.stat(where)
    except FileNotFoundError:
        raise PackageError([f"{where}: no such file or folder"]) from None
    except OSError as exc:
        raise PackageError([f"{where}: cannot be read ({exc.strerror})"]) from None
    if stat.S_ISDIR(info.st_mode):
        # abspath, not resolve: the folder is named as the importer named it, symlink or not.
        folder_name = Path(os.path.abspath(where)).name
        return _read_file(os.path.join(where, PROCESS_FILE), _max_process_bytes()), folder_name
    if where.lower().endswith(".zip"):
        return read_zip(_read_file(where, _max_archive_bytes(), what="archive"), where=where)
    data = _read_file(where, _max_process_bytes())
    if _looks_like_zip(data):
        return read_zip(data, where=where)
    return data, None


def read_upload(data: bytes, *, filename: str = "") -> tuple[bytes, str | None]:
    """Read an uploaded PROCESS.md or zipped folder, as (bytes, folder name)."""
    where = filename or "upload"
    if filename.lower().endswith(".zip") or _looks_like_zip(data):
        if len(data) > _max_archive_bytes():
            raise PackageError([f"{where}: archive is larger than the limit of {_max_archive_bytes()} bytes"])
        return read_zip(data, where=where)
    if len(data) > _max_process_bytes():
        raise PackageError([f"{where}: is larger than the limit of {_max_process_bytes()} bytes"])
    return data, None


def read_zip(data: bytes, *, where: str = "archive") -> tuple[bytes, str | None]:
    """Find the one PROCESS.md in a zip and return (its bytes, its folder name or None)."""
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise PackageError([f"{where}: is not a readable zip archive"]) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ARCHIVE_MEMBERS:
            raise PackageError([f"{where}: holds more than {MAX_ARCHIVE_MEMBERS} files"])
        issues = [
            f"{where}: member {m.filename!r} {why}" for m in members if (why := _unsafe_member(m.filename))
        ]
        if issues:
            raise PackageError(issues)
        candidates = [m for m in members if not m.is_dir() and _candidate_folder(m.filename) is not False]
        if not candidates:
            raise PackageError([f"{where}: holds no {PROCESS_FILE} at its root or in one top folder"])
        if len(candidates) > 1:
            names = ", ".join(m.filename for m in candidates)
            raise PackageError([f"{where}: holds more than one {PROCESS_FILE} ({names}); zip one folder"])
        member = candidates[0]
        limit = _max_process_bytes()
        # The declared size can lie, so the read itself is bounded too (a zip bomb stops here).
        if member.file_size > limit:
            raise PackageError([f"{where}: {member.filename} is larger than the limit of {limit} bytes"])
        try:
            with archive.open(member) as handle:
                content = handle.read(limit + 1)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as exc:
            raise PackageError([f"{where}: {member.filename} cannot be decompressed ({exc})"]) from None
        if len(content) > limit:
            raise PackageError([f"{where}: {member.filename} is larger than the limit of {limit} bytes"])
        folder = _candidate_folder(member.filename)
        return content, folder or None


def _looks_like_zip(data: bytes) -> bool:
    # A PROCESS.md starts with "---", so a leading "PK" can only be an archive.
    return data[:2] == b"PK"


def _read_file(path: str, limit: int, *, what: str = "file") -> bytes:
    """Read at most ``limit`` bytes of a regular file, refusing a larger one."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise PackageError([f"{path}: is not a regular file"])
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise PackageError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise PackageError([f"{path}: is a folder, not a file"]) from None
    except OSError as exc:
        raise PackageError([f"{path}: cannot be read ({exc.strerror})"]) from None
    if len(data) > limit:
        raise PackageError([f"{path}: {what} is larger than the limit of {limit} bytes"])
    return data


def _unsafe_member(name: str) -> str | None:
    """Say why a zip member name could escape its folder, or None when it cannot."""
    if "\\" in name:
        return "uses a backslash, which some tools treat as a folder separator"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the archive with '..' (path traversal)"
    if "\x00" in name:
        return "contains a NUL character"
    return None


def _candidate_folder(name: str) -> str | Literal[False]:
    """Return '' for a root PROCESS.md, the folder for <folder>/PROCESS.md, False otherwise."""
    parts = PurePosixPath(name).parts
    if parts == (PROCESS_FILE,):
        return ""
    if len(parts) == 2 and parts[1] == PROCESS_FILE and parts[0] != "__MACOSX":
        return parts[0]
    return False


# --- import, bind, publish --------------------------------------------------------------------


def _validate(frontmatter: dict, folder_name: str | None) -> list[str]:
    """Validate against what this server offers right now."""
    return validation.validate_process(
        frontmatter,
        folder_name=folder_name or None,
        profiles=capabilities.enabled_profiles(),
        tools=capabilities.offered_tools(),
        check_unavailable_reason=capabilities.check_unavailable_reason(),
    )


def _storage_issues(body: str) -> list[str]:
    # PostgreSQL text cannot hold U+0000; the parser already refuses it in the frontmatter.
    if "\x00" in body:
        return ["body: contains a NUL character (U+0000), which cannot be stored"]
    return []


def _hash(frontmatter: dict, body: str) -> tuple[str | None, list[str]]:
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


def _import_draft(
    *, organization: Organization, text: str | bytes, folder_name: str | None, created_by
) -> ImportResult:
    limit = _max_process_bytes()
    if _text_size(text) > limit:
        return ImportResult(name="", issues=[f"document: is larger than the limit of {limit} bytes"])
    parsed = parsing.parse_process(text, max_bytes=limit)
    frontmatter = parsed.frontmatter
    issues = list(parsed.issues)
    if frontmatter is not None:
        issues += _validate(frontmatter, folder_name)
    issues += _storage_issues(parsed.body)
    raw_name = frontmatter.get("name") if isinstance(frontmatter, dict) else None
    name = raw_name[:64] if isinstance(raw_name, str) else ""
    sha256 = None
    if frontmatter is not None and not issues:
        sha256, hash_issues = _hash(frontmatter, parsed.body)
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
    return _import_draft(organization=organization, text=text, folder_name=folder_name, created_by=created_by)


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


def _binding_issues(draft: Draft, roles: list[str], bindings: Mapping[str, Group | None]) -> list[str]:
    issues = []
    for role, group in bindings.items():
        if role not in roles:
            known = ", ".join(roles) if roles else "none"
            issues.append(f"role '{role}': the process has no such role (its roles: {known})")
        elif group is None:
            continue
        elif not isinstance(group, Group) or group.pk is None:
            issues.append(f"role '{role}': must be bound to a saved group")
        elif group.organization_id != draft.organization_id:
            issues.append(
                f"role '{role}': group '{group.name}' belongs to organization '{group.organization.slug}', "
                f"not '{draft.organization.slug}'"
            )
    return issues


def check_new_group_names(*, organization: Organization, names: Mapping[str, str]) -> dict[str, str]:
    """Return role → why the group name given for it cannot be created in the organization."""
    max_length = Group._meta.get_field("name").max_length
    wanted = {role: name.strip() for role, name in names.items()}
    taken = _taken_group_names(organization, wanted.values())
    problems = {}
    for role, name in wanted.items():
        if not name:
            problems[role] = "type a name for the new group"
        elif len(name) > max_length:
            problems[role] = f"a group name is at most {max_length} characters (this one has {len(name)})"
        elif "\x00" in name:
            problems[role] = "a group name cannot contain a NUL character (U+0000)"
        elif name.casefold() in taken:
            problems[role] = (
                f"a group named '{taken[name.casefold()]}' already exists in organization "
                f"'{organization.slug}'; pick it from the list"
            )
    return problems


def _taken_group_names(organization: Organization, names) -> dict[str, str]:
    """Return casefolded name → existing name, for the names some group of the organization has."""
    folded = {name.casefold() for name in names if name}
    if not folded:
        return {}
    existing = Group.objects.filter(organization=organization).values_list("name", flat=True)
    return {name.casefold(): name for name in existing if name.casefold() in folded}


def _create_groups(organization: Organization, new_groups: Mapping[str, str]) -> dict[str, Group]:
    """Create one group per distinct name (two roles may share one) and return role → group."""
    created: dict[str, Group] = {}
    by_role = {}
    for role, name in new_groups.items():
        name = name.strip()
        key = name.casefold()
        if key not in created:
            try:
                with transaction.atomic():
                    created[key] = Group.objects.create(organization=organization, name=name)
            except IntegrityError:
                # Another request created it between the check and here.
                raise BindingError(
                    [f"role '{role}': a group named '{name}' was created meanwhile; pick it from the list"]
                ) from None
        by_role[role] = created[key]
    return by_role


def _bind_roles(
    *, draft: Draft, bindings: Mapping[str, Group | None], new_groups: Mapping[str, str] | None = None
) -> list[str]:
    draft = Draft.objects.select_for_update(of=("self",)).select_related("organization").get(pk=draft.pk)
    new_groups = dict(new_groups or {})
    issues = []
    if draft.published_version_id is not None:
        issues.append(f"draft {draft.name}: is already published")
    if draft.issues:
        issues.append(f"draft {draft.name or '(unnamed)'}: was refused at import and cannot be bound")
    roles = draft_roles(draft)
    issues += _binding_issues(draft, roles, {**dict.fromkeys(new_groups), **bindings})
    issues += [
        f"role '{role}': is given both a group and a new group's name"
        for role in new_groups
        if bindings.get(role) is not None
    ]
    problems = check_new_group_names(
        organization=draft.organization, names={r: n for r, n in new_groups.items() if r in roles}
    )
    issues += [f"role '{role}': {problem}" for role, problem in problems.items()]
    if issues:
        raise BindingError(issues)
    merged = dict(draft.bindings or {})
    for role, group in {**bindings, **_create_groups(draft.organization, new_groups)}.items():
        if group is None:
            merged.pop(role, None)
        else:
            merged[role] = group.pk
    draft.bindings = merged
    draft.save(update_fields=["bindings"])
    return unbound_roles(draft)


@transaction.atomic
def bind_roles(
    *, draft: Draft, bindings: Mapping[str, Group | None], new_groups: Mapping[str, str] | None = None
) -> list[str]:
    """Bind roles to the organization's groups (None unbinds) or to new ones; return the roles still unbound."""
    unbound = _bind_roles(draft=draft, bindings=bindings, new_groups=new_groups)
    draft.refresh_from_db(fields=["bindings"])
    return unbound


def _publish_draft(*, draft: Draft, published_by) -> PublishResult:
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
    parsed = parsing.parse_process(draft.source, max_bytes=_max_process_bytes())
    if parsed.frontmatter is None or parsed.issues:
        raise PublishError(list(parsed.issues) or [f"draft {label}: has no frontmatter"])
    frontmatter, body = parsed.frontmatter, parsed.body
    issues = _validate(frontmatter, draft.folder_name) + _storage_issues(body)
    sha256, hash_issues = _hash(frontmatter, body)
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
    result = _publish_draft(draft=draft, published_by=published_by)
    draft.refresh_from_db()
    return result


def _groups_by_name(organization: Organization, bindings: Mapping[str, str]) -> dict[str, Group]:
    """Map role → group, creating each named group in the organization when it is missing."""
    groups = {}
    for role, name in bindings.items():
        groups[role], _ = Group.objects.get_or_create(organization=organization, name=name)
    return groups


def _group_name_issues(bindings: Mapping[str, str]) -> list[str]:
    max_length = Group._meta.get_field("name").max_length
    return [
        f"role '{role}': group name must be 1 to {max_length} characters"
        for role, name in bindings.items()
        if not isinstance(name, str) or not name.strip() or len(name) > max_length
    ]


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
    result = _import_draft(
        organization=organization, text=text, folder_name=folder_name, created_by=created_by
    )
    if result.refused:
        return ImportOutcome(status="refused", name=result.name, issues=result.issues, draft=result.draft)
    if result.unchanged is not None:
        # Nothing is created, but a --bind naming a role the process lacks is still a mistake.
        roles = validation.role_names(result.unchanged.frontmatter)
        issues = [
            f"role '{role}': the process has no such role (its roles: {', '.join(roles) or 'none'})"
            for role in bindings
            if role not in roles
        ] + _group_name_issues(bindings)
        if issues:
            return ImportOutcome(status="refused", name=result.name, issues=issues)
        return ImportOutcome(status="unchanged", name=result.name, version=result.unchanged)
    draft = result.draft
    assert draft is not None
    name_issues = _group_name_issues(bindings)
    unknown = [role for role in bindings if role not in result.roles]
    if name_issues or unknown:
        issues = [
            f"role '{role}': the process has no such role (its roles: {', '.join(result.roles) or 'none'})"
            for role in unknown
        ] + name_issues
        raise _Abandoned(ImportOutcome(status="refused", name=result.name, issues=issues))
    unbound = result.unbound_roles
    if bindings:
        unbound = _bind_roles(draft=draft, bindings=_groups_by_name(organization, bindings))
        draft.refresh_from_db()
    common = {"name": result.name, "draft": draft, "roles": result.roles, "systems": result.systems}
    if not publish or unbound:
        return ImportOutcome(status="draft", unbound_roles=unbound, **common)
    try:
        published = _publish_draft(draft=draft, published_by=created_by)
    except PublishError as exc:
        return ImportOutcome(status="refused", issues=exc.issues, **common)
    draft.refresh_from_db()
    status: Status = "unchanged" if published.unchanged else "published"
    return ImportOutcome(status=status, version=published.version, **common)
