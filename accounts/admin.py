"""Admin for organizations, people, their memberships, groups and agents."""

from django import forms
from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group as AuthGroup
from django.db.models import Count
from django.utils.translation import gettext_lazy as _

from accounts.models import Agent, Group, Membership, Organization, User

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
class UserAdmin(auth_admin.UserAdmin):
    form = EmailUserChangeForm
    add_form = EmailUserCreationForm
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        (_("Personal info"), {"fields": ("first_name", "last_name")}),
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
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organization", "is_operator")
    list_filter = ("organization", "is_operator")
    search_fields = ("user__email",)
    autocomplete_fields = ("user",)


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "member_count")
    list_filter = ("organization",)
    search_fields = ("name",)
    filter_horizontal = ("members",)

    @admin.display(description=_("members"), ordering="member_count")
    def member_count(self, obj):
        return obj.member_count

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("members"))


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "client_id", "is_active", "created_at")
    list_filter = ("organization", "is_active")
    search_fields = ("name", "client_id")
    # The OAuth client is created and linked elsewhere; editing the id here would orphan it.
    readonly_fields = ("client_id", "created_at")
