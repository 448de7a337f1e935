"""``manage.py api_token USER [--name NAME] [--expires DAYS]``: a new API token, printed once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.services.api_tokens import TokenError, token_create


class Command(BaseCommand):
    help = ("Make a personal API token for USER and print it once, as the last word of the line (only its "
            "fingerprint is stored). It acts with USER's roles; USER revokes it on their API tokens page.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for (shown on the tokens page).")
        parser.add_argument("--expires", type=int, default=None, metavar="DAYS",
                            help="Days until it stops working (default: never).")

    def handle(self, username, name, expires, **opts):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user called {username!r}.")
        try:
            token, secret = token_create(user=user, name=name, expires_days=expires)
        except TokenError as exc:
            raise CommandError(str(exc)) from None
        until = f"until {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "without expiry"
        self.stderr.write(f"Token {token.name or token.prefix} for {user.username}, {until}; it is shown only now:")
        self.stdout.write(f"API token: {secret}")
