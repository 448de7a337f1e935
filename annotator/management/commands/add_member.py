"""``manage.py add_member USER --project SLUG --role ROLE``: what the Members page does."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotator.management.cli import project_or_error
from annotator.models import Role
from annotator.services.projects import MembershipError, membership_set


class Command(BaseCommand):
    help = ("Give a user a role in a project (or change it): annotator, adjudicator or admin. "
            "With --create, a user who does not exist yet is created without a password "
            "(set one with: manage.py changepassword USER).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--create", action="store_true", help="Create the user if there is none by that name.")

    def handle(self, username, project, role, create, **opts):
        proj = project_or_error(project)
        users = get_user_model().objects
        user = users.filter(username=username).first()
        created = False
        if user is None:
            if not create:
                raise CommandError(f"No user called {username!r}; pass --create to create one.")
            user = users.model(username=username)
            user.set_unusable_password()  # no one can log in as them until changepassword
            try:
                user.full_clean()
            except ValidationError as exc:
                raise CommandError(f"Cannot create {username!r}: {' '.join(exc.messages)}") from None
            user.save()
            created = True
        try:
            membership = membership_set(project=proj, user=user, role=role)
        except MembershipError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"{user.username} is now {role} in {proj.slug} (pseudonym {membership.pseudonym})."
        ))
        if created:
            self.stdout.write(f"Created user {user.username}; set a password with: "
                              f"manage.py changepassword {user.username}")
