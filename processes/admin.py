"""Admin for processes: import and publish drafts, and read published versions that never change."""

import json

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from accounts.admin import CappedSearch
from processes import publishing
from processes.forms import BindingForm, ImportForm
from processes.maps import process_map
from processes.models import Draft, Process, ProcessVersion


def _version_url(version: ProcessVersion) -> str:
    return reverse("admin:processes_processversion_change", args=[version.pk])


def _pre(text: str) -> str:
    return format_html('<pre style="white-space: pre-wrap; max-width: 100%;">{}</pre>', text)


class VersionInline(admin.TabularInline):
    model = ProcessVersion
    fields = ("number", "sha256", "published_by", "published_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False
    ordering = ("-number",)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Process)
class ProcessAdmin(CappedSearch, admin.ModelAdmin):
    """Processes exist because a version was published; they are read here, not edited."""

    list_display = ("name", "organization", "latest_version_display", "created_at")
    list_filter = ("organization",)
    search_fields = ("name",)
    fields = ("name", "organization", "created_at")
    readonly_fields = fields
    inlines = (VersionInline,)

    @admin.display(description="latest version")
    def latest_version_display(self, obj):
        version = obj.latest_version
        if version is None:
            return "—"
        return format_html('<a href="{}">version {}</a>', _version_url(version), version.number)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # Versions are protected and never deleted, so neither is the process that holds them.
        return False


@admin.register(ProcessVersion)
class ProcessVersionAdmin(CappedSearch, admin.ModelAdmin):
    """A published version is read-only everywhere (spec §6 rule 5)."""

    list_display = ("process", "number", "organization", "short_sha256", "published_by", "published_at")
    list_filter = ("process__organization", "process__name")
    search_fields = ("process__name", "sha256")
    fields = (
        "process",
        "number",
        "sha256",
        "published_by",
        "published_at",
        "role_bindings",
        "required_systems",
        "frontmatter_pretty",
        "body_text",
    )
    readonly_fields = fields

    @admin.display(description="organization", ordering="process__organization__slug")
    def organization(self, obj):
        return obj.process.organization.slug

    @admin.display(description="sha256")
    def short_sha256(self, obj):
        return obj.sha256[:12] + "…"

    @admin.display(description="role bindings")
    def role_bindings(self, obj):
        bindings = obj.bindings.select_related("group").order_by("role")
        if not bindings:
            return "none (no role names)"
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", "<li>{} → {}</li>", ((b.role, b.group.name) for b in bindings)),
        )

    @admin.display(description="requires systems")
    def required_systems(self, obj):
        systems = (obj.frontmatter.get("requires") or {}).get("systems") or []
        return ", ".join(systems) if systems else "none"

    @admin.display(description="frontmatter")
    def frontmatter_pretty(self, obj):
        return _pre(json.dumps(obj.frontmatter, indent=2, ensure_ascii=False))

    @admin.display(description="body")
    def body_text(self, obj):
        return _pre(obj.body)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("process__organization", "published_by")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Draft)
class DraftAdmin(CappedSearch, admin.ModelAdmin):
    """Drafts come from the import view; their page binds roles and publishes (spec §7)."""

    list_display = ("__str__", "organization", "status", "created_by", "created_at")
    list_filter = ("organization",)
    search_fields = ("name",)
    change_list_template = "admin/processes/draft/change_list.html"

    @admin.display(description="status")
    def status(self, obj):
        if obj.published_version_id:
            return f"published (version {obj.published_version.number})"
        if obj.issues:
            return f"refused ({len(obj.issues)} issue{'s' if len(obj.issues) != 1 else ''})"
        unbound = publishing.unbound_roles(obj)
        return f"roles to bind: {', '.join(unbound)}" if unbound else "ready to publish"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization", "created_by", "published_version")

    def has_add_permission(self, request):
        # Drafts are made by importing a file, never typed in: "Add" (on the admin's home too) is the import.
        return self.can_import(request)

    def can_import(self, request) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.add_{self.opts.model_name}")

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:processes_draft_import"))

    def get_urls(self):
        import_url = path(
            "import/", self.admin_site.admin_view(self.import_view), name="processes_draft_import"
        )
        return [import_url, *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_import": self.can_import(request)}
        return super().changelist_view(request, extra_context)

    def import_view(self, request):
        """Import an uploaded or pasted PROCESS.md as a draft; a refused one stays in the form to correct."""
        if not self.can_import(request):
            raise PermissionDenied
        form = ImportForm(request.POST or None, request.FILES or None)
        issues: list[str] = []
        refused = False
        if request.method == "POST" and form.is_valid():
            try:
                text, folder_name = form.document()
            except publishing.PackageError as exc:
                issues = exc.issues
            else:
                result = publishing.import_draft(
                    organization=form.cleaned_data["organization"],
                    text=text,
                    folder_name=folder_name,
                    created_by=request.user,
                )
                if result.unchanged is not None:
                    messages.info(request, f"unchanged {result.name} version {result.unchanged.number}")
                    return HttpResponseRedirect(_version_url(result.unchanged))
                if not result.refused:
                    return HttpResponseRedirect(reverse("admin:processes_draft_change", args=[result.draft.pk]))
                issues, refused = result.issues, True
                form = form.again(text, folder_name)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import PROCESS.md",
            "form": form,
            "issues": issues,
            "refused": refused,
        }
        return TemplateResponse(request, "admin/processes/draft/import.html", context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """Show a draft's map and source with its role pickers, required systems and the publish button."""
        draft = self.get_object(request, unquote(object_id))
        if draft is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_or_change_permission(request, draft):
            raise PermissionDenied
        can_change = self.has_change_permission(request, draft)
        form = self.binding_form(draft, request.POST if request.method == "POST" else None)
        issues: list[str] = []
        refusal = ""
        if request.method == "POST":
            if not can_change:
                raise PermissionDenied
            if form.is_valid():
                try:
                    publishing.bind_roles(draft=draft, bindings=form.bindings(), new_groups=form.new_groups())
                except publishing.BindingError as exc:
                    issues, refusal = exc.issues, "The role bindings were not saved:"
                else:
                    if "_publish" not in request.POST:
                        messages.success(request, "Role bindings saved.")
                        return HttpResponseRedirect(request.path)
                    # The bindings are kept whatever publishing says, so the form shows them as saved.
                    form = self.binding_form(draft)
                    try:
                        return self.publish(request, draft)
                    except publishing.PublishError as exc:
                        issues, refusal = exc.issues, "Not published; the role bindings are saved:"
        definition = publishing.draft_definition(draft)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": draft,
            "draft": draft,
            "title": str(draft),
            "form": form,
            "issues": issues,
            "refusal": refusal,
            "systems": publishing.draft_systems(draft),
            "unbound_roles": publishing.unbound_roles(draft),
            "can_change": can_change,
            "has_delete_permission": self.has_delete_permission(request, draft),
            "published_url": _version_url(draft.published_version) if draft.published_version_id else None,
            "map": process_map(definition, title=f"Process map of {draft.name}") if definition else None,
        }
        return TemplateResponse(request, "admin/processes/draft/review.html", context)

    @staticmethod
    def binding_form(draft: Draft, data=None) -> BindingForm:
        return BindingForm(
            data,
            roles=publishing.draft_roles(draft),
            organization=draft.organization,
            initial_groups=publishing.suggested_bindings(draft),
        )

    @staticmethod
    def publish(request, draft: Draft) -> HttpResponseRedirect:
        """Publish a bound draft and go to its version; raise PublishError when it cannot be."""
        result = publishing.publish_draft(draft=draft, published_by=request.user)
        version = result.version
        if result.unchanged:
            messages.info(request, f"unchanged {draft.name} version {version.number}")
        else:
            messages.success(request, f"published {draft.name} version {version.number} sha256 {version.sha256}")
        return HttpResponseRedirect(_version_url(version))
