"""Forms for importing a PROCESS.md and binding a draft's roles in the admin."""

from django import forms
from django.conf import settings

from accounts.models import DEFAULT_ORGANIZATION, Group, Organization
from processes import publishing

NEW_GROUP = "new"


class ImportForm(forms.Form):
    """Upload a PROCESS.md or a zipped folder, or paste a PROCESS.md, into one organization."""

    organization = forms.ModelChoiceField(queryset=Organization.objects.all())
    file = forms.FileField(
        label="PROCESS.md or zipped folder",
        required=False,
        help_text="A PROCESS.md file, or a .zip of the process folder (its name must equal the process name). "
        "When a file is chosen, it is imported and the text below is ignored.",
    )
    text = forms.CharField(
        label="or its text",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false", "class": "process-text"}),
        help_text="Paste a PROCESS.md here, or correct the one shown after an import was refused.",
    )
    folder_name = forms.CharField(
        label="Folder name",
        required=False,
        max_length=255,
        help_text="The folder the text came in, if any: the process name must equal it. "
        "Leave it empty for a PROCESS.md that stands alone.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The default organization is chosen to start with, or the only one there is.
        default = Organization.objects.filter(slug=DEFAULT_ORGANIZATION).first()
        if default is None:
            only = list(Organization.objects.all()[:2])
            default = only[0] if len(only) == 1 else None
        if default is not None:
            self.fields["organization"].initial = default.pk

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = max(settings.MAX_UPLOAD_BYTES, settings.MAX_PROCESS_BYTES)
        if upload and upload.size > limit:
            raise forms.ValidationError(f"The file is larger than the limit of {limit} bytes.")
        return upload

    def clean_text(self):
        # A browser sends a textarea's line breaks as CRLF whatever the text had; PROCESS.md files
        # are written with LF, and the content hash covers the body exactly, so LF is restored.
        return self.cleaned_data["text"].replace("\r\n", "\n")

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("file") and not cleaned.get("text") and "file" not in self.errors:
            raise forms.ValidationError("Choose a PROCESS.md or a zipped folder, or paste the text of a PROCESS.md.")
        return cleaned

    def document(self) -> tuple[bytes | str, str | None]:
        """Return the document to import and its folder name; raise PackageError for an unreadable file."""
        folder_name = self.cleaned_data["folder_name"].strip() or None
        upload = self.cleaned_data["file"]
        if not upload:
            return self.cleaned_data["text"], folder_name
        upload.seek(0)
        data, zipped_folder = publishing.read_upload(upload.read(), filename=upload.name or "")
        return data, zipped_folder or folder_name

    def again(self, text: bytes | str, folder_name: str | None) -> "ImportForm":
        """Return an unbound form that holds the refused document, to correct and import again."""
        return ImportForm(
            initial={
                "organization": self.cleaned_data["organization"].pk,
                "text": publishing.document_text(text),
                "folder_name": folder_name or "",
            }
        )


class BindingForm(forms.Form):
    """For each role, a group of the draft's organization or the name of a new one to create."""

    def __init__(self, *args, roles: list[str], organization: Organization, initial_groups=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.roles = list(roles)
        self.organization = organization
        initial_groups = initial_groups or {}
        self.groups = {str(group.pk): group for group in Group.objects.filter(organization=organization)}
        choices = [
            ("", "— choose a group —"),
            *((pk, group.name) for pk, group in sorted(self.groups.items(), key=lambda item: item[1].name)),
            (NEW_GROUP, "New group…"),
        ]
        for index, role in enumerate(self.roles):
            group = initial_groups.get(role)
            self.fields[self.field_name(index)] = forms.ChoiceField(
                choices=choices, required=False, label=role, initial=str(group.pk) if group is not None else ""
            )
            self.fields[self.name_field(index)] = forms.CharField(
                required=False,
                label=f"New group for {role}",
                # Its name is read out, not shown: the role's label stands above both controls.
                widget=forms.TextInput(
                    attrs={"placeholder": "new group name", "autocomplete": "off", "aria-label": f"New group for {role}"}
                ),
            )

    @staticmethod
    def field_name(index: int) -> str:
        # Role names may hold characters a form prefix would not expect, so fields are numbered.
        return f"role_{index}"

    @classmethod
    def name_field(cls, index: int) -> str:
        return f"{cls.field_name(index)}_new"

    def clean(self):
        cleaned = super().clean()
        for index in range(len(self.roles)):
            if self.new_name(index) is None and (cleaned.get(self.name_field(index)) or "").strip():
                self.add_error(self.name_field(index), "Pick a group or type a new group's name, not both.")
        problems = publishing.check_new_group_names(organization=self.organization, names=self.new_groups())
        for index, role in enumerate(self.roles):
            if role in problems:
                self.add_error(self.name_field(index), problems[role][:1].upper() + problems[role][1:] + ".")
        return cleaned

    def new_name(self, index: int) -> str | None:
        """Return the name of the new group a role asks for ('' when not typed yet), or None."""
        choice = self.cleaned_data.get(self.field_name(index))
        name = (self.cleaned_data.get(self.name_field(index)) or "").strip()
        # A typed name with no group chosen can only mean a new group.
        return name if choice == NEW_GROUP or (name and not choice) else None

    def bindings(self) -> dict[str, Group | None]:
        """Return role → chosen group, None for a role left without one or given a new group."""
        return {
            role: self.groups.get(self.cleaned_data.get(self.field_name(index)) or "")
            for index, role in enumerate(self.roles)
        }

    def new_groups(self) -> dict[str, str]:
        """Return role → the name of the new group to create for it."""
        names = {role: self.new_name(index) for index, role in enumerate(self.roles)}
        return {role: name for role, name in names.items() if name is not None}

    def role_fields(self):
        """Yield (role, group field, new-name field) for the template."""
        for index, role in enumerate(self.roles):
            yield role, self[self.field_name(index)], self[self.name_field(index)]
