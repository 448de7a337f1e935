"""Account forms: logins that refuse locked-out accounts and addresses (see
annotator/services/accounts.py), switching an account off, invitations and the account they create."""

from __future__ import annotations

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from annotator.models import Role
from annotator.services import accounts


class ThrottledLoginMixin:
    """Check the lockout before the password (so a lockout holds even for the right one), count failures."""

    throttled = False

    def clean(self):
        username = self.data.get("username", "") or ""
        address = accounts.client_address(self.request)
        lockout = accounts.login_lockout(username=username, address=address)
        if lockout is not None:
            self.throttled = True
            raise ValidationError(lockout.message, code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError as exc:
            # a wrong password, not a right one refused later (inactive, or not staff for the admin)
            if getattr(exc, "code", None) == "invalid_login" and self.get_user() is None:
                lockout = accounts.login_failed(username=username, address=address)
                if lockout is not None:
                    self.throttled = True
                    raise ValidationError(lockout.message, code="throttled") from None
            raise
        accounts.login_succeeded(username=username, address=address)
        return cleaned


class LoginForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class AdminLoginForm(ThrottledLoginMixin, AdminAuthenticationForm):
    """The Django admin's login: superusers only, as the admin site itself (``SuperuserAdminSite``)."""

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if not user.is_superuser:
            raise ValidationError(self.error_messages["invalid_login"], code="invalid_login",
                                  params={"username": self.username_field.verbose_name})


class AccountActiveForm(forms.Form):
    """Staff switching an account off (``active`` = False) or back on."""

    active = forms.BooleanField(required=False, widget=forms.HiddenInput)


class InvitationForm(forms.Form):
    """An invitation: by e-mail when an address is given, otherwise a link shown once to copy."""

    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    email = forms.EmailField(required=False, help_text="Leave empty to get a one-time link to hand over.")


class SignupForm(UserCreationForm):
    """A new account from an invitation: a username and a password Django's validators accept."""

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def __init__(self, *args, invitation_email: str = "", **kwargs):
        """An invitation sent to an address makes an account with that address, not another."""
        super().__init__(*args, **kwargs)
        if invitation_email:
            self.fields["email"].initial, self.fields["email"].disabled = invitation_email, True


class ApiTokenForm(forms.Form):
    """A new API token of one's own, as ``manage.py api_token`` makes it."""

    name = forms.CharField(max_length=100, required=False, help_text="What it is for, e.g. nightly import.")
    expires = forms.IntegerField(min_value=1, max_value=3650, required=False, label="Expires after (days)",
                                 help_text="Leave empty for a token that does not expire.")
