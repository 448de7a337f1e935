"""``manage.py create_project NAME [--slug SLUG] …``: what the New project page does."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from annotator.services.projects import project_create


class Command(BaseCommand):
    help = ("Create a project with the default labels and guidelines (edit them later on its Settings page). "
            "Then add people with add_member and import a corpus with import_corpus.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="Project name, e.g. \"Spring tutoring study\".")
        parser.add_argument("--slug", default="", help="Short id used in URLs and commands (default: from the name).")
        parser.add_argument("--description", default="")
        parser.add_argument("--visibility", choices=Project.Visibility.values, default=Project.Visibility.BLIND,
                            help="blind: annotators never see the model; aware: they see its suggestions; "
                                 "randomized: blind or aware per assignment, for the circularity check "
                                 "(default: blind).")
        parser.add_argument("--overlap", type=int, default=2, help="Annotators per item (default 2).")
        parser.add_argument("--policy", choices=Project.Policy.values, default=Project.Policy.STRICT,
                            help="strict: word-problem characters are not PII; recall_first: they are "
                                 "(default: strict).")
        parser.add_argument("--admin", default="", metavar="USERNAME",
                            help="Make this existing user the project's admin.")

    def handle(self, name, slug, description, visibility, overlap, policy, admin, **opts):
        if overlap < 1:
            raise CommandError("--overlap must be at least 1.")
        user = None
        if admin:
            user = get_user_model().objects.filter(username=admin).first()
            if user is None:
                raise CommandError(f"No user called {admin!r}.")
        try:
            project = project_create(name=name, slug=slug, user=user, description=description,
                                     visibility_mode=visibility, overlap_k=overlap, labelling_policy=policy)
        except ValidationError as exc:
            raise CommandError(_one_line(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"Created project {project.name!r} (slug {project.slug}): {project.visibility_mode}, "
            f"{project.overlap_k} annotators per item, {project.labelling_policy} policy, "
            f"labels {', '.join(project.labels)}."
        ))
        if user is not None and not user.is_superuser:
            self.stdout.write(f"{user.username} is its admin.")


def _one_line(exc: ValidationError) -> str:
    if hasattr(exc, "message_dict"):
        return " ".join(f"{field}: {' '.join(msgs)}" if field != "__all__" else " ".join(msgs)
                        for field, msgs in exc.message_dict.items())
    return " ".join(exc.messages)
