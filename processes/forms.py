"""Forms for importing a PROCESS.md and binding a draft's roles in the admin."""

from django import forms
from django.conf import settings

from accounts.models import DEFAULT_ORGANIZATION, Group, Organization


class ImportForm(forms.Form):
    """Upload a PROCESS.md or a zipped folder into one organization."""

    organization = forms.ModelChoiceField(queryset=Organization.objects.all())
    file = forms.FileField(
        label="PROCESS.md or zipped folder",
        help_text="A PROCESS.md file, or a .zip of the process folder (its name must equal the process name).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        default = Organization.objects.filter(slug=DEFAULT_ORGANIZATION).first()
        if default is not None:
            self.fields["organization"].initial = default.pk

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = max(settings.MAX_UPLOAD_BYTES, settings.MAX_PROCESS_BYTES)
        if upload.size > limit:
            raise forms.ValidationError(f"The file is larger than the limit of {limit} bytes.")
        return upload

    def read(self) -> tuple[bytes, str]:
        """Return the uploaded bytes and file name."""
        upload = self.cleaned_data["file"]
        upload.seek(0)
        return upload.read(), upload.name or ""


class GroupChoiceField(forms.ModelChoiceField):
    """Choose a group by its name; every choice is in the draft's organization already."""

    def label_from_instance(self, obj):
        return obj.name


class BindingForm(forms.Form):
    """One group select per role, limited to the groups of the draft's organization."""

    def __init__(self, *args, roles: list[str], organization: Organization, initial_groups=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.roles = list(roles)
        initial_groups = initial_groups or {}
        queryset = Group.objects.filter(organization=organization).order_by("name")
        for index, role in enumerate(self.roles):
            group = initial_groups.get(role)
            self.fields[self.field_name(index)] = GroupChoiceField(
                queryset=queryset,
                required=False,
                label=role,
                empty_label="— choose a group —",
                initial=group.pk if group is not None else None,
            )

    @staticmethod
    def field_name(index: int) -> str:
        # Role names may hold characters a form prefix would not expect, so fields are numbered.
        return f"role_{index}"

    def bindings(self) -> dict[str, Group | None]:
        """Return role → chosen group, None for a role left without one."""
        return {role: self.cleaned_data.get(self.field_name(index)) for index, role in enumerate(self.roles)}

    def role_fields(self):
        """Yield (role, bound field) pairs for the template."""
        for index, role in enumerate(self.roles):
            yield role, self[self.field_name(index)]
