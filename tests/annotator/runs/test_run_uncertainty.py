"""A tagger run stores each message's decision margin with its predictions."""

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


@pytest.mark.slow
def test_a_real_tagger_run_scores_every_message_and_feeds_a_least_sure_plan(corpus, members,
                                                                           django_capture_on_commit_callbacks):
    from annotator.services import assignments, tagger

    info = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, activate=False,
                               options={"epochs": 1, "num_layers": 1, "check_precision": False,
                                        "min_dev_score": 0.0})  # a tiny model: usable, not good
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=corpus, detector="tagger", config={"version": info.full_version})
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    margins = list(MessageUncertainty.objects.filter(run=run).values_list("margin", flat=True))
    assert len(margins) == 6 and all(0 <= m <= 1 for m in margins)
    job = assignments.plan_start(project=corpus, by=members["admin"], strategy="uncertain", runs=[run], k=1,
                                 annotators=[members["annotator"]], budget=3, audit_share=0.34, seed=1,
                                 queue=False)
    plan = assignments.plan_job_run(job)
    assert plan is not None and plan.summary["uncertain"] == 2 and plan.summary["assignments"] == 3
    assert plan.summary["margin_max"] == round(sorted(margins)[1], 4)
