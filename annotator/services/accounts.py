"""Accounts: login throttling, a staff member switching an account off or on, and the optional
OpenID Connect login (``OIDCBackend``; on only when settings.py finds ``OIDC_RP_CLIENT_ID``).

Login throttling: failed logins counted per account and per client address in Django's cache.

After ``BLINDSPOT_LOGIN_MAX_FAILURES`` failures for one username, or
``BLINDSPOT_LOGIN_MAX_FAILURES_PER_ADDRESS`` from one address, within
``BLINDSPOT_LOGIN_LOCKOUT_SECONDS``, every further attempt is refused — the right password
included — until the window has passed. The counters live in the default cache (Redis in
production, so all workers share them); the start of a lockout is recorded as an audit event
(refused attempts are not, so a locked-out attacker cannot fill the audit table). A successful
login clears its account's counter, not the address's, so one valid account cannot be used to
reset the budget of an address that is guessing other accounts' passwords.

The account counter is keyed on the account the posted name logs into, found exactly as Django's
authentication finds it (the login form's ``UsernameField``: stripped and NFKC-normalised; the
backend: an exact lookup), so a look-alike spelling (a fullwidth ``ａ``) cannot start a fresh count.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UsernameField
from django.core.cache import cache
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from annotator.services.audit import audit_record
from annotator.services.projects import projects_only_admin_of

PREFIX = "blindspot:login-failures"


@dataclass(frozen=True)
class Lockout:
    scope: str  # "account" | "address"
    minutes: int

    @property
    def message(self) -> str:
        what = "this account" if self.scope == "account" else "your network address"
        return (f"Too many failed logins for {what}. Try again in {self.minutes} "
                f"minute{'s' if self.minutes != 1 else ''}.")


def client_address(request) -> str:
    """The client's IP address: the proxy's last X-Forwarded-For hop when behind a proxy we trust."""
    if settings.BLINDSPOT_TRUST_X_FORWARDED_FOR:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if hops:
            return hops[-1]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _account(username: str) -> str:
    """The account a posted name authenticates as: the user's id, or the normalised name when no
    user has it (so guesses at a name that does not exist are counted too)."""
    name = UsernameField().to_python(username)
    User = get_user_model()
    pk = User._default_manager.filter(**{User.USERNAME_FIELD: name}).values_list("pk", flat=True).first()
    return f"user-{pk}" if pk is not None else "name-" + hashlib.sha256(name.encode()).hexdigest()[:32]


def _keys(username: str, address: str) -> dict[str, str]:
    account = _account(username)
    return {"account": f"{PREFIX}:account:{account}", "address": f"{PREFIX}:address:{address}"}


def _limits() -> dict[str, int]:
    return {"account": settings.BLINDSPOT_LOGIN_MAX_FAILURES,
            "address": settings.BLINDSPOT_LOGIN_MAX_FAILURES_PER_ADDRESS}


def _minutes() -> int:
    return max(1, -(-settings.BLINDSPOT_LOGIN_LOCKOUT_SECONDS // 60))


def login_lockout(*, username: str, address: str) -> Lockout | None:
    """The lockout that refuses this attempt before its password is even checked, or None."""
    keys, limits = _keys(username, address), _limits()
    counts = cache.get_many(list(keys.values()))
    for scope, key in keys.items():
        if counts.get(key, 0) >= limits[scope]:
            return Lockout(scope, _minutes())
    return None


def login_failed(*, username: str, address: str) -> Lockout | None:
    """Count one failed login; returns the lockout (and audits it) when this failure starts one."""
    timeout = settings.BLINDSPOT_LOGIN_LOCKOUT_SECONDS
    started = None
    for scope, key in _keys(username, address).items():
        cache.add(key, 0, timeout)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout)
            count = 1
        if count == _limits()[scope]:
            cache.set(key, count, timeout)  # the lockout lasts the whole window from now
            started = started or Lockout(scope, _minutes())
            audit_record(user=None, action="auth.login_locked", scope=scope, username=username[:150],
                         address=address, failures=count, seconds=timeout)
    return started


def login_succeeded(*, username: str, address: str) -> None:
    cache.delete(_keys(username, address)["account"])


class AccountError(ValueError):
    """An account change refused; the message says why."""


def user_active_set(*, user, active: bool, by) -> None:
    """Switch a whole account off (no login, sessions end: Django refuses inactive users) or on.

    Site-wide, so staff only; a project admin removes people from their project instead
    (``projects.membership_remove``). Memberships and role groups are kept, so switching the
    account back on restores what it had. Nobody switches off their own account, only a
    superuser switches off a superuser, and the last active admin of a project stays on (as
    ``projects.membership_remove`` keeps them)."""
    if not (by.is_staff or by.is_superuser):
        raise AccountError("Only staff can deactivate or reactivate an account; remove them from the project instead.")
    if user.pk == by.pk:
        raise AccountError("You cannot deactivate your own account.")
    if user.is_superuser and not by.is_superuser:
        raise AccountError("Only a superuser can deactivate a superuser.")
    if user.is_active == active:
        return
    with transaction.atomic():
        orphaned = [] if active else projects_only_admin_of(user)
        if orphaned:
            raise AccountError(f"{user.get_username()} is the last active admin of {', '.join(orphaned)}: "
                               "make someone else admin there first.")
        user.is_active = active
        user.save(update_fields=["is_active"])
        audit_record(user=by, action="user.activate" if active else "user.deactivate", obj=user,
                     member=user.username)


def oidc_username(email: str, claims=None) -> str:
    """A readable username for an account an OIDC login creates: the address's local part,
    numbered when taken (the library's default is a hash nobody recognises on the People page)."""
    User = get_user_model()
    base = re.sub(r"[^\w.@+-]", "", (email or "").split("@")[0])[:140] or "user"
    name, n = base, 1
    while User._default_manager.filter(username=name).exists():
        n += 1
        name = f"{base}{n}"
    return name


class OIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, stricter about whom an e-mail claim logs in as.

    The library finds the account by e-mail; here only an address the provider says it verified
    counts (``OIDC_REQUIRE_VERIFIED_EMAIL``), and never a staff or superuser account, which log in
    with their password. A new account has no role anywhere until a project admin gives one; its
    creation is audited."""

    def verify_claims(self, claims) -> bool:
        verified = claims.get("email_verified") is True or not settings.OIDC_REQUIRE_VERIFIED_EMAIL
        return super().verify_claims(claims) and verified

    def filter_users_by_claims(self, claims):
        return super().filter_users_by_claims(claims).filter(is_staff=False, is_superuser=False)

    def create_user(self, claims):
        user = super().create_user(claims)
        audit_record(user=None, action="user.create_oidc", obj=user, member=user.get_username())
        return user
