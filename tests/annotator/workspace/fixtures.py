"""Fixtures of the workspace tests: a detector run with tell-tale metadata, and assignment plans.

Import the fixtures into a test module with ``from tests.annotator.workspace.fixtures import *``.
"""

from __future__ import annotations

import pytest

from annotator.models import Assignment, DetectorRun, Message, Prediction

# Strings that only the model knows: none may ever reach a blind annotator.
RUN_DETECTOR = "zzleakydetector"
RUN_MODEL = "leakmodel-v9-secret"
RUN_PRESET = "leakpreset"
SCORES = (0.8765, 0.4321, 0.1234, 0.5678)

__all__ = ["RUN_DETECTOR", "RUN_MODEL", "RUN_PRESET", "SCORES", "aware_item", "blind_item", "msg",
           "planned", "post_action", "run", "ws_project"]


def msg(project, dialogue: str, position: int) -> Message:
    return Message.objects.get(dialogue__project=project, dialogue__external_id=dialogue, position=position)


@pytest.fixture
def run(corpus):
    """A finished run on the small corpus: two true hits, one false positive on a fraction."""
    r = DetectorRun.objects.create(
        project=corpus, detector=RUN_DETECTOR, model_version=RUN_MODEL, detector_version="9.9",
        config={"preset": RUN_PRESET}, status=DetectorRun.Status.SUCCEEDED,
    )
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 0), start=3, end=8, label="NAME", score=SCORES[0])
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 1), start=8, end=11, label="ID_NUMBER", score=SCORES[2])
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 2), start=12, end=35, label="EMAIL", score=SCORES[1])
    Prediction.objects.create(run=r, message=msg(corpus, "d2", 1), start=12, end=15, label="NAME", score=SCORES[3])
    corpus.suggestion_runs.add(r)
    return r


@pytest.fixture
def ws_project(corpus, members, run):
    return corpus


@pytest.fixture
def planned(ws_project, members):
    """Every message to both annotators (k = 2), in the project's visibility mode; returns a function."""
    from annotator.services.assignments import plan_create

    def make(mode: str = "blind", **kwargs):
        ws_project.visibility_mode = mode
        ws_project.save(update_fields=["visibility_mode"])
        params = {"strategy": "dialogues", "n_dialogues": 2, "k": 2, "seed": 7,
                  "annotators": [members["annotator"], members["annotator2"]], **kwargs}
        return plan_create(project=ws_project, by=members["admin"], **params)

    return make


def _item(project, members, condition, dialogue="d1", position=0, who="annotator") -> Assignment:
    a = Assignment.objects.get(annotator=members[who], message=msg(project, dialogue, position))
    if a.condition != condition:
        Assignment.objects.filter(pk=a.pk).update(condition=condition)
        a.refresh_from_db()
    return a


@pytest.fixture
def aware_item(ws_project, members, planned):
    planned("aware")
    return _item(ws_project, members, "aware")


@pytest.fixture
def blind_item(ws_project, members, planned):
    planned("blind")
    return _item(ws_project, members, "blind")


def post_action(client, a: Assignment, name: str, *, version=None, htmx=True, **data):
    from django.urls import reverse

    a.refresh_from_db()
    url = reverse(f"workspace-{name}", kwargs={"slug": a.project.slug, "public_id": a.public_id})
    payload = {"version": a.version if version is None else version, **data}
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(url, payload, **headers)
