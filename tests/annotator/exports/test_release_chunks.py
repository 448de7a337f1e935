"""A release in chunks over the workers (annotator/services/release_chunks.py): each chunk
de-identifies, checks and audits its own dialogues (or, under the corpus scope, audits them); the
chunked release is the single job's, byte for byte; a chunk run twice counts once; a failing chunk
fails the release with its reason; real workers over Redis share the chunks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from annotator.models import (
    DetectorRun,
    Export,
    GoldSpan,
    Prediction,
    ReleaseCandidate,
    ReleaseChunk,
)
from annotator.services import release_chunks
from annotator.services import release_review as review
from annotator.services import releases as release_services
from annotator.services.exports import export_create, export_dir, private_dir
from tests.annotator.exports.conftest import ISSUE
from tests.conftest import wait_for

KEY = "test-release-key-0001"
PUBLIC = ("release.jsonl", "leaks.json", "utility.json")
PRIVATE = ("mapping.jsonl", "candidates.jsonl", "leaks.private.json")


@pytest.fixture(autouse=True)
def _surrogate_key(settings):
    settings.BLINDSPOT_SURROGATE_KEY = KEY
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


def _import(project, *, presidio: bool):
    """The release-review examples (conftest.ISSUE) and seven generated dialogues (217 messages)
    as gold: ten dialogues."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload
    from pipeline.synthetic import generate_messages

    project.second_opinion_presidio = presidio
    project.save(update_fields=["second_opinion_presidio"])
    issue = parse_upload("".join(json.dumps(d) + "\n" for d in ISSUE).encode(), name="issue.jsonl")
    corpus_import(project=project, dialogues=issue + generate_messages(200, seed=3), source="mixed.jsonl",
                  spans_as="gold")
    return project


def _run_of_gold(project) -> DetectorRun:
    """A finished run whose spans are the gold's (a release from a run)."""
    run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED)
    Prediction.objects.bulk_create(
        Prediction(run=run, message_id=g.message_id, start=g.start, end=g.end, label=g.label)
        for g in GoldSpan.objects.filter(message__project=project))
    return run


def _build(capture, settings, project, user, *, chunk: int, run=None, scope: str = "dialogue") -> Export:
    settings.BLINDSPOT_RELEASE_CHUNK_DIALOGUES = chunk
    with capture(execute=True):
        export = release_services.release_start(project=project, user=user, source="run" if run else "gold", run=run,
                                                scope=scope)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return export


def _manifest_bytes(export) -> bytes:
    """manifest.json but for what differs from one build to the next: its time and version."""
    text = (export_dir(export) / "manifest.json").read_text(encoding="utf-8")
    text = re.sub(r'"built_at": "[^"]*"', '"built_at": ""', text, count=1)
    return re.sub(r'"version": \d+', '"version": 0', text, count=1).encode()


def _report(export) -> dict:
    report = json.loads(json.dumps(export.report))
    del report["summary"]["seconds"]  # how long the passes took
    return report


def _queue(export) -> list[tuple]:
    return sorted(ReleaseCandidate.objects.filter(export=export).values_list(
        "message_id", "start", "end", "label", "key", "reason", "source", "status"))


def assert_same_release(one: Export, other: Export) -> None:
    for name in PUBLIC:
        assert (export_dir(one) / name).read_bytes() == (export_dir(other) / name).read_bytes(), name
    for name in PRIVATE:
        assert (private_dir(one) / name).read_bytes() == (private_dir(other) / name).read_bytes(), name
    assert _manifest_bytes(one) == _manifest_bytes(other)
    assert _report(one) == _report(other)
    assert _queue(one) and [q[1:] for q in _queue(one)] == [q[1:] for q in _queue(other)]
    assert one.publishable == other.publishable
    assert [f for f in one.files if f["name"] != "manifest.json"] == [f for f in other.files if f["name"] != "manifest.json"]
    for export in (one, other):  # no chunk file is left beside the mapping table
        assert sorted(p.name for p in private_dir(export).iterdir()) == sorted(PRIVATE)


@pytest.mark.django_db
@pytest.mark.parametrize(("source", "scope", "inputs"), [("gold", "dialogue", "dialogues"), ("run", "dialogue", "dialogues"),
                                                       ("gold", "corpus", "audit")])
def test_a_chunked_release_is_the_single_jobs_byte_for_byte(project, members, settings, source, scope, inputs,
                                                            django_capture_on_commit_callbacks):
    """Gold (or a run), Presidio's second opinion, verdicts people gave (one candidate dismissed, one
    confirmed), ten dialogues in four chunks: the same files, report, queue and counts as one job.
    Each chunk de-identifies its own dialogues (reading them with their spans); under the corpus
    scope (one surrogate table through the corpus) the job de-identifies and the chunks audit."""
    _import(project, presidio=True)
    run = _run_of_gold(project) if source == "run" else None
    admin = members["admin"]
    first = _build(django_capture_on_commit_callbacks, settings, project, admin, chunk=1000, run=run, scope=scope)
    assert not ReleaseChunk.objects.filter(export=first).exists()  # ten dialogues in one chunk: one job
    candidates = list(first.candidates.order_by("pk"))
    assert len(candidates) >= 3
    confirmed = next(c for c in candidates if c.reason == "second_opinion")
    dismissed = next(c for c in candidates if c.pk != confirmed.pk)
    review.candidate_decide(candidate_id=dismissed.pk, export=first, user=members["adjudicator"],
                            verdict="dismissed")
    review.candidate_decide(candidate_id=confirmed.pk, export=first, user=members["adjudicator"],
                            verdict="confirmed")

    alone = _build(django_capture_on_commit_callbacks, settings, project, admin, chunk=1000, run=run, scope=scope)
    chunked = _build(django_capture_on_commit_callbacks, settings, project, admin, chunk=3, run=run, scope=scope)
    chunks = ReleaseChunk.objects.filter(export=chunked)
    assert chunks.count() == 4 and set(chunks.values_list("status", flat=True)) == {"done"}
    assert {c.split("/")[-2] for c in chunks.values_list("inputs", flat=True)} == {inputs}
    assert not any(chunks.values_list("candidates", flat=True))  # the original words are not kept on rows
    assert chunked.manifest["self_audit"]["dismissed"] == 1
    assert chunked.report["capture_recapture"]["release_vs_second_opinion"]["messages"] == chunked.manifest["messages"]
    assert "presidio" in " ".join(chunked.manifest["self_audit"]["second_opinion"])
    assert chunked.progress_done == chunked.progress_total
    assert_same_release(alone, chunked)


def _planned(capture, settings, project, user) -> Export:
    """A release whose job ran and planned its chunks, none of them run yet."""
    settings.BLINDSPOT_RELEASE_CHUNK_DIALOGUES = 3
    with capture(execute=False):
        export = release_services.release_start(project=project, user=user)
    with capture(execute=False) as queued:
        assert release_services.release_build(export_id=export.pk) == "continues in chunks"
    assert len(queued) == 4
    export.refresh_from_db()
    assert export.status == "running" and export.progress_done < export.progress_total
    assert not (export_dir(export) / "release.jsonl").exists()  # the chunks write it, in parts
    return export


@pytest.mark.django_db
def test_a_chunk_run_twice_counts_once(project, members, settings, django_capture_on_commit_callbacks):
    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    chunks = list(ReleaseChunk.objects.filter(export=export).order_by("index"))
    assert release_services.release_chunk_audit(chunk_id=chunks[0].pk) == "done"
    stored = ReleaseChunk.objects.get(pk=chunks[0].pk)
    assert release_services.release_chunk_audit(chunk_id=chunks[0].pk) == "already done"  # a redelivery
    # a second run of the same chunk that got as far as storing it again: the row is replaced
    ReleaseChunk.objects.filter(pk=chunks[0].pk).update(status="pending")
    assert release_services.release_chunk_audit(chunk_id=chunks[0].pk) == "done"
    again = ReleaseChunk.objects.get(pk=chunks[0].pk)
    assert (again.result["counts"], again.candidates, again.attempts) == (stored.result["counts"], stored.candidates, 2)
    assert again.result["part"] != stored.result["part"]  # each attempt writes a part of its own
    with django_capture_on_commit_callbacks(execute=True):  # the last one drops the chunk files at commit
        for chunk in chunks[1:]:
            release_services.release_chunk_audit(chunk_id=chunk.pk)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    assert release_services.release_chunk_audit(chunk_id=chunks[-1].pk) == "already done"
    alone = _build(django_capture_on_commit_callbacks, settings, project, members["admin"], chunk=1000)
    assert_same_release(alone, export)


@pytest.mark.django_db
def test_a_worker_lets_the_release_s_engine_go_once_every_chunk_is_taken(project, members, settings,
                                                                      django_capture_on_commit_callbacks):
    """A worker keeps the release's engine between the chunks it builds, and lets it go once no
    chunk is left for anyone to start (the last chunks run elsewhere), not at its next release."""
    from annotator.services.release_chunks import ENGINES

    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    chunks = list(ReleaseChunk.objects.filter(export=export).order_by("index"))
    assert release_services.release_chunk_audit(chunk_id=chunks[0].pk) == "done"
    assert ENGINES._engine is not None and ENGINES._index is not None  # kept for the next chunk
    ReleaseChunk.objects.filter(pk=chunks[-1].pk).update(attempts=1)  # another worker took the last one
    for chunk in chunks[1:-2]:
        assert release_services.release_chunk_audit(chunk_id=chunk.pk) == "done"
        assert ENGINES._engine is not None
    assert release_services.release_chunk_audit(chunk_id=chunks[-2].pk) == "done"
    assert ENGINES._engine is None and ENGINES._index is None  # nothing left to start here
    with django_capture_on_commit_callbacks(execute=True):  # the other worker's chunk, built again here
        assert release_services.release_chunk_audit(chunk_id=chunks[-1].pk) == "done, release finished"
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    alone = _build(django_capture_on_commit_callbacks, settings, project, members["admin"], chunk=1000)
    assert_same_release(alone, export)


@pytest.mark.django_db
def test_an_attempt_beside_another_leaves_the_part_the_chunk_stored(project, members, settings, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    """A redelivered chunk's task runs while the first is still at work: each writes a part of its
    own, the one that stores its results first names its part on the row, and the other deletes
    its own (it holds original words) and counts nothing."""
    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    chunk = ReleaseChunk.objects.filter(export=export).order_by("index").first()
    real, written = release_chunks._audited, []

    def finished_meanwhile(chunk, plan, part, part_key):
        out = real(chunk, plan, part, part_key)
        written.append(part_key)
        if len(written) == 1:  # the other attempt finishes while this one is still auditing
            assert release_services.release_chunk_audit(chunk_id=chunk.pk) == "done"
        return out

    monkeypatch.setattr(release_chunks, "_audited", finished_meanwhile)
    assert release_services.release_chunk_audit(chunk_id=chunk.pk) == "already done"
    stored = ReleaseChunk.objects.get(pk=chunk.pk)
    assert stored.attempts == 2 and stored.result["part"] == written[1] != written[0]
    parts = private_dir(export) / release_chunks.CHUNKS
    assert sorted(p.name for p in parts.glob(f"*/{release_chunks.PARTS}/*")) == [written[1].rsplit("/", 1)[1]]


@pytest.mark.django_db
def test_a_failing_chunk_fails_the_release_with_its_reason(project, members, settings, monkeypatch,
                                                           django_capture_on_commit_callbacks):
    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    chunks = list(ReleaseChunk.objects.filter(export=export).order_by("index"))
    assert release_services.release_chunk_audit(chunk_id=chunks[0].pk) == "done"
    real = release_chunks.read_records

    def broken(lines):
        yield from real(lines)
        raise MemoryError("the second opinion ran out of memory")

    monkeypatch.setattr(release_chunks, "read_records", broken)
    with pytest.raises(MemoryError):
        release_services.release_chunk_audit(chunk_id=chunks[1].pk)
    export.refresh_from_db()
    assert export.status == "failed"
    assert "chunk 2 of 4" in export.error and "ran out of memory" in export.error
    assert ReleaseChunk.objects.get(pk=chunks[1].pk).status == "failed"
    assert not any(ReleaseChunk.objects.filter(export=export).values_list("candidates", flat=True))
    monkeypatch.setattr(release_chunks, "read_records", real)
    assert release_services.release_chunk_audit(chunk_id=chunks[2].pk) == "release failed"
    assert not (private_dir(export) / release_chunks.CHUNKS).exists()  # the chunks' texts are gone
    # the build runs again (an admin's retry, a redelivered job): a new plan, whose chunks finish it
    Export.objects.filter(pk=export.pk).update(status="failed")
    with django_capture_on_commit_callbacks(execute=True):
        assert release_services.release_build(export_id=export.pk) == "continues in chunks"
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    assert release_services.release_chunk_audit(chunk_id=chunks[3].pk) == "gone"  # of the earlier plan


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
def test_real_workers_share_a_releases_chunks_over_redis(celery_worker, project, members, settings):
    """Two Celery workers over Redis take the chunks of one release; one job in this process builds
    the same release."""
    from annotator.celery import app

    _import(project, presidio=False)
    env = {"BLINDSPOT_SURROGATE_KEY": KEY, "BLINDSPOT_RELEASE_CHUNK_DIALOGUES": "1"}
    workers = [celery_worker(concurrency=1, extra_env=env) for _ in range(2)]
    for w in workers:
        wait_for(lambda w=w: " ready." in w.output(), timeout=90, what=lambda w=w: f"a worker to start\n{w.output()[-3000:]}")
    export = release_services.release_start(project=project, user=members["admin"])
    try:
        wait_for(lambda: Export.objects.get(pk=export.pk).is_finished, timeout=120, what="the release")
    except AssertionError:
        raise AssertionError("\n".join(w.output()[-3000:] for w in workers)) from None
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    chunks = ReleaseChunk.objects.filter(export=export)
    assert chunks.count() == 10 and set(chunks.values_list("status", flat=True)) == {"done"}
    names = {w.rsplit("@", 1)[0] for w in chunks.values_list("worker", flat=True)}
    assert names <= {f"{app.conf.task_default_queue}-0", f"{app.conf.task_default_queue}-1"} and names, names

    settings.BLINDSPOT_RELEASE_CHUNK_DIALOGUES = 1000  # the same release as one job, here
    alone = export_create(project=project, kind=Export.Kind.RELEASE, user=members["admin"], params=export.params)
    assert release_services.release_build(export_id=alone.pk) == "built"
    alone.refresh_from_db()
    assert_same_release(alone, export)


@pytest.mark.django_db
def test_on_an_object_store_the_chunks_read_their_files_from_it_and_leave_none(s3, project, members, settings, tmp_path,
                                                                              django_capture_on_commit_callbacks):
    """No shared disk: the job uploads the chunk files with the release, each chunk reads its own from
    the store, the last adds the candidates and the manifest; nothing stays staged or in the bucket
    but the release's files, the same as one job's."""
    from tests.annotator.helpers import s3_objects

    _import(project, presidio=False)
    chunked = _build(django_capture_on_commit_callbacks, settings, project, members["admin"], chunk=3)
    alone = _build(django_capture_on_commit_callbacks, settings, project, members["admin"], chunk=1000)
    assert ReleaseChunk.objects.filter(export=chunked).count() == 4
    stored = {v: (s3_objects(s3, f"pfx/exports/test/release-v00{v}/"),
                  s3_objects(s3, f"pfx/exports/test/private/release-v00{v}/")) for v in (1, 2)}
    for v in (1, 2):
        public, private = stored[v]
        assert set(public) == {f["name"] for f in (chunked if v == 1 else alone).files}
        assert set(private) == set(PRIVATE)  # no chunk file left
    for name in PUBLIC:
        assert stored[1][0][name] == stored[2][0][name], name
    for name in PRIVATE:
        assert stored[1][1][name] == stored[2][1][name], name
    assert _report(chunked) == _report(alone) and _queue(chunked)
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))


@pytest.mark.django_db
def test_a_chunk_of_an_earlier_plan_that_loses_its_files_does_not_fail_the_new_build(
        project, members, settings, monkeypatch, django_capture_on_commit_callbacks):
    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    old = ReleaseChunk.objects.filter(export=export).order_by("index").first()

    def rebuilt_meanwhile(chunk, plan, part, part_key):  # the build ran again while this chunk was being audited
        ReleaseChunk.objects.filter(export=export).delete()
        raise FileNotFoundError(chunk.inputs)

    monkeypatch.setattr(release_chunks, "_audited", rebuilt_meanwhile)
    assert release_services.release_chunk_audit(chunk_id=old.pk) == "release finished meanwhile"
    export.refresh_from_db()
    assert export.status == "running" and not export.error


@pytest.mark.django_db
def test_what_a_worker_writes_of_the_original_words_waits_in_the_release_s_own_folders(
        project, members, settings, monkeypatch, tmp_path, django_capture_on_commit_callbacks):
    """A worker killed while it builds a release cleans nothing up, so what it writes of the
    original words on the way (each part's pending candidates; the utility report's n-grams,
    spilled past a threshold: 50 here) must wait in the release's private folders, which its next
    build, failure or finish deletes, never in the machine's temporary folder. Looked at while
    they are written, in chunks and in one job; both releases are the same all the same."""
    import tempfile

    from pipeline.surrogates import utility

    machine_tmp = tmp_path / "machine-tmp"
    machine_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(machine_tmp))
    monkeypatch.setattr(utility, "SPILL_AT", 50)
    _import(project, presidio=False)
    export = _planned(django_capture_on_commit_callbacks, settings, project, members["admin"])
    private = private_dir(export).parent  # every version's
    looked: list[tuple[str, list[Path], list[Path]]] = []

    def look(what: str) -> None:
        looked.append((what, sorted(machine_tmp.rglob("*")), sorted(private.rglob(f"scratch-*/**/*{what}"))))

    real_figures, real_write = utility.NgramCounts.figures, release_services.write_release

    def figures(self):
        if self.spilled:
            look(".tsv")
        return real_figures(self)

    def write_release(*args, **kwargs):
        out = real_write(*args, **kwargs)
        if args[2]["candidates"].parent.name.startswith("scratch-"):
            look("candidates.jsonl")
        return out

    monkeypatch.setattr(utility.NgramCounts, "figures", figures)
    monkeypatch.setattr(release_services, "write_release", write_release)
    with django_capture_on_commit_callbacks(execute=True):
        for chunk in ReleaseChunk.objects.filter(export=export).order_by("index"):
            release_services.release_chunk_audit(chunk_id=chunk.pk)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    alone = _build(django_capture_on_commit_callbacks, settings, project, members["admin"], chunk=1000)
    whats = [what for what, _, _ in looked]  # the four parts' candidates; the finish's and the job's n-grams
    assert whats.count("candidates.jsonl") == 4 and whats.count(".tsv") >= 4 and set(whats) == {".tsv", "candidates.jsonl"}
    for what, in_machine_tmp, in_scratch in looked:
        assert in_machine_tmp == [] and in_scratch, what
    assert not (private_dir(export) / release_chunks.CHUNKS).exists() and list(machine_tmp.iterdir()) == []
    assert_same_release(alone, export)
