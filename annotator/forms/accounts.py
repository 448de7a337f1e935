"""Login forms that refuse locked-out accounts and addresses (see annotator/services/accounts.py)."""

from __future__ import annotations

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

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
    pass
