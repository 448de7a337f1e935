"""A small labelled study for the adjudication and report tests.

The small corpus is imported with its spans as a detector run (the "model", chosen as the
project's suggestion run). Two annotators then label five messages so that every kind of outcome
occurs once:

=========  ===========================  ============================  =========================
message    annotator                    annotator2                    outcome
=========  ===========================  ============================  =========================
d1#0       NAME "Maria" (aware)         NAME "Maria" (blind)          unanimous gold
d1#1       nothing                      nothing                       unanimous, empty gold
d1#2       EMAIL (blind)                nothing (aware)               queue: possible leak
d1#3       NAME "Alex"                  LOCATION "Alex"               queue: label
d2#1       NAME "Sam"                   NAME "Sa"                     queue: boundary
d2#0       done                         still to do                   not ready
=========  ===========================  ============================  =========================
"""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, DetectorRun, Message, Project
from pipeline.formats import parse_upload

__all__ = ["label", "model_project", "msg", "study"]

Status = Assignment.Status


def label(user, message: Message, spans, *, condition="blind", status=Status.DONE, seconds=12.0):
    a = Assignment.objects.create(project=message.project, annotator=user, message=message,
                                  condition=condition, status=status, active_seconds=seconds)
    for start, end, lab in spans:
        Annotation.objects.create(assignment=a, condition=condition, start=start, end=end, label=lab)
    return a


def msg(project: Project, dialogue: str, position: int) -> Message:
    return Message.objects.get(project=project, dialogue__external_id=dialogue, position=position)


@pytest.fixture
def model_project(project, members, corpus_bytes):
    from annotator.services.imports import corpus_import

    corpus_import(project=project, dialogues=parse_upload(corpus_bytes, name="small.jsonl"),
                  source="small.jsonl", spans_as="run")
    run = DetectorRun.objects.get(project=project)
    project.suggestion_runs.add(run)
    return project


@pytest.fixture
def study(model_project, members):
    p = model_project
    ann, ann2 = members["annotator"], members["annotator2"]
    label(ann, msg(p, "d1", 0), [(3, 8, "NAME")], condition="aware")
    label(ann2, msg(p, "d1", 0), [(3, 8, "NAME")])
    label(ann, msg(p, "d1", 1), [])
    label(ann2, msg(p, "d1", 1), [], condition="aware")
    label(ann, msg(p, "d1", 2), [(12, 35, "EMAIL")])
    label(ann2, msg(p, "d1", 2), [], condition="aware")
    label(ann, msg(p, "d1", 3), [(0, 4, "NAME")])
    label(ann2, msg(p, "d1", 3), [(0, 4, "LOCATION")])
    label(ann, msg(p, "d2", 1), [(12, 15, "NAME")])
    label(ann2, msg(p, "d2", 1), [(12, 14, "NAME")])
    label(ann, msg(p, "d2", 0), [])
    label(ann2, msg(p, "d2", 0), [], status=Status.PENDING)
    return p
