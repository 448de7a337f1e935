"""Login throttling by account and by client address, in the configured cache (Redis under CI).

Each test uses its own usernames and addresses and deletes its counters afterwards, so the real
cache (shared across tests, and across runs under Redis) is left as it was found.
"""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.cache import cache

from annotator.models import AuditEvent
from annotator.services import accounts

pytestmark = pytest.mark.django_db


@pytest.fixture
def throttle(make_user):
    """Makes fresh users and addresses; removes their counters from the cache afterwards."""
    used: list[tuple[str, str]] = []

    class T:
        @staticmethod
        def user():
            name = f"u{uuid.uuid4().hex[:10]}"
            make_user(name)
            used.append((name, ""))
            return name

        @staticmethod
        def address():
            addr = f"198.51.100.{uuid.uuid4().int % 250 + 1}-{uuid.uuid4().hex[:6]}"
            used.append(("", addr))
            return addr

    yield T
    for name, addr in used:
        cache.delete_many(list(accounts._keys(name, addr).values()))


def login(client, username, password, address, url="/accounts/login/"):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_thirty_wrong_passwords_then_the_right_one_is_refused(client, throttle):
    name, addr = throttle.user(), throttle.address()
    for _ in range(30):
        assert login(client, name, "wrong", addr).status_code in (200, 429)
    response = login(client, name, "pw-" + name, addr)
    assert response.status_code == 429
    assert "Too many failed logins for this account" in response.content.decode()
    assert client.get("/").status_code == 302  # not logged in
    # the counter is in the configured cache, not a mock
    assert cache.get(accounts._keys(name, addr)["account"]) >= 5
    event = AuditEvent.objects.get(action="auth.login_locked", details__username=name)
    assert event.details["scope"] == "account" and event.details["address"] == addr
    # another account from another address is not affected
    other = throttle.user()
    assert login(client, other, "pw-" + other, throttle.address()).status_code == 302


def test_lockout_starts_at_the_limit(client, throttle, settings):
    settings.BLINDSPOT_LOGIN_MAX_FAILURES = 3
    name, addr = throttle.user(), throttle.address()
    assert [login(client, name, "wrong", addr).status_code for _ in range(4)] == [200, 200, 429, 429]
    assert AuditEvent.objects.filter(action="auth.login_locked", details__username=name).count() == 1


def test_a_success_clears_the_account_counter(client, throttle):
    name, addr = throttle.user(), throttle.address()
    for _ in range(2):
        for _ in range(4):
            assert login(client, name, "wrong", addr).status_code == 200
        assert login(client, name, "pw-" + name, addr).status_code == 302
        client.post("/accounts/logout/")


def test_one_address_guessing_many_accounts_is_throttled(client, throttle, settings):
    settings.BLINDSPOT_LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    addr = throttle.address()
    for _ in range(6):
        login(client, throttle.user(), "wrong", addr)
    victim = throttle.user()
    response = login(client, victim, "pw-" + victim, addr)
    assert response.status_code == 429 and "your network address" in response.content.decode()
    assert AuditEvent.objects.filter(action="auth.login_locked", details__scope="address",
                                     details__address=addr).exists()
    assert login(client, victim, "pw-" + victim, throttle.address()).status_code == 302


def test_lockout_ends_when_the_window_passes(client, throttle, settings):
    settings.BLINDSPOT_LOGIN_LOCKOUT_SECONDS = 1
    name, addr = throttle.user(), throttle.address()
    for _ in range(5):
        login(client, name, "wrong", addr)
    assert login(client, name, "pw-" + name, addr).status_code == 429
    time.sleep(1.5)
    assert login(client, name, "pw-" + name, addr).status_code == 302


def test_admin_login_is_throttled_too(client, throttle, django_user_model):
    name, addr = throttle.user(), throttle.address()
    django_user_model.objects.filter(username=name).update(is_staff=True, is_superuser=True)
    for _ in range(10):
        login(client, name, "wrong", addr, url="/admin/login/")
    response = login(client, name, "pw-" + name, addr, url="/admin/login/")
    assert "Too many failed logins" in response.content.decode()
    assert client.get("/admin/").status_code == 302


def fullwidth(name: str) -> str:
    """The same name with its first letter fullwidth (``ｕ…``): NFKC, which Django's login form
    applies, turns it back into the account's name."""
    return chr(ord(name[0]) - ord("a") + 0xFF41) + name[1:]


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_a_look_alike_name_is_the_same_locked_account(client, throttle, django_user_model, url):
    """After the lockout, the fullwidth spelling with the right password used to log in."""
    name, addr = throttle.user(), throttle.address()
    django_user_model.objects.filter(username=name).update(is_staff=True)
    for _ in range(5):
        login(client, name, "wrong", addr, url=url)
    response = login(client, fullwidth(name), "pw-" + name, throttle.address(), url=url)
    assert "Too many failed logins for this account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_failures_under_look_alike_names_count_against_one_account(client, throttle, settings):
    settings.BLINDSPOT_LOGIN_MAX_FAILURES = 4
    name = throttle.user()
    spellings = [name, fullwidth(name), f" {name} ", fullwidth(name)]
    codes = [login(client, s, "wrong", throttle.address()).status_code for s in spellings]
    assert codes == [200, 200, 200, 429]
    assert login(client, name, "pw-" + name, throttle.address()).status_code == 429
