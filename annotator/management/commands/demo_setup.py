from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotator.models import Project, Role
from annotator.services.imports import corpus_import_file
from annotator.services.projects import membership_set, project_create

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "demo" / "demo_corpus.jsonl"
DEMO_USERS = [
    ("admin", Role.ADMIN, True),
    ("adjudicator", Role.ADJUDICATOR, False),
    ("annotator1", Role.ANNOTATOR, False),
    ("annotator2", Role.ANNOTATOR, False),
    ("annotator3", Role.ANNOTATOR, False),
]


class Command(BaseCommand):
    help = "Create demo users and a demo project with the generated demo corpus (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--password", default="blindspot-demo",
                            help="Password for every demo user (demo only!).")

    @transaction.atomic
    def handle(self, password, **opts):
        User = get_user_model()
        users = {}
        for name, _, staff in DEMO_USERS:
            user, created = User.objects.get_or_create(username=name)
            if created:
                user.set_password(password)
                user.is_staff = user.is_superuser = staff
                user.save()
            users[name] = user
        project = Project.objects.filter(slug="demo").first()
        if project is None:
            project = project_create(
                name="Demo: maths tutoring", slug="demo", user=users["admin"],
                description="Generated maths-tutoring dialogues with gold PII spans.",
                visibility_mode=Project.Visibility.RANDOMIZED, overlap_k=2,
            )
        for name, role, _ in DEMO_USERS:
            membership_set(project=project, user=users[name], role=role)
        if not project.dialogues.exists():
            result = corpus_import_file(project=project, path=DEMO_CORPUS, spans_as="gold", user=users["admin"])
            self.stdout.write(f"Imported {result.dialogues} demo dialogues ({result.messages} messages).")
        self.stdout.write(self.style.SUCCESS(f"Demo users (password: {password}):"))
        for name, role, _ in DEMO_USERS:
            self.stdout.write(f"  {name:<12} {role}")
