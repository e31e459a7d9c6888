"""Roles bound to the organization's groups, or to groups created for them by name (spec §7)."""

from collections.abc import Mapping

from django.db import IntegrityError, transaction

from accounts.models import Group, Organization
from processes.models import Draft
from processes.publishing.drafts import draft_roles, unbound_roles
from processes.publishing.results import BindingError


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


def bind_in_transaction(
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
    unbound = bind_in_transaction(draft=draft, bindings=bindings, new_groups=new_groups)
    draft.refresh_from_db(fields=["bindings"])
    return unbound


def groups_by_name(organization: Organization, bindings: Mapping[str, str]) -> dict[str, Group]:
    """Map role → group, creating each named group in the organization when it is missing."""
    groups = {}
    for role, name in bindings.items():
        groups[role], _ = Group.objects.get_or_create(organization=organization, name=name)
    return groups


def group_name_issues(bindings: Mapping[str, str]) -> list[str]:
    max_length = Group._meta.get_field("name").max_length
    return [
        f"role '{role}': group name must be 1 to {max_length} characters"
        for role, name in bindings.items()
        if not isinstance(name, str) or not name.strip() or len(name) > max_length
    ]
