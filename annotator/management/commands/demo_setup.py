from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from annotator.models import DetectorRun, Project, Role
from annotator.services import runs, tagger
from annotator.services.assignments import plan_create
from annotator.services.imports import corpus_import
from annotator.services.projects import membership_set, project_create
from pipeline.corpus import read_corpus

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "demo" / "demo_corpus.jsonl"
DEMO_USERS = [
    ("admin", Role.ADMIN, True),
    ("adjudicator", Role.ADJUDICATOR, False),
    ("annotator1", Role.ANNOTATOR, False),
    ("annotator2", Role.ANNOTATOR, False),
    ("annotator3", Role.ANNOTATOR, False),
]
GOLD_SHARE = 0.7  # the rest is left for the annotators to label, blind or aware


class Command(BaseCommand):
    help = ("Create demo users and a demo project (idempotent): 70% of the generated demo corpus comes "
            "with gold, the rest is queued for three annotators in randomized blind/aware mode.")

    def add_arguments(self, parser):
        parser.add_argument("--password", default="blindspot-demo", help="Password for every demo user (demo only!).")
        parser.add_argument("--train-tagger", action="store_true",
                            help="Train a first tagger from generated data when none exists (a few minutes) "
                                 "and use its predictions as the aware annotators' suggestions.")

    def handle(self, password, train_tagger, **opts):
        users = self._users(password)
        project = Project.objects.filter(slug="demo").first()
        if project is None:
            project = project_create(
                name="Demo: maths tutoring", slug="demo", user=users["admin"],
                description="Generated maths-tutoring dialogues: part with gold spans, part for you to label.",
                visibility_mode=Project.Visibility.RANDOMIZED, overlap_k=2,
            )
        for name, role, _ in DEMO_USERS:
            membership_set(project=project, user=users[name], role=role)
        if not project.dialogues.exists():
            dialogues = read_corpus(DEMO_CORPUS)
            cut = int(len(dialogues) * GOLD_SHARE)
            corpus_import(project=project, dialogues=dialogues[:cut], source=DEMO_CORPUS.name,
                          spans_as="gold", user=users["admin"])
            corpus_import(project=project, dialogues=dialogues[cut:], source=DEMO_CORPUS.name,
                          spans_as="ignore", user=users["admin"])
            self.stdout.write(f"Imported {len(dialogues)} demo dialogues ({cut} with gold).")
        suggestions = self._run(project, "rules", users["admin"])
        if train_tagger:
            if not tagger.tagger_versions(project):
                self.stdout.write("Training a first tagger on generated dialogues (a few minutes)…")
                info = tagger.tagger_train(project=project, use_gold=False, synthetic=100, user=users["admin"],
                                           options={"max_seconds": 240})
                self.stdout.write(f"Tagger {info.full_version}: {tagger.dev_summary(info)}.")
            project.refresh_from_db()
            suggestions = self._run(project, "tagger", users["admin"])
        if not project.suggestion_runs.exists():
            project.suggestion_runs.add(suggestions)
        if not project.assignments.exists():
            annotators = [users[n] for n, r, _ in DEMO_USERS if r == Role.ANNOTATOR]
            plan = plan_create(project=project, strategy="dialogues", annotators=annotators, k=2, seed=7,
                               n_dialogues=project.dialogues.filter(messages__decision__isnull=True).distinct().count(),
                               include_gold=False, by=users["admin"])
            self.stdout.write(f"Queued {plan.summary.get('items', 0)} messages, each for 2 of {len(annotators)} annotators.")
        self.stdout.write(self.style.SUCCESS(f"Demo users (password: {password}):"))
        for name, role, _ in DEMO_USERS:
            self.stdout.write(f"  {name:<12} {role}")

    def _users(self, password):
        User = get_user_model()
        users = {}
        for name, _, staff in DEMO_USERS:
            user, created = User.objects.get_or_create(username=name)
            if created:
                user.set_password(password)
                user.is_staff = user.is_superuser = staff
                user.save()
            users[name] = user
        return users

    def _run(self, project, detector, user) -> DetectorRun:
        """The latest finished run of ``detector``, or a new one run in-process now."""
        done = project.runs.filter(detector=detector, status=DetectorRun.Status.SUCCEEDED).first()
        if done is not None:
            return done
        run = runs.run_start(project=project, detector=detector, user=user)
        for chunk in run.chunks.all():
            runs.chunk_process(chunk_id=chunk.pk)
        run.refresh_from_db()
        self.stdout.write(f"Ran {run.label}: {run.get_status_display().lower()}.")
        return run
