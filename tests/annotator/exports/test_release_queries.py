"""A release reads the database a batch of dialogues at a time: the queries one build makes do not
grow with the number of dialogues it releases (no query per dialogue, per message or per span)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.services import releases as release_services

KEY = "test-release-key-0001"


def _project(slug: str, dialogues: int, user):
    from annotator.models import Role
    from annotator.services.imports import corpus_import
    from annotator.services.projects import membership_set, project_create
    from pipeline.synthetic import generate_messages

    project = project_create(name=f"Release of {dialogues}", slug=slug)
    project.second_opinion_presidio = False  # the rules' second opinion reads no database either
    project.save(update_fields=["second_opinion_presidio"])
    membership_set(project=project, user=user, role=Role.ADMIN)
    corpus = generate_messages(200, seed=3)[:dialogues]
    corpus_import(project=project, dialogues=corpus, source="generated.jsonl", spans_as="gold")
    return project


def _queries(project, user, django_capture_on_commit_callbacks, **params) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        export = release_services.release_start(project=project, user=user, **params)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return len(queries), export.manifest


@pytest.mark.django_db
@pytest.mark.parametrize("source", ["gold", "run"])
def test_a_release_makes_as_many_queries_for_six_dialogues_as_for_two(make_user, settings, source,
                                                                       django_capture_on_commit_callbacks):
    from annotator.models import DetectorRun

    settings.BLINDSPOT_SURROGATE_KEY = KEY
    admin = make_user("boss")
    counts = []
    for n in (2, 6):
        project = _project(f"release-{n}", n, admin)
        run = None
        if source == "run":  # the import's spans as a finished run
            run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED)
            from annotator.models import GoldSpan, Prediction

            Prediction.objects.bulk_create(
                Prediction(run=run, message_id=g.message_id, start=g.start, end=g.end, label=g.label)
                for g in GoldSpan.objects.filter(message__project=project))
        count, manifest = _queries(project, admin, django_capture_on_commit_callbacks, source=source, run=run)
        assert manifest["dialogues"] == n and manifest["spans"]
        counts.append(count)
    assert counts[0] == counts[1], counts
