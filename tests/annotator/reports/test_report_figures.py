"""The agreement and circularity reports' figures, pinned on a small generated study.

The reports' readers and arithmetic were rewritten for a million messages; the figures must not
move. ``report_figures.json`` holds every figure both reports computed on this study before
that rewrite (the whole stored result, less what names rows: times, primary keys, the gold
fingerprint). Set ``REPORT_FIGURES_WRITE=1`` to write it again after a change that is meant to
change the figures, and say why in the commit.

The study: generated tutoring dialogues imported with their true spans as a run (the model the
aware annotators saw), a second, noisier detector run, a segment run over half the messages,
three annotators (two per message, each blind or aware per dialogue, a few audit items drawn at
rate 0.25), and gold for most finished messages (unanimous, or adjudicated with the truth).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.models import (
    AdjudicationDecision,
    Annotation,
    Assignment,
    DetectorRun,
    GoldSpan,
    Membership,
    Message,
    MessageSegment,
    Prediction,
    Role,
)
from annotator.services.reports import agreement_compute, circularity_compute, circularity_result

pytestmark = pytest.mark.django_db

PINNED = Path(__file__).with_name("report_figures.json")
N_BOOT = 200
Outcome = AdjudicationDecision.Outcome


def _noisy(rng: random.Random, spans, text: str, *, miss: float, shift: float, extra: float):
    """An annotator's or detector's version of the true spans: some missed, some cut short by a
    character, some relabelled, and now and then a span of its own on the first word."""
    out = []
    for start, end, label in spans:
        if rng.random() < miss:
            continue
        if rng.random() < shift and end - start > 1:
            end -= 1
        if rng.random() < shift / 2:
            label = "LOCATION" if label != "LOCATION" else "NAME"
        out.append((start, end, label))
    first = text.split(" ", 1)[0]
    if first and rng.random() < extra and not any(s < len(first) for s, _, _ in out):
        out.append((0, len(first), "NAME"))
    return out


def build_study(project, make_user, *, dialogues: int, seed: int = 7):
    """The generated study in ``project`` (see the module's docstring): its detector run."""
    from annotator.services.imports import corpus_import
    from annotator.services.projects import membership_set
    from pipeline.synthetic import generate_messages

    rng = random.Random(seed)
    corpus = generate_messages(dialogues * 6, seed=seed)[:dialogues]
    corpus_import(project=project, dialogues=corpus, source="generated.jsonl", spans_as="run")
    model = DetectorRun.objects.get(project=project)
    project.suggestion_runs.add(model)
    truth = {(d.id, m.index): [(s.start, s.end, s.label) for s in m.spans] for d in corpus for m in d.messages}
    messages = list(Message.objects.filter(project=project).order_by("dialogue_id", "position")
                    .values_list("pk", "dialogue__external_id", "position", "text"))
    status = DetectorRun.Status.SUCCEEDED
    noisy = DetectorRun.objects.create(project=project, detector="rules", status=status)
    segments = DetectorRun.objects.create(project=project, detector="math_segments", status=status)
    Prediction.objects.bulk_create(
        Prediction(run=noisy, message_id=pk, start=s, end=e, label=lab, score=0.9, source_label=f"rule:{lab}")
        for pk, d, i, text in messages for s, e, lab in _noisy(rng, truth[(d, i)], text, miss=0.2, shift=0.2, extra=0.3))
    MessageSegment.objects.bulk_create(
        MessageSegment(run=segments, message_id=pk, segment=rng.choice(["MATH", "NON-MATH"]))
        for pk, *_ in messages if rng.random() < 0.5)

    annotators = []
    for n in range(3):
        user = make_user(f"{project.slug}-annotator{n}")
        membership_set(project=project, user=user, role=Role.ANNOTATOR)
        Membership.objects.filter(project=project, user=user).update(pseudonym=f"P{n}")
        annotators.append(user)
    gold_dialogues = {d for _, d, _, _ in messages[: len(messages) * 3 // 4]}
    conditions: dict[tuple[int, str], str] = {}  # one condition per (annotator, dialogue)
    for pk, d, i, text in messages:
        if d not in gold_dialogues:
            continue
        pair = rng.sample(range(len(annotators)), 2)
        audit = rng.random() < 0.1
        done = rng.random() < 0.95
        for n in pair:
            cond = conditions.setdefault((n, d), rng.choice(["blind", "aware"]))
            spans = _noisy(rng, truth[(d, i)], text, miss=0.1 if cond == "blind" else 0.05, shift=0.15, extra=0.1)
            a = Assignment.objects.create(
                project=project, annotator=annotators[n], message_id=pk, condition=cond,
                status=Assignment.Status.DONE if done else Assignment.Status.PENDING,
                active_seconds=rng.choice([0, rng.uniform(2, 60)]),
                inclusion_probability=0.25 if audit else 1.0, flagged=not audit)
            Annotation.objects.bulk_create(Annotation(assignment=a, condition=cond, start=s, end=e, label=lab)
                                           for s, e, lab in spans)
        if done and rng.random() < 0.9:
            outcome = Outcome.ADJUDICATED if rng.random() < 0.3 else Outcome.UNANIMOUS
            decision = AdjudicationDecision.objects.create(message_id=pk, outcome=outcome)
            GoldSpan.objects.bulk_create(GoldSpan(message_id=pk, decision=decision, provenance=outcome,
                                                  start=s, end=e, label=lab) for s, e, lab in truth[(d, i)])
    return noisy


def report_figures(project, run) -> dict:
    """Both reports as stored, less what names rows rather than counts them: times, the gold
    fingerprint, primary keys in run names."""
    agreement = agreement_compute(project=project, n_boot=N_BOOT, seed=3)
    circularity = circularity_result(circularity_compute(project=project, run=run, n_boot=N_BOOT, seed=3), run)
    names = {r.pk: f"run{n}" for n, r in enumerate(DetectorRun.objects.filter(project=project).order_by("pk"))}
    for detector in agreement["detectors"]:
        detector["run"], detector["name"] = names[detector["run"]], detector["name"].split(" ", 1)[1]
    for volatile in ("computed_at", "gold_state"):
        agreement.pop(volatile)
        circularity.pop(volatile)
    circularity["run"] = circularity["run_name"] = run.label.split(" ", 1)[1]
    circularity["summary"] = circularity["summary"].replace(run.label, circularity["run"])
    return json.loads(json.dumps({"agreement": agreement, "circularity": circularity}, default=str))


def test_the_reports_figures_are_pinned(project, make_user):
    run = build_study(project, make_user, dialogues=14)
    figures = report_figures(project, run)
    assert figures["agreement"]["agreement"]["n_items"] > 50 and figures["circularity"]["n_paired_items"] > 5
    if os.environ.get("REPORT_FIGURES_WRITE"):
        PINNED.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    assert figures == json.loads(PINNED.read_text())


def test_the_reports_read_in_queries_that_do_not_grow_with_the_gold(project, make_user):
    """Each report reads its inputs in a fixed number of queries (streamed in chunks), never one
    query per dialogue or per message: twice the gold costs no more queries."""
    from annotator.services.projects import project_create

    run = build_study(project, make_user, dialogues=4)

    def queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as agreement:
            agreement_compute(project=project, n_boot=10)
        with CaptureQueriesContext(connection) as circularity:
            circularity_compute(project=project, run=run, n_boot=10)
        return len(agreement), len(circularity)

    small = queries()
    project = project_create(name="Three times the gold", slug="bigger")
    run = build_study(project, make_user, dialogues=12)
    assert queries() == small
