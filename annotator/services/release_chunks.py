"""A release in chunks of dialogues, spread over the Celery workers.

De-identifying, leak-checking and auditing one dialogue needs nothing of the others but a little
state the engine carries (:mod:`pipeline.surrogates.parts`), and the second opinion (Presidio, the
tagger, the rules on every released message) is most of a release's work. So a release of more
than ``BLINDSPOT_RELEASE_CHUNK_DIALOGUES`` dialogues is built in three steps, the way a run's
detection is:

1. its job (:func:`annotator.services.releases.release_write`) reads every chosen dialogue once,
   writes each with its spans to one file per chunk (``dialogues/NNNNN.jsonl``), collects the
   corpus's originals and works out what each dialogue registers (``engine.json``), and writes the
   chunks' plan (``plan.json``: the second opinion, the review verdicts, the evidence). The files
   go where the mapping table goes (the release's private folder in the ``exports`` storage, so on
   an object store any worker reads them); then :func:`chunks_plan` creates one
   :class:`~annotator.models.ReleaseChunk` per file and queues one task for each;
2. each chunk's task (:func:`chunk_audit`), on any worker, de-identifies its dialogues with the
   engine as it stood before them, writes its part of the release and of the mapping table with
   its leak and utility counts (``parts/NNNNN-<attempt>/``), audits them, and stores what the audit settled
   on its row (counts, capture tallies, its pending candidates in order);
3. the task that finishes the last chunk, under the release's row lock, joins the parts in order,
   merges their reports and the chunks' audits
   (:meth:`~pipeline.surrogates.audit.ReleaseAudit.merge`: the same counts, candidates,
   capture–recapture as one audit of the whole) and finishes the release with them (the
   ``finish`` it is given: ``releases``' own). The release is the one job's, byte for byte.

Under ``scope="corpus"`` one surrogate table runs through the corpus, so the job de-identifies
every dialogue itself and the chunks only audit (``audit/NNNNN.jsonl``: what the audit reads of
each released dialogue, :class:`~pipeline.surrogates.audit.AuditSpill`).

A chunk that runs twice (a redelivered task) finds itself done, or writes and stores the same
result again: nothing is counted twice. A chunk that fails fails the release with its error. A
release whose job runs again (a redelivered build) plans anew: the earlier plan's rows are
deleted, so its tasks find nothing to do. Smaller releases stay one job (nothing to share), as
does the command line (``manage.py deidentify`` audits in process).
"""

from __future__ import annotations

import functools
import json
import posixpath
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator import storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import Export, ReleaseChunk
from annotator.services import jobs
from annotator.services.exports import (
    export_fail,
    export_publish,
    fresh_dir,
    private_dir,
    private_key,
)
from annotator.services.runs import redact, shared_detector
from pipeline.surrogates.audit import (
    ReleaseAudit,
    SecondOpinion,
    default_second_opinion,
    in_batches,
    read_audit_inputs,
)
from pipeline.surrogates.candidates import Candidate
from pipeline.surrogates.parts import PartEngines, Record, SpillFiles, read_records

PLAN = "plan.json"
CHUNKS = "chunks"
DIALOGUES = "dialogues"  # a release in parts: each chunk's dialogues with their spans
AUDIT = "audit"  # a release audited in chunks: what the audit reads of each released dialogue
ENGINE = "engine.json"  # a release in parts: the corpus's originals and what each dialogue registers
PARTS = "parts"  # a release in parts: each chunk's release, mapping rows and state
PART_RELEASE, PART_MAPPING, PART_STATE = "release.jsonl", "mapping.jsonl", "state.json"
Finish = Callable[[Export, dict[str, Any], ReleaseAudit], None]


@dataclass(frozen=True)
class EngineState:
    """What every chunk of a release in parts builds its engine from (:mod:`pipeline.surrogates.parts`),
    and the key of that build."""

    key: str
    originals: list[tuple[str, str]]
    registered: list[list[Any]]


ENGINES = PartEngines()  # this worker process's engine of the release whose parts it builds


Part = Callable[[Export, dict[str, Any], int, Iterable[Record], ReleaseAudit, EngineState, Path],
                tuple[dict[str, Any], list[Candidate]]]


def chunk_size() -> int:
    return max(1, settings.BLINDSPOT_RELEASE_CHUNK_DIALOGUES)


def chunk_folder(export: Export) -> tuple[Path, str]:
    """Where this build's chunk files go: a folder of the release's private folder named afresh
    for each build (a task of an earlier build never reads this one's files), here and as a key."""
    key = storage.storage_key(private_key(export), CHUNKS, uuid.uuid4().hex[:12])
    return storage.work_dir(storage.exports_storage(), key), key


def local_chunks(export: Export) -> Path:
    """This machine's copy of the release's chunk folder (every build's)."""
    return Path(private_dir(export)) / CHUNKS


@contextmanager
def scratch(folder: Path) -> Iterator[Path]:
    """A folder inside ``folder`` for what a worker writes of the original words on its way
    through a release (a part's pending candidates, the utility report's spilled n-grams),
    deleted when it is done. Never the machine's temporary folder: a worker killed meanwhile
    deletes nothing, so ``folder`` is one the release's next build, failure or finish deletes
    (:func:`local_chunks`, by :func:`chunk_files_drop`; the private folder, made afresh)."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="scratch-", dir=folder) as tmp:
        yield Path(tmp)


def second_opinion_built(specs: list[list[Any]]) -> SecondOpinion:
    """The second opinion a release planned: the rules' structured identifiers and the detectors
    of ``specs`` (``[name, recorded config]``), built once per worker process."""
    return SecondOpinion(default_second_opinion() + [shared_detector(name, config) for name, config in specs])


def chunks_plan(export: Export, spill: SpillFiles, key: str, plan: dict[str, Any],
                dialogue_pks: dict[str, int]) -> int:
    """Write the plan beside the chunk files, store them (on an object store: upload what the job
    built, so that any worker finds it), replace this release's chunks with one per file and
    queue them after commit. Returns how many."""
    (spill.folder.parent / PLAN).write_text(json.dumps(plan, ensure_ascii=False), encoding="utf-8")
    export_publish(export)
    rows = [ReleaseChunk(export=export, index=i, inputs=posixpath.join(key, spill.folder.name, c.name),
                         message_count=c.messages,
                         dialogue_pks={d: dialogue_pks[d] for d in c.dialogue_ids})
            for i, c in enumerate(spill.chunks)]
    with transaction.atomic():
        jobs.job_progress(export, plan["progress"]["base"], plan["progress"]["total"])  # the job's part is done
        ReleaseChunk.objects.filter(export=export).delete()
        created = ReleaseChunk.objects.bulk_create(rows, batch_size=500)
        for chunk in created:
            enqueue(names.EXPORTS_RELEASE_CHUNK, chunk.pk)
    return len(created)


def _read(key: str) -> str:
    with storage.open_file(storage.exports_storage(), key) as fh:
        return fh.read().decode("utf-8")


def _folder_key(inputs: str) -> str:
    """The build's chunk folder, from a chunk's input file (``<folder>/<dialogues or audit>/NNNNN.jsonl``)."""
    return posixpath.dirname(posixpath.dirname(inputs))


def _plan(chunk: ReleaseChunk) -> dict[str, Any]:
    return json.loads(_read(posixpath.join(_folder_key(chunk.inputs), PLAN)))


@functools.lru_cache(maxsize=1)
def _engine_state(key: str) -> EngineState:
    """Read once per worker process and build (every chunk of a build reads the same file; each
    build's key is new, so nothing stale is ever read)."""
    state = json.loads(_read(key))
    return EngineState(key, [(label, text) for label, text in state["originals"]], state["registered"])


def _part_key(chunk: ReleaseChunk) -> str:
    """Where one attempt at a chunk of a release in parts writes its part: a folder of its own, so
    that an attempt running beside another (a redelivered task) never writes into the part the
    chunk's row names (the one whose results it stored)."""
    return storage.storage_key(_folder_key(chunk.inputs), PARTS, f"{chunk.index:05d}-{uuid.uuid4().hex[:8]}")


def _part_drop(key: str | None) -> None:
    if key is not None:
        store = storage.exports_storage()
        storage.delete_tree(store, key)
        shutil.rmtree(storage.work_dir(store, key), ignore_errors=True)


def _audited(chunk: ReleaseChunk, plan: dict[str, Any], part: Part,
             part_key: str | None) -> tuple[ReleaseAudit, list[Candidate]]:
    """The chunk's dialogues audited with the release's second opinion and verdicts (and first
    de-identified, for a release in parts, its files stored); a worker whose detectors are not
    the ones the release planned (another version) refuses."""
    second = second_opinion_built(plan["second_opinion"])
    if second.names != plan["second_opinion_names"]:
        raise RuntimeError(f"this worker's second opinion is {', '.join(second.names)}, the release planned "
                           f"{', '.join(plan['second_opinion_names'])}: install the same versions on every worker")
    audit = ReleaseAudit(second_opinion=second, dismissed=plan["dismissed"], confirmed=plan["confirmed"])
    lines = (line for line in _read(chunk.inputs).split("\n") if line)  # not splitlines: U+2028 is text
    if part_key is not None:
        store = storage.exports_storage()
        folder = fresh_dir(storage.work_dir(store, part_key))
        engine = _engine_state(storage.storage_key(_folder_key(chunk.inputs), ENGINE))
        state, pending = part(chunk.export, plan, chunk.index, read_records(lines), audit, engine, folder)
        (folder / PART_STATE).write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        storage.publish_tree(store, folder, part_key)
        return audit, pending
    pending: list[Candidate] = []
    for batch in in_batches(read_audit_inputs(lines)):
        pending.extend(audit.check_many(batch))
    return audit, pending


def chunk_audit(*, chunk_id: int, part: Part, finish: Finish, worker: str = "") -> str:
    """Build one chunk (its ``part`` of a release in parts, or its second opinion only) and store
    what its audit settled; the last chunk done finishes the release with ``finish``. Returns what
    happened (for logs and tests)."""
    chunk = ReleaseChunk.objects.select_related("export__project").filter(pk=chunk_id).first()
    if chunk is None:
        return "gone"  # the release was built again: another plan replaced this chunk
    if chunk.status == ReleaseChunk.Status.DONE:
        return "already done"
    if chunk.export.status != Export.Status.RUNNING:
        return f"release {chunk.export.status}"
    ReleaseChunk.objects.filter(pk=chunk.pk).update(attempts=F("attempts") + 1)
    t0, part_key = time.perf_counter(), None
    try:
        plan = _plan(chunk)
        part_key = _part_key(chunk) if plan["parts"] else None
        audit, pending = _audited(chunk, plan, part, part_key)
        with transaction.atomic():
            outcome = _chunk_done(chunk, plan, audit, pending, part_key, finish, worker=worker,
                                  seconds=time.perf_counter() - t0)
        if not outcome.startswith("done"):
            _part_drop(part_key)  # another attempt's part is the chunk's, or the release is over
        return outcome
    except Exception as exc:
        _part_drop(part_key)
        # only a chunk of the build under way fails it: one of an earlier plan lost its files to the new one
        if ReleaseChunk.objects.filter(pk=chunk.pk, export__status=Export.Status.RUNNING).exists():
            chunk_fail(chunk, redact(f"{type(exc).__name__}: {exc}"))
            raise
        return "release finished meanwhile"  # failed by another chunk, or built again


def _chunk_done(chunk: ReleaseChunk, plan: dict[str, Any], audit: ReleaseAudit, pending: list[Candidate],
                part_key: str | None, finish: Finish, *, worker: str, seconds: float) -> str:
    """Inside the transaction: store the chunk's audit (and where its part is) under its row lock
    and the release's, move the release's progress, and finish it when this was the last chunk."""
    locked = ReleaseChunk.objects.select_for_update().filter(pk=chunk.pk).first()
    export = Export.objects.select_for_update(of=("self",)).select_related("project", "source_run").get(
        pk=chunk.export_id)
    if locked is None:
        return "gone"
    if locked.status == ReleaseChunk.Status.DONE:
        return "already done"
    if export.status != Export.Status.RUNNING:
        return f"release {export.status}"
    locked.status, locked.error, locked.worker = ReleaseChunk.Status.DONE, "", worker[:200]
    locked.result, locked.candidates = {"counts": audit.counts(), "part": part_key}, [c.to_dict() for c in pending]
    locked.seconds, locked.finished_at = seconds, timezone.now()
    locked.save(update_fields=["status", "error", "worker", "result", "candidates", "seconds", "finished_at"])
    chunks = ReleaseChunk.objects.filter(export=export)
    done = chunks.filter(status=ReleaseChunk.Status.DONE)
    audited = sum(len(pks) for pks in done.values_list("dialogue_pks", flat=True))
    jobs.job_progress(export, plan["progress"]["base"] + audited, plan["progress"]["total"])
    if done.count() < chunks.count():
        if not chunks.filter(status=ReleaseChunk.Status.PENDING, attempts=0).exists():
            _engines_forget()  # every chunk is taken: this worker builds no more of the release's parts
        return "done"
    _engines_forget()  # every part is built
    finish(export, plan, ReleaseAudit(second_opinion=audit.second_opinion, dismissed=plan["dismissed"],
                                      confirmed=plan["confirmed"]))
    transaction.on_commit(lambda: chunk_files_drop(export))
    return "done, release finished"


def _engines_forget() -> None:
    """Let go of the release's engine and leak index (130 MB at a million messages): a worker that
    held them until its next release kept them through every other job in between. A chunk run
    again after all (a redelivery) builds them anew."""
    ENGINES.forget()
    _engine_state.cache_clear()


def chunks_merge(merged: ReleaseAudit, export: Export) -> dict[str, int]:
    """Add every chunk's audit to ``merged`` in dialogue order (its candidates go to
    ``merged.out``), then empty the chunks' copies of the original words; returns the released
    dialogues' ids -> rows."""
    dialogue_pks: dict[str, int] = {}
    rows = (ReleaseChunk.objects.filter(export=export).order_by("index")
            .values_list("result", "candidates", "dialogue_pks"))
    for result, candidates, pks in rows.iterator(chunk_size=50):
        merged.merge(result["counts"], (Candidate.from_dict(c) for c in candidates))
        dialogue_pks.update(pks)
    ReleaseChunk.objects.filter(export=export).update(candidates=[])
    return dialogue_pks


def parts_joined(export: Export, outs: dict[str, IO[bytes]]) -> Iterator[dict[str, Any]]:
    """The parts of a release in parts, in order: each one's files (by name) appended to ``outs``,
    its state yielded."""
    store = storage.exports_storage()
    rows = ReleaseChunk.objects.filter(export=export).order_by("index").values_list("result", flat=True)
    for result in rows.iterator(chunk_size=200):
        key = result["part"]
        for name, out in outs.items():
            with storage.open_file(store, storage.storage_key(key, name)) as fh:
                shutil.copyfileobj(fh, out, 1 << 20)
        yield json.loads(_read(storage.storage_key(key, PART_STATE)))


def chunk_fail(chunk: ReleaseChunk, error: str) -> None:
    """A chunk failed: it and its release are marked failed with the error (done chunks stay, without
    their copies of the original words; the chunk files are deleted)."""
    ReleaseChunk.objects.filter(pk=chunk.pk).update(status=ReleaseChunk.Status.FAILED, error=error[:20000])
    ReleaseChunk.objects.filter(export_id=chunk.export_id).update(candidates=[])
    total = ReleaseChunk.objects.filter(export_id=chunk.export_id).count()
    export_fail(chunk.export, f"The release's second opinion failed on chunk {chunk.index + 1} of {total} "
                              f"(on a worker; build a new version once it is fixed): {error}")
    chunk_files_drop(chunk.export)


def chunk_files_drop(export: Export) -> None:
    """Delete the chunk files of every build of ``export`` (they hold original texts), from the
    store and from this machine."""
    store = storage.exports_storage()
    storage.delete_tree(store, storage.storage_key(private_key(export), CHUNKS))
    shutil.rmtree(local_chunks(export), ignore_errors=True)
