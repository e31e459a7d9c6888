"""Admin for organizations, people, their memberships, groups and agents."""

from allauth.idp.oidc.admin import ClientAdmin as OIDCClientAdmin
from allauth.idp.oidc.models import Client as OIDCClient
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import admin as auth_admin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group as AuthGroup
from django.db.models import Count
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _

from accounts import connections
from accounts.models import Agent, Group, Membership, Organization, User
from accounts.oauth import absolute_url, name_taken, new_secret, save_new_agent
from base.names import name_problem

# The longest search the admin's lists run, as the people's search (work.search.MAX_QUERY): a longer
# term would cost a scan of every row for nothing, and SQLite refuses a LIKE pattern over 50,000 bytes.
MAX_SEARCH = 200


class CappedSearch:
    """A ModelAdmin whose list finds nothing for a search longer than MAX_SEARCH characters, and says why."""

    def get_search_results(self, request, queryset, search_term):
        if len(search_term) > MAX_SEARCH:
            messages.warning(request, f"A search can be at most {MAX_SEARCH} characters long; this one is {len(search_term)}.")
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)


# allauth's list of OAuth clients searches too (its admin registers first: allauth comes before this app).
if admin.site.is_registered(OIDCClient):
    admin.site.unregister(OIDCClient)


@admin.register(OIDCClient)
class ClientAdmin(CappedSearch, OIDCClientAdmin):
    pass


# Django's own permission groups are not the groups roles bind to; hiding them avoids confusing the two.
if admin.site.is_registered(AuthGroup):
    admin.site.unregister(AuthGroup)


class EmailUserCreationForm(AdminUserCreationForm):
    """Create a person from an email address and a password."""

    class Meta:
        model = User
        fields = ("email",)

    def clean_email(self):
        email = User.objects.normalize_email(self.cleaned_data["email"]).lower()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(_("A person with this email address already exists."))
        return email


class EmailUserChangeForm(UserChangeForm):
    """Change a person, keeping email addresses lower-case as the manager stores them."""

    class Meta:
        model = User
        fields = "__all__"

    def clean_email(self):
        email = User.objects.normalize_email(self.cleaned_data["email"]).lower()
        if User.objects.filter(email__iexact=email).exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(_("A person with this email address already exists."))
        return email


class MembershipInline(admin.StackedInline):
    model = Membership
    can_delete = True
    max_num = 1
    extra = 0
    fields = ("organization", "is_operator")


class GroupMembershipInline(admin.TabularInline):
    model = Group.members.through
    extra = 0
    verbose_name = _("group")
    verbose_name_plural = _("process groups")
    autocomplete_fields = ("group",)


@admin.register(User)
class UserAdmin(CappedSearch, auth_admin.UserAdmin):
    form = EmailUserChangeForm
    add_form = EmailUserCreationForm
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        (_("Personal info"), {"fields": ("first_name", "last_name")}),
        (_("Preferences"), {"fields": ("time_zone", "email_notices")}),
        (_("Permissions"), {"fields": ("is_active", "is_staff", "is_superuser", "user_permissions")}),
        (_("Important dates"), {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("email", "usable_password", "password1", "password2")}),
    )
    list_display = ("email", "first_name", "last_name", "organization", "is_staff")
    list_filter = ("is_staff", "is_superuser", "is_active", "membership__organization")
    search_fields = ("email", "first_name", "last_name")
    ordering = ("email",)
    filter_horizontal = ("user_permissions",)
    readonly_fields = ("last_login", "date_joined")
    inlines = (MembershipInline, GroupMembershipInline)

    @admin.display(description=_("organization"), ordering="membership__organization__slug")
    def organization(self, obj):
        membership = getattr(obj, "membership", None)
        return membership.organization.slug if membership else "—"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("membership__organization")

    def get_inlines(self, request, obj):
        # The inlines need the person saved first; the add form is email and password only.
        return self.inlines if obj is not None else ()


@admin.register(Organization)
class OrganizationAdmin(CappedSearch, admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)


@admin.register(Membership)
class MembershipAdmin(CappedSearch, admin.ModelAdmin):
    list_display = ("user", "organization", "is_operator")
    list_filter = ("organization", "is_operator")
    search_fields = ("user__email",)
    autocomplete_fields = ("user",)


@admin.register(Group)
class GroupAdmin(CappedSearch, admin.ModelAdmin):
    list_display = ("name", "organization", "member_count")
    list_filter = ("organization",)
    search_fields = ("name",)
    filter_horizontal = ("members",)

    @admin.display(description=_("members"), ordering="member_count")
    def member_count(self, obj):
        return obj.member_count

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("members"))


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ("organization", "name", "is_active")

    def clean_name(self):
        name = self.cleaned_data["name"]
        if problem := name_problem(name):
            raise forms.ValidationError(_("The name %(problem)s."), params={"problem": problem})
        return name

    def clean(self):
        cleaned = super().clean()
        # The name is unique among an organization's own agents (a constraint whose condition names a
        # field this form does not show, so Django would not check it here).
        organization, name = cleaned.get("organization"), cleaned.get("name")
        if self.instance.pk is None and organization and name and name_taken(organization, name):
            self.add_error("name", _("An agent of this name already exists in this organization."))
        return cleaned


class AgentKind(admin.SimpleListFilter):
    title = _("kind")
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("own", _("made by an administrator")), ("connected", _("connected by a person"))]

    def queryset(self, request, queryset):
        if self.value() == "own":
            return queryset.filter(for_user__isnull=True)
        if self.value() == "connected":
            return queryset.filter(for_user__isnull=False)
        return queryset


@admin.register(Agent)
class AgentAdmin(CappedSearch, admin.ModelAdmin):
    """Agents: adding one makes its OAuth client and shows the client id and secret once.

    Agents that people connected from an MCP client are listed too; they can be disconnected here, but
    their client and person are not the administrator's to change.
    """

    form = AgentForm
    list_display = ("name", "organization", "for_user", "client_id", "is_active", "last_used_at", "created_at")
    list_filter = ("organization", "is_active", AgentKind)
    search_fields = ("name", "client_id", "connected_client_id", "for_user__email")
    list_select_related = ("organization", "for_user")
    actions = ("give_new_secret", "disconnect")
    add_fields = ("organization", "name")

    def get_fields(self, request, obj=None):
        if obj is None:
            return self.add_fields
        if obj.is_connected:
            return ("name", "organization", "for_user", "connected_client_id", "is_active", "created_at", "last_used_at")
        return ("name", "organization", "client_id", "is_active", "created_at", "last_used_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        # The OAuth client is made and linked here once; editing the id would orphan it. A connected
        # agent belongs to the person and client that made it.
        fixed = ("client_id", "created_at", "last_used_at", "organization")
        if obj.is_connected:
            return (*fixed, "name", "for_user", "connected_client_id")
        return fixed

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        request.agent_credentials = [(obj, save_new_agent(obj))]

    def response_add(self, request, obj, post_url_continue=None):
        return self._credentials_page(request, title=_("Agent added"))

    def _credentials_page(self, request, *, title):
        rows = [
            {"agent": agent, "client_id": agent.client_id, "secret": secret}
            for agent, secret in getattr(request, "agent_credentials", [])
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "rows": rows,
            "opts": self.model._meta,
            "token_endpoint": absolute_url(request, "/identity/o/api/token"),
        }
        response = TemplateResponse(request, "admin/accounts/agent/credentials.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description=_("Give new secrets to the selected agents (old secrets and tokens stop working)"))
    def give_new_secret(self, request, queryset):
        own = list(queryset.filter(client_id__isnull=False, for_user__isnull=True))
        skipped = queryset.count() - len(own)
        if skipped:
            self.message_user(
                request, _("%d connected agents were skipped: they have no secret of their own.") % skipped,
                messages.WARNING,
            )
        if not own:
            return None
        request.agent_credentials = [(agent, new_secret(agent)) for agent in own]
        return self._credentials_page(request, title=_("New secrets"))

    @admin.action(description=_("Disconnect the selected connected agents (their next call is refused)"))
    def disconnect(self, request, queryset):
        connected = list(queryset.filter(for_user__isnull=False, is_active=True))
        for agent in connected:
            connections.disconnect(agent)
        self.message_user(request, _("%d agents disconnected.") % len(connected), messages.SUCCESS)
