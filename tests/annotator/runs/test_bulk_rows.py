"""The chunk's writes: COPY and one-array deletes on PostgreSQL (CI), the ORM on SQLite; both must
replace exactly the run's rows of the chunk's messages and nothing else."""

import json

import pytest

from annotator.bulk import delete_for_messages, insert_rows
from annotator.models import DetectorRun, Message, MessageSegment, MessageUncertainty, Prediction
from annotator.services.runs import MARGIN_COLUMNS, PREDICTION_COLUMNS, SEGMENT_COLUMNS


@pytest.fixture
def two_runs(project):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    lines = [json.dumps({"id": f"d{i}", "messages": [{"speaker": "Tutor", "text": "Hi Ana, call 555-0100"},
                                                     {"speaker": "Student", "text": "ok"}]}) for i in range(3)]
    corpus_import(project=project, dialogues=parse_upload("\n".join(lines).encode()), source="t.jsonl")
    runs = [DetectorRun.objects.create(project=project, detector="rules") for _ in range(2)]
    return runs, list(Message.objects.filter(dialogue__project=project).order_by("pk").values_list("pk", flat=True))


@pytest.mark.django_db
def test_rows_written_and_replaced_for_the_run_s_messages_only(two_runs):
    (run, other), ids = two_runs
    for r in (run, other):
        insert_rows(Prediction, PREDICTION_COLUMNS,
                    [(r.pk, m, 3, 6, "NAME", 0.5, "PERSON") for m in ids] + [(r.pk, ids[0], 12, 20, "PHONE", 1.0, "PHONE")])
        insert_rows(MessageSegment, SEGMENT_COLUMNS, [(r.pk, m, "MATH", None) for m in ids])
        insert_rows(MessageUncertainty, MARGIN_COLUMNS, [(r.pk, m, 0.25) for m in ids])
    first = Prediction.objects.get(run=run, message_id=ids[0], label="PHONE")
    assert (first.start, first.end, first.score, first.source_label) == (12, 20, 1.0, "PHONE")
    assert MessageSegment.objects.get(run=run, message_id=ids[1]).score is None

    chunk = ids[:2]  # the chunk's messages, rewritten
    for model in (Prediction, MessageSegment, MessageUncertainty):
        delete_for_messages(model, run_id=run.pk, message_ids=chunk)
        delete_for_messages(model, run_id=run.pk, message_ids=[])  # nothing asked: nothing deleted
    assert set(Prediction.objects.filter(run=run).values_list("message_id", flat=True)) == set(ids[2:])
    assert Prediction.objects.filter(run=other).count() == len(ids) + 1  # the other run's rows stay
    assert MessageSegment.objects.filter(run=run).count() == MessageUncertainty.objects.filter(run=run).count() == len(ids) - 2
    insert_rows(MessageUncertainty, MARGIN_COLUMNS, [(run.pk, m, 0.0) for m in chunk])
    assert MessageUncertainty.objects.filter(run=run, margin=0.0).count() == 2


@pytest.mark.django_db
def test_no_attempt_deletes_a_retry_resumes_after_what_is_written(project):
    """A chunk's rows are written with the count of messages they cover (``messages_done``) in one
    transaction, so no attempt deletes anything (on a fast-growing run the deletes scanned the
    run's rows: O(n^2) in chunks): a retried chunk resumes after what is written, never
    duplicates."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    import tests.slow_detector  # noqa: F401  (registers slow_test)
    from annotator.models import RunChunk
    from annotator.services import runs
    from tests.annotator.runs.test_runs import _corpus

    _corpus(project, n=3)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0})
    chunk = run.chunks.get()
    with CaptureQueriesContext(connection) as first:
        assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    assert not [q for q in first.captured_queries if q["sql"].lstrip().upper().startswith("DELETE")]
    n = Prediction.objects.filter(run=run).count()
    assert n
    RunChunk.objects.filter(pk=chunk.pk).update(status="pending")  # as if redelivered
    with CaptureQueriesContext(connection) as retry:
        assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    assert not [q for q in retry.captured_queries if q["sql"].lstrip().upper().startswith("DELETE")]
    assert Prediction.objects.filter(run=run).count() == n
