"""A run is scored only on the gold messages it covered: a run over one of two
dialogues, or one imported for new dialogues, is not charged the rest of the project's gold as
misses, the pages say how many gold messages that was, and the cached scores move with coverage."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.urls import reverse

import tests.slow_detector  # noqa: F401  (registers slow_test: each message's first word as NAME)
from annotator.models import DetectorRun, RunChunk
from annotator.selectors.reports import detectors_against_gold, evaluate_run, scoring_state
from annotator.services import runs
from annotator.services.imports import corpus_import
from annotator.services.reports import scoring_key
from pipeline.formats import parse_upload

pytestmark = pytest.mark.django_db

# Two dialogues of gold, one NAME each, on each message's first word.
GOLD = [
    {"id": "d1", "messages": [{"speaker": "Tutor", "text": "Maria says hello", "spans": [{"start": 0, "end": 5, "label": "NAME"}]},
                              {"speaker": "Student", "text": "hi there"}]},
    {"id": "d2", "messages": [{"speaker": "Tutor", "text": "Sam says hello", "spans": [{"start": 0, "end": 3, "label": "NAME"}]},
                              {"speaker": "Student", "text": "hi again"}]},
]
NEW = [{"id": "d3", "messages": [{"speaker": "Tutor", "text": "Zoe is new", "spans": [{"start": 0, "end": 3, "label": "NAME"}]}]}]


def _import(project, dialogues, *, name, spans_as):
    raw = "".join(json.dumps(d) + "\n" for d in dialogues).encode()
    return corpus_import(project=project, dialogues=parse_upload(raw, name=name), source=name, spans_as=spans_as)


@pytest.fixture
def gold_project(project):
    _import(project, GOLD, name="gold.jsonl", spans_as="gold")
    return project


@pytest.fixture
def earlier_run(project, django_capture_on_commit_callbacks):
    """A run that succeeded over d1, the project's only dialogue then; d2 and its gold came after."""
    _import(project, GOLD[:1], name="first.jsonl", spans_as="gold")
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0})
        runs.run_enqueue(run)
    _import(project, GOLD[1:], name="second.jsonl", spans_as="gold")
    run.refresh_from_db()
    assert run.status == DetectorRun.Status.SUCCEEDED, run.error
    return run


@pytest.fixture
def half_run(gold_project):
    """A detector run whose first chunk (d1) finished and whose second (d2) did not (yet)."""
    run = runs.run_start(project=gold_project, detector="slow_test", config={"seconds_per_dialogue": 0},
                         chunk_dialogues=1)
    first, _second = run.chunks.order_by("index")
    assert first.dialogue_ids == [gold_project.dialogues.get(external_id="d1").pk]
    assert runs.chunk_process(chunk_id=first.pk) == "done"
    run.refresh_from_db()
    return run


def _exact(evaluation: dict) -> dict:
    return evaluation["span_exact"]


def test_a_run_over_one_of_two_dialogues_is_not_charged_the_others_gold(earlier_run):
    evaluation = evaluate_run(earlier_run, n_boot=10)
    # Before: d2's "Sam" counted as a miss (FN 1, recall 0.5) though the run never read d2.
    assert (_exact(evaluation)["tp"], _exact(evaluation)["fn"]) == (1, 0)
    assert _exact(evaluation)["recall"] == 1.0
    assert evaluation["n_messages"] == 2 and evaluation["n_dialogues"] == 1
    assert evaluation["coverage"] == {"gold_messages": 2, "gold_total": 4, "whole_project": False, "dialogues": 1}


def test_a_run_imported_for_new_dialogues_covers_only_them(gold_project):
    result = _import(gold_project, NEW, name="new.jsonl", spans_as="run")
    run = DetectorRun.objects.get(pk=result.run_id)
    chunk = run.chunks.get()
    assert chunk.status == "done" and chunk.dialogue_ids == [gold_project.dialogues.get(external_id="d3").pk]
    assert chunk.message_count == 1 and (run.total_chunks, run.done_chunks) == (1, 1)
    evaluation = evaluate_run(run, n_boot=10)
    # Before: scored against d1 and d2's gold, recall 0.000 with 2 false negatives.
    assert evaluation == {"coverage": {"gold_messages": 0, "gold_total": 4, "whole_project": False, "dialogues": 1}}
    [row] = [r for r in detectors_against_gold(project=gold_project, n_boot=10) if r["run"] == run.pk]
    assert "rows" not in row and row["error"] == "covered none of the 4 gold messages: nothing to score"


def test_the_report_scores_each_run_on_its_own_coverage(earlier_run):
    [row] = [r for r in detectors_against_gold(project=earlier_run.project, n_boot=10) if r["run"] == earlier_run.pk]
    exact = next(r for r in row["rows"] if r["level"] == "span_exact" and r["label"] == "ALL")
    assert (exact["n_gold"], exact["recall"]["value"]) == (1, 1.0)
    assert row["coverage"]["gold_messages"] == 2 and row["evaluation"] == evaluate_run(earlier_run, n_boot=10)


def test_the_run_page_says_what_it_was_scored_on(client, members, earlier_run, django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    url = reverse("run-detail", kwargs={"slug": earlier_run.project.slug, "run_id": earlier_run.pk})
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)  # queues the scoring, which runs here
    body = client.get(url).content.decode()
    assert "Scored on 2 of 4 gold messages: the ones this run covered (1 dialogue)" in body


def test_the_page_says_when_a_run_covered_no_gold(client, members, gold_project, django_capture_on_commit_callbacks):
    run_id = _import(gold_project, NEW, name="new.jsonl", spans_as="run").run_id
    client.force_login(members["admin"])
    url = reverse("run-detail", kwargs={"slug": gold_project.slug, "run_id": run_id})
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)
    body = client.get(url).content.decode()
    assert "This run covered none of the project's 4 gold messages: nothing to score yet." in body
    assert ">FN</th>" not in body


def test_the_cache_key_moves_when_the_run_covers_more(half_run):
    before = scoring_key(scoring_state(half_run))
    second = half_run.chunks.get(index=1)
    assert runs.chunk_process(chunk_id=second.pk) == "done"
    assert scoring_key(scoring_state(half_run)) != before
    assert evaluate_run(half_run, n_boot=10)["coverage"]["gold_messages"] == 4


def test_a_run_without_chunks_claims_the_whole_project(gold_project):
    run = DetectorRun.objects.create(project=gold_project, detector="rules", status=DetectorRun.Status.SUCCEEDED)
    assert evaluate_run(run, n_boot=10)["coverage"] == {
        "gold_messages": 4, "gold_total": 4, "whole_project": True, "dialogues": None}


def test_the_migration_gives_older_imported_runs_the_dialogues_of_their_import(gold_project):
    first = DetectorRun.objects.get(pk=_import(gold_project, NEW, name="new.jsonl", spans_as="run").run_id)
    again = [{**NEW[0], "id": "d4"}, NEW[0]]  # the same file name again, with skip existing: only d4 is new
    raw = "".join(json.dumps(d) + "\n" for d in again).encode()
    second_id = corpus_import(project=gold_project, dialogues=parse_upload(raw, name="new.jsonl"), source="new.jsonl",
                              spans_as="run", skip_existing=True).run_id
    RunChunk.objects.all().delete()  # as imported before runs recorded their coverage
    importlib.import_module("annotator.migrations.0023_import_run_coverage").backfill(apps, None)
    ids = {d.external_id: d.pk for d in gold_project.dialogues.all()}
    assert first.chunks.get().dialogue_ids == [ids["d3"]]
    assert DetectorRun.objects.get(pk=second_id).chunks.get().dialogue_ids == [ids["d4"]]
