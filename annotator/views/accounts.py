"""The login page (throttled: a refused attempt answers 429 with the reason on the form);
invitations: a project admin creates one; the person it is for opens the link and joins; and
one's own API tokens (``manage.py api_token`` makes them): listed, and revoked here."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotator import access
from annotator.forms.accounts import ApiTokenForm, InvitationForm, LoginForm, SignupForm
from annotator.models import Role
from annotator.selectors.api_tokens import user_token, user_tokens
from annotator.selectors.invitations import invitation_by_token, invitation_open, invitation_state
from annotator.services import invitations
from annotator.services.api_tokens import TokenError, token_create, token_revoke
from annotator.services.invitations import REFUSED, InvitationError

# An invitation's token leaves the URL at its first request, as Django's PasswordResetConfirmView
# does it: kept in the session, the page answers at /invitations/join/, so the token is in the
# web server's access log (and a Referer) once, not on every step of the sign-up.
JOIN = "join"
SESSION_TOKEN = "_invitation_token"
# A link that no longer works: 404 when it never existed, 410 Gone when it was used, revoked or expired.
REFUSED_STATUS = {"unknown": 404, "used": 410, "revoked": 410, "expired": 410}


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(oidc_enabled=settings.BLINDSPOT_OIDC, sso_failed="sso" in self.request.GET)
        return context

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled:
            response.status_code = 429
        return response


@never_cache  # the page shows a one-time link: no cache may keep it
@login_required
@require_POST
def invitation_create(request: HttpRequest, slug: str) -> HttpResponse:
    """Invite by e-mail, or show a one-time link on the People page (once: only its hash is kept)."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = InvitationForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errs in form.errors.values() for e in errs))
        return redirect("project-members", slug=slug)
    email = form.cleaned_data["email"]
    try:
        invitation, link = invitations.invitation_create(
            project=project, role=form.cleaned_data["role"], by=request.user, email=email,
            link_for=lambda token: request.build_absolute_uri(reverse("invitation-accept", args=[token])))
    except InvitationError as exc:
        messages.error(request, str(exc))
        return redirect("project-members", slug=slug)
    if email:
        messages.success(request, f"Invitation to join as {invitation.get_role_display()} sent to {email}.")
        return redirect("project-members", slug=slug)
    # shown in this response only, never put in a message cookie or stored
    return render(request, "accounts/invitation_link.html", {"project": project, "invitation": invitation,
                                                             "link": link})


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, slug: str, invitation_id: int) -> HttpResponse:
    """Revoke an open invitation from the People page: its link stops working."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    invitation = invitation_open(project, invitation_id)
    if invitation is None:
        messages.error(request, "That invitation is no longer open: it was used, revoked or has expired.")
        return redirect("project-members", slug=slug)
    invitations.invitation_revoke(invitation=invitation, by=request.user)
    messages.success(request, f"The invitation for {invitation.email or 'a one-time link'} was revoked.")
    return redirect("project-members", slug=slug)


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_accept_page(request: HttpRequest, token: str) -> HttpResponse:
    """Logged in: join with the invited role. Logged out: create an account (or log in first).
    Opened with its token, the link puts it in the session and sends the browser to ``JOIN``."""
    if token != JOIN and request.method == "GET":
        request.session[SESSION_TOKEN] = token
        return redirect("invitation-accept", token=JOIN)
    if token == JOIN:
        token = request.session.get(SESSION_TOKEN, "")
    invitation = invitation_by_token(token) if token else None
    state = invitation_state(invitation)
    if state != "open":
        return render(request, "accounts/invitation_refused.html", {"reason": REFUSED[state]},
                      status=REFUSED_STATUS[state])
    signed_in = request.user.is_authenticated
    form = None if signed_in else SignupForm(request.POST or None, invitation_email=invitation.email)
    if request.method == "POST" and (signed_in or form.is_valid()):
        try:
            if signed_in:
                invitations.invitation_accept(token=token, user=request.user)
            else:
                invitations.invitation_signup(token=token, form=form)
                login(request, form.instance, backend="django.contrib.auth.backends.ModelBackend")
        except InvitationError as exc:
            return render(request, "accounts/invitation_refused.html", {"reason": str(exc)}, status=410)
        request.session.pop(SESSION_TOKEN, None)
        messages.success(request, f"Welcome to {invitation.project.name}.")
        return redirect("project-dashboard", slug=invitation.project.slug)
    context = {"invitation": invitation, "form": form, "token": token,
               "login_url": f"{reverse('login')}?next={request.path}"}
    return render(request, "accounts/invitation.html", context)


@never_cache  # a new token is in the page: no cache may keep it
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """Your API tokens: name, created, expires, last used, state; each revocable. A new one is
    shown in this response only (never put in a message cookie); only its hash is kept."""
    form = ApiTokenForm(request.POST or None)
    secret = None
    if request.method == "POST" and form.is_valid():
        try:
            _, secret = token_create(user=request.user, name=form.cleaned_data["name"],
                                     expires_days=form.cleaned_data["expires"])
        except TokenError as exc:
            form.add_error(None, str(exc))
        else:
            form = ApiTokenForm()
    return render(request, "accounts/api_tokens.html", {"tokens": user_tokens(request.user), "form": form,
                                                        "secret": secret})


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = token_revoke(token=user_token(request.user, token_id), by=request.user)
    messages.success(request, f"Token {token.name or token.prefix} is revoked: requests with it now get 401.")
    return redirect("api-tokens")
