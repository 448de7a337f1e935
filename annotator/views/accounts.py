"""The login page, throttled: a refused attempt answers 429 with the reason on the form."""

from __future__ import annotations

from django.contrib.auth import views as auth_views

from annotator.forms.accounts import LoginForm


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled:
            response.status_code = 429
        return response
