"""Fixtures of the export tests: the release-review examples (``ISSUE``: gold with misses and
a wrong span that a release's self-audit must catch) imported as gold."""

from __future__ import annotations

import json

import pytest

ISSUE = [
    {"id": "A", "messages": [
        {"speaker": "Student", "text": "Hi, my name is Maria Lopez and I am in Ms. Okafor's class.",
         "spans": [{"start": 15, "end": 26, "label": "NAME"}, {"start": 43, "end": 49, "label": "NAME"}]},
        {"speaker": "Student", "text": "Maria's dog is called Rex, he is 3 years old."},
        {"speaker": "Student", "text": "My mum says call her on (555) 201-7788 after 6.",
         "spans": [{"start": 30, "end": 38, "label": "PHONE"}]},
        {"speaker": "Student", "text": "you can email me at jo.bloggs@example.org if you're stuck"},
    ]},
    {"id": "B", "messages": [{"speaker": "Student", "text": "ok thanks, see you tomorrow Lopez"}]},
    {"id": "C", "anchor": "5 people brought in old records. How many records in total?", "messages": [
        {"speaker": "Tutor", "text": "The total number of old records that the 5 people brought in is 14.",
         "spans": [{"start": 64, "end": 66, "label": "AGE"}]},
    ]},
]


@pytest.fixture
def issue_project(project, members):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    project.second_opinion_presidio = False  # the rules' second opinion is enough here, and fast
    project.save(update_fields=["second_opinion_presidio"])
    raw = "".join(json.dumps(d) + "\n" for d in ISSUE).encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="issue.jsonl"), source="issue.jsonl",
                  spans_as="gold")
    return project


RECORD = {
    "id": "maria-lopez-session-1",
    "anchor": "Ms. Okafor's class shares 28 stickers.",
    "meta": {"teacher": "Ms. Okafor", "student_email": "maria.lopez@lincoln.k12.us", "grade": 4},
    "messages": [
        {"speaker": "Ms. Okafor", "text": "Maria Lopez, how many does each table get?", "ts": "2024-03-01T10:15:00",
         "spans": [{"start": 0, "end": 11, "label": "NAME"}]},
        {"speaker": "Maria Lopez", "text": "7 each", "ts": "2024-03-01T10:15:40"},
        {"speaker": "Caleb", "text": "yeah jose helped me", "ts": "2024-03-01T10:16:00"},
        {"speaker": "T", "text": "José said 28 / 4 first, Caleb, talk to me.", "ts": "2024-03-01T10:16:30",
         "spans": [{"start": 0, "end": 4, "label": "NAME"}]},
    ],
}


@pytest.fixture
def record_project(project, members):
    """A lesson whose speaker labels, id, metadata and timestamps name people, imported as gold."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    project.second_opinion_presidio = False  # the rules' second opinion finds the e-mail, and fast
    project.save(update_fields=["second_opinion_presidio"])
    raw = (json.dumps(RECORD) + "\n").encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="record.jsonl"), source="record.jsonl",
                  spans_as="gold")
    return project
