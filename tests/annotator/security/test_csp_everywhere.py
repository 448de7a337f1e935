"""Every response carries the Content Security Policy, as the README says:
static files WhiteNoise serves with DEBUG off, and 404/500 pages with DEBUG on (where django-csp
leaves Django's debug pages without one)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import path

pytestmark = pytest.mark.django_db

STRICT = ("default-src 'self'", "object-src 'none'", "frame-ancestors 'none'")


def _policy(response) -> str:
    return response.headers.get("Content-Security-Policy", "")


def test_a_static_file_served_by_whitenoise_carries_the_policy(settings):
    settings.DEBUG = False
    settings.WHITENOISE_USE_FINDERS = True  # serve static/ without collectstatic, as WhiteNoise does
    settings.WHITENOISE_AUTOREFRESH = True
    response = Client().get("/static/js/blindspot.js")
    assert response.status_code == 200 and type(response).__name__ == "WhiteNoiseFileResponse"
    assert all(part in _policy(response) for part in STRICT), _policy(response)


@pytest.mark.parametrize("debug", [True, False])
def test_a_404_carries_the_policy_with_debug_on_or_off(settings, debug):
    settings.DEBUG = debug
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert all(part in _policy(response) for part in STRICT), _policy(response)
    # only Django's debug page (DEBUG on) has inline style and script allowed
    assert ("'unsafe-inline'" in _policy(response)) == debug


def _boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", _boom)]  # this module is the URLconf of the 500 test


@pytest.mark.parametrize("debug", [True, False])
def test_a_500_carries_the_policy_with_debug_on_or_off(settings, debug):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = __name__
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500
    assert all(part in _policy(response) for part in STRICT), _policy(response)
