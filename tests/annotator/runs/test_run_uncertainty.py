"""A tagger run stores each message's decision margin with its predictions (issue 16 item 2)."""

from __future__ import annotations

import pytest

from annotator.models import MessageUncertainty, RunChunk
from annotator.services import runs
from pipeline.types import Detection

pytestmark = pytest.mark.django_db


class MarginDetector:
    """Says nothing but a margin per message (None for the second message of each dialogue)."""

    model_version = "fake/1"

    def detect_many(self, dialogues):
        for d in dialogues:
            yield [Detection(d.id, m.index, margin=None if m.index == 1 else 0.01 * (m.index + 1))
                   for m in d.messages]


def test_margins_are_stored_per_message_and_replaced_on_a_rerun(corpus, monkeypatch):
    monkeypatch.setattr(runs, "detector_for", lambda run: MarginDetector())
    run = runs.run_start(project=corpus, detector="rules")
    chunk = run.chunks.get()
    assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    stored = {(u.message.dialogue.external_id, u.message.position): u.margin
              for u in MessageUncertainty.objects.filter(run=run).select_related("message__dialogue")}
    assert stored == {("d1", 0): 0.01, ("d1", 2): 0.03, ("d1", 3): 0.04, ("d2", 0): 0.01}
    RunChunk.objects.filter(pk=chunk.pk).update(status="pending")  # a redelivered task
    assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    assert MessageUncertainty.objects.filter(run=run).count() == 4
