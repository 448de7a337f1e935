from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.test import override_settings

from annotator.models import DetectorRun, Project, Role
from annotator.selectors import tagger as tagger_selectors
from annotator.services import demo, runs, tagger
from annotator.services.assignments import plan_create
from annotator.services.imports import corpus_import
from annotator.services.projects import membership_set, project_create
from pipeline.formats import read_corpus
from pipeline.simulate import SimulatedAnnotator, simulate_predictions
from pipeline.synthetic.__main__ import DEMO_GOLD_SHARE
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Span

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "demo" / "demo_corpus.jsonl"
DEMO_USERS = [
    ("admin", Role.ADMIN, True),
    ("adjudicator", Role.ADJUDICATOR, False),
    ("annotator1", Role.ANNOTATOR, False),
    ("annotator2", Role.ANNOTATOR, False),
    ("annotator3", Role.ANNOTATOR, False),
]
GOLD_SHARE = DEMO_GOLD_SHARE  # the rest is left for the annotators to label, blind or aware
# The simulated first round: these annotators finish every item of the first ROUND_DIALOGUES
# queued dialogues with known rates; aware, they accept a wrong model suggestion with
# probability ``anchoring`` (the bias the circularity report measures).
SIMULATED = {
    "annotator1": SimulatedAnnotator("annotator1", miss_rate=0.05, false_alarm_rate=0.02, anchoring=0.6),
    "annotator2": SimulatedAnnotator("annotator2", miss_rate=0.1, false_alarm_rate=0.05, anchoring=0.7),
    "annotator3": SimulatedAnnotator("annotator3", miss_rate=0.15, false_alarm_rate=0.05, anchoring=0.8),
}
ROUND_DIALOGUES = 6  # of the 17 queued: every annotator keeps items to label
KEEP_OPEN = 7  # disagreements left in the adjudication queue
ROUND_SEED = 15
SIMULATED_MODEL = "simulated-model.jsonl"  # the imported run's name
# Word-problem characters, dates, ages and numbers that are not PII, and what a naive model takes them for.
TRAP_LABELS = {"problem_character": "NAME", "name_like_word": "NAME", "problem_place": "LOCATION",
               "problem_date": "DATE_OF_BIRTH", "session_date": "DATE_OF_BIRTH", "problem_age": "AGE",
               "long_number": "PHONE", "plain_course": "COURSE"}


def simulated_model(dialogue: PDialogue, *, recall: float = 0.85, false_alarm_rate: float = 0.6) -> PDialogue:
    """The dialogue with a simulated model's spans in place of its true ones: each true span found
    with probability ``recall``, each trap (non-PII that looks like PII) flagged with
    ``false_alarm_rate``; seeded by the dialogue id, so the demo is the same every time."""
    rng = random.Random(f"{ROUND_SEED}:{dialogue.id}")
    messages = []
    for m in dialogue.messages:
        traps = tuple(Span(t["start"], t["end"], TRAP_LABELS[t["kind"]]) for t in m.meta.get("traps", ())
                      if t["kind"] in TRAP_LABELS)
        messages.append(replace(m, spans=simulate_predictions(m.spans, traps, recall=recall,
                                                              false_alarm_rate=false_alarm_rate, rng=rng)))
    return replace(dialogue, messages=tuple(messages))


class Command(BaseCommand):
    help = ("Create demo users and a demo project (idempotent): 70% of the generated demo corpus comes "
            "with gold, the rest is queued for three annotators in randomized blind/aware mode; simulated "
            "annotators finish a first round, most disagreements are adjudicated, the agreement and "
            "circularity reports are computed and one release is built.")

    def add_arguments(self, parser):
        parser.add_argument("--password", default="blindspot-demo", help="Password for every demo user (demo only!).")
        parser.add_argument("--train-tagger", action="store_true",
                            help="Train a first tagger from generated data when none exists (a few minutes), distil "
                                 "its faster student (active where it passes its check), publish the active one as "
                                 "the default of commands without a project, and add its predictions to the aware "
                                 "annotators' suggestions.")

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
            # The rest comes without its true spans, with a simulated model's spans as a run instead:
            # the suggestions aware annotators see, wrong on some word-problem characters and numbers.
            corpus_import(project=project, dialogues=[simulated_model(d) for d in dialogues[cut:]],
                          source=SIMULATED_MODEL, spans_as="run", user=users["admin"])
            self.stdout.write(f"Imported {len(dialogues)} demo dialogues ({cut} with gold).")
        rules, trained = self._run(project, "rules", users["admin"]), None
        suggestions = project.runs.filter(source=DetectorRun.Source.IMPORT, config__file=SIMULATED_MODEL).first()
        if train_tagger:
            if not project.active_tagger and not tagger_selectors.usable_versions(project):
                self.stdout.write("Training a first tagger on generated dialogues (a few minutes)…")
                info = tagger.tagger_train(project=project, use_gold=False, synthetic=100, user=users["admin"],
                                           # A generous budget: a version cut short by it may not become
                                           # active (activation_blockers), so it only stops a stuck machine.
                                           options={"max_seconds": 900})
                self.stdout.write(f"Tagger {info.full_version}: {tagger_selectors.dev_summary(info)}.")
                if info.student:  # the first model is its student where that passes its check
                    self.stdout.write(f"Tagger {info.full_version}: {tagger_selectors.student_note(info)}.")
            elif not project.active_tagger:  # trained before, never activated: the newest usable one
                tagger.tagger_activate(project=project, version=tagger_selectors.usable_versions(project)[0].full_version,
                                       user=users["admin"])
            project.refresh_from_db()
            if project.active_tagger:
                self.stdout.write(tagger.tagger_default_publish(project=project, user=users["admin"]))
                trained = self._run(project, "tagger", users["admin"])
            else:
                self.stdout.write(self.style.WARNING(
                    f"The tagger is not active: {'; '.join(tagger_selectors.version_blockers(tagger_selectors.tagger_versions(project)[0]))}. "
                    "Run demo_setup --train-tagger again, or train from the Tagger page."))
        if not project.suggestion_runs.exists():
            project.suggestion_runs.add(*(r for r in (suggestions or rules, trained) if r is not None))
        if not project.assignments.exists():
            annotators = [users[n] for n, r, _ in DEMO_USERS if r == Role.ANNOTATOR]
            plan = plan_create(project=project, strategy="dialogues", annotators=annotators, k=2, seed=7,
                               n_dialogues=project.dialogues.filter(messages__decision__isnull=True).distinct().count(),
                               include_gold=False, by=users["admin"])
            self.stdout.write(f"Queued {plan.summary.get('items', 0)} messages, each for 2 of {len(annotators)} annotators.")
        # Queued work runs here, one task after the other (never on threads racing this command).
        with override_settings(BLINDSPOT_EAGER_IN_THREAD=False):
            self._first_round(project, users, suggestions or rules)
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

    def _first_round(self, project, users, run):
        truth = {(d.id, m.index): m.spans for d in read_corpus(DEMO_CORPUS) for m in d.messages}
        profiles = {users[name].pk: profile for name, profile in SIMULATED.items()}
        done = demo.round_simulate(project=project, truth=truth, profiles=profiles, dialogues=ROUND_DIALOGUES,
                                   seed=ROUND_SEED)
        if done["submitted"]:
            self.stdout.write(
                f"Simulated annotators finished {done['submitted']} items: {done['accepted']} suggestions "
                f"accepted, {done['rejected']} rejected, {done['added']} spans added, {done['no_pii']} marked "
                "no PII.")
        adj = demo.adjudicate_all_but(project=project, user=users["adjudicator"], truth=truth, keep_open=KEEP_OPEN)
        if done["submitted"] or adj["settled"]:
            self.stdout.write(f"Gold: {adj['merged']} items merged, {adj['settled']} adjudicated, "
                              f"{adj['open']} disagreements left in the adjudication queue.")
        for job in demo.reports_compute(project=project, user=users["admin"], run=run):
            self.stdout.write(f"{job.get_kind_display()}: {job.get_status_display().lower()}.")
        release = demo.release_build(project=project, user=users["admin"])
        self.stdout.write(f"Release v{release.version}: {release.get_status_display().lower()}.")
        review = demo.release_review_settle(project=project, user=users["adjudicator"], truth=truth)
        if review["confirmed"] or review["dismissed"]:
            self.stdout.write(f"Release review: {review['confirmed']} place(s) confirmed as PII, "
                              f"{review['dismissed']} dismissed; {review['builds']} new version(s) built.")

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
