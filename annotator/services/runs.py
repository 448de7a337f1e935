"""Detector runs: split into chunks of dialogues, each chunk idempotent and retry-safe.

A chunk task may run twice (a worker killed after writing but before acking, a redelivery after a
visibility timeout). Writing a chunk therefore *replaces* that chunk's predictions inside one
transaction that also marks the chunk done, under a row lock, so a second run of the same chunk
either finds it done or overwrites identical rows — never duplicates.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Sum, When
from django.utils import timezone

from annotator import model_store
from annotator import task_names as names
from annotator.adapters import dialogues_from_db
from annotator.bulk import insert_rows
from annotator.dispatch import enqueue
from annotator.models import (
    DetectorRun,
    Dialogue,
    MessageSegment,
    MessageUncertainty,
    Prediction,
    Project,
    RunChunk,
    WebhookEvent,
)
from annotator.selectors.tagger import project_tagger
from annotator.selectors.webhooks import hooks_listening
from annotator.services import jobs, tagger
from annotator.services.audit import audit_record
from pipeline import registry
from pipeline.detectors.base import ConfigError, Detector
from pipeline.detectors.ensemble import with_member_configs
from pipeline.detectors.llm import BudgetSpent, failed_share_error, usage_add
from pipeline.detectors.llm.detector import DEFAULT_BASE_URL
from pipeline.detectors.llm.usage import DEFAULT_MAX_FAILED_SHARE

PRESETS: dict[str, dict[str, Any]] = {
    "rules": {},
    "presidio vanilla": {"preset": "vanilla"},
    "presidio tuned": {"preset": "tuned"},
    "math_segments": {},
    "tagger": {},
    "llm basic": {"strategy": "basic"},
    "llm math_aware": {"strategy": "math_aware"},
    "llm segment_aware": {"strategy": "segment_aware"},
    "speakers": {},
    "ensemble": {"mode": "union"},  # the tagger + rules for structured identifiers + speakers' names
    "ensemble + presidio": {"mode": "union", "presidio": True},
}


class RunError(ValueError):
    """A run cannot be started as asked; the message is for the admin."""


class ChunkError(RuntimeError):
    """A chunk's detector failed with an error that held a key; raised in its place, redacted."""


# What a run config may never set, at any depth: where a model is read from and where an endpoint
# is and how it is authorised are the deployment's (settings), never a project admin's. A URL with
# the deployment's key attached would send both the key and the corpus to whoever chose the URL.
DEPLOYMENT_KEYS = frozenset({"base_url", "api_key", "model_path", "model_dir"})
DEFAULT_ENDPOINT = "default"
# A chunk writes its progress while it is detected at most every 5 % of its messages and every
# PROGRESS_SECONDS: a run of one slow chunk (an LLM's) moves along instead of jumping from 0 % to
# 100 %, and a fast detector, whose chunk takes a second, does not pay a write (and a count over
# the run's chunks) for every few dialogues.
PROGRESS_WRITES_PER_CHUNK = 20
PROGRESS_SECONDS = 2.0
CHUNK_WRITE_BATCH = 1000  # run chunks written per INSERT when a run is planned


def _deployment_keys_in(config: Any, where: str = "") -> list[str]:
    """The dotted places in an admin's config that set a key of :data:`DEPLOYMENT_KEYS`."""
    if isinstance(config, Mapping):
        found = [f"{where}{k}" for k in config if k in DEPLOYMENT_KEYS]
        return found + [f for k, v in config.items() for f in _deployment_keys_in(v, f"{where}{k}.")]
    if isinstance(config, list):
        return [f for i, v in enumerate(config) for f in _deployment_keys_in(v, f"{where}{i}.")]
    return []


def llm_endpoints() -> dict[str, dict[str, str]]:
    """The endpoints a run may choose by name: ``default`` (``OPENAI_BASE_URL`` with
    ``OPENAI_API_KEY``) and those of ``BLINDSPOT_LLM_ENDPOINTS``, each with its own key."""
    return {DEFAULT_ENDPOINT: {"base_url": settings.OPENAI_BASE_URL or DEFAULT_BASE_URL,
                               "api_key": settings.OPENAI_API_KEY},
            **settings.BLINDSPOT_LLM_ENDPOINTS}


def llm_endpoint(name: str) -> dict[str, str]:
    """The named endpoint (``RunError`` for a name the deployment does not define)."""
    endpoints = llm_endpoints()
    if not isinstance(name, str) or name not in endpoints:
        raise RunError(f"llm: no LLM endpoint {name!r}; the deployment defines {', '.join(sorted(endpoints))} "
                       "(BLINDSPOT_LLM_ENDPOINTS).")
    return endpoints[name]


def redact(text: str) -> str:
    """``text`` with every configured endpoint key replaced: an endpoint may echo the key it was
    sent in its error, and errors are stored on chunks, runs and job pages and written to logs."""
    for endpoint in llm_endpoints().values():
        if endpoint["api_key"]:
            text = text.replace(endpoint["api_key"], "[redacted]")
    return text


def detector_config(*, project: Project, detector: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The config a run records: the admin's, plus what the project and settings decide. An admin's
    config that sets an endpoint, a key or a model directory is refused (``RunError``)."""
    refused = _deployment_keys_in(config)
    if refused:
        raise RunError(f"{', '.join(refused)} may not be set in a run config: endpoints and their keys are the "
                       "deployment's (an llm run may choose one by name, \"endpoint\", from those in "
                       "BLINDSPOT_LLM_ENDPOINTS), and a tagger runs a version of this project's (\"version\").")
    return _deployment_config(project=project, detector=detector, config=config)


def _deployment_config(*, project: Project, detector: str, config: Mapping[str, Any]) -> dict[str, Any]:
    cfg = dict(config)
    if detector == "ensemble":
        if cfg.get("members") is None:  # the default members: their tagger (and roles) are the project's
            cfg["tagger"] = cfg.get("tagger") or {}
            if "role_labels" in project.release_fields:
                cfg["speakers"] = cfg.get("speakers") or {}
        cfg = with_member_configs(  # anything malformed: the ensemble says what is wrong
            cfg, lambda name, member: _deployment_config(project=project, detector=name, config=member))
    if detector == "tagger":
        cfg.setdefault("model_dir", str(settings.BLINDSPOT_MODELS_DIR))
        cfg.setdefault("policy", project.labelling_policy)
        if "version" in cfg:  # a version of this project's tagger, chosen by the admin
            try:
                cfg["model_path"] = str(tagger.project_version(project, cfg.pop("version")).path)
            except tagger.TaggerError as exc:
                raise RunError(str(exc)) from None
        if not cfg.get("model_path"):  # the project's active version (or the day-one model), never "the newest"
            runs_on = project_tagger(project)
            if not runs_on:
                raise RunError(f"{project.name} has no active tagger ({runs_on.note}): train one, or make a "
                               "version active on the Tagger page.")
            cfg["model_path"] = str(settings.BLINDSPOT_MODELS_DIR / runs_on.version)
    if detector == "speakers" and "role_labels" in project.release_fields:
        cfg.setdefault("roles", list(project.field_policy().role_labels))  # one list of roles per project
    if detector == "llm":
        cfg.setdefault("model", settings.BLINDSPOT_LLM_MODEL)
        cfg.setdefault("endpoint", DEFAULT_ENDPOINT)
        cfg["base_url"] = llm_endpoint(cfg["endpoint"])["base_url"]  # recorded: where the text went
        cfg.setdefault("labels", project.labels)
    return cfg


@lru_cache(maxsize=8)
def _cached_detector(name: str, config_json: str) -> Detector:
    """One detector per (name, config) per worker process: models load once, not per chunk."""
    return registry.build(name, json.loads(config_json))


def _with_endpoints(detector: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (an llm's, or an ensemble's llm members') with the URL and key of its named
    endpoint, from settings now: whatever URL a run recorded (one started before run configs
    were checked) is never called. An endpoint without a key is sent a placeholder, never the
    deployment's key (the pipeline would otherwise fall back to ``OPENAI_API_KEY``)."""
    cfg = dict(config)
    if detector == "llm":
        endpoint = llm_endpoint(cfg.pop("endpoint", DEFAULT_ENDPOINT))
        cfg["base_url"], cfg["api_key"] = endpoint["base_url"], endpoint["api_key"] or "not-needed"
    elif detector == "ensemble":
        cfg = with_member_configs(cfg, _with_endpoints)
    return cfg


def detector_for(run: DetectorRun) -> Detector:
    """The run's detector; secrets come from settings at build time and are never stored on the run.
    An LLM's is built for each chunk (no model to load): its usage is then the chunk's, and its
    budget what the run has left of ``max_requests`` and ``max_seconds``."""
    if run.detector != "llm":
        return shared_detector(run.detector, run.config)
    config = _with_endpoints(run.detector, run.config)
    spent = {"max_requests": (run.usage or {}).get("requests", 0),
             "max_seconds": (timezone.now() - (run.started_at or timezone.now())).total_seconds()}
    for key, used in spent.items():
        if config.get(key) is not None:
            if used >= config[key]:
                raise BudgetSpent(f"llm: the run's budget ({key}={config[key]:g}) is spent; nothing more is sent")
            config[key] -= used
    return registry.build(run.detector, config)


def _llm_usage(run: DetectorRun, detector: Detector | None) -> dict[str, Any]:
    """What a chunk's own LLM detector spent (nothing for other detectors)."""
    if run.detector != "llm" or detector is None:
        return {}
    return dict(getattr(detector, "usage", {}) or {})


def shared_detector(name: str, config: Mapping[str, Any]) -> Detector:
    """The detector ``name`` with a recorded ``config`` (:func:`detector_config`), built once per
    worker process. A tagger's model is fetched from the model store into this machine's cache
    first (a no-op on local storage; annotator/model_store.py)."""
    config = model_store.localise_tagger_config(name, _with_endpoints(name, config))
    return _cached_detector(name, json.dumps(config, sort_keys=True))


def run_start(*, project: Project, detector: str, config: Mapping[str, Any] | None = None,
              user=None, chunk_dialogues: int | None = None, chunk_messages: int | None = None) -> DetectorRun:
    """Create a queued run and its chunks; the caller enqueues them (``run_enqueue``). A chunk
    closes at ``chunk_messages`` messages or ``chunk_dialogues`` dialogues, whichever comes first
    (``BLINDSPOT_RUN_CHUNK_MESSAGES`` and ``BLINDSPOT_RUN_CHUNK_DIALOGUES`` by default)."""
    if detector not in registry.available():
        raise RunError(f"Unknown detector {detector!r}; choose one of {', '.join(registry.available())}.")
    cfg = detector_config(project=project, detector=detector, config=config or {})
    try:
        probe = registry.build(detector, _with_endpoints(detector, cfg))  # validates; models load lazily
    except (ConfigError, ValueError, ImportError) as exc:
        raise RunError(f"{detector}: {exc}") from None
    size = chunk_dialogues or settings.BLINDSPOT_RUN_CHUNK_DIALOGUES
    messages = chunk_messages or settings.BLINDSPOT_RUN_CHUNK_MESSAGES
    stored = cfg  # no key: those are added when a worker builds the detector
    with transaction.atomic():
        run = DetectorRun.objects.create(
            project=project, detector=detector, config=stored, created_by=user,
            detector_version=str(getattr(probe, "version", "")),
        )
        run.total_chunks, run.progress_total = _chunks_create(run, project, size, messages)
        if not run.total_chunks:
            raise RunError("The project has no dialogues yet: import a corpus first.")
        run.save(update_fields=["total_chunks", "progress_total"])
        audit_record(user=user, action="run.start", obj=run, project=project, detector=detector, config=stored)
    return run


def _chunks_create(run: DetectorRun, project: Project, size: int, max_messages: int) -> tuple[int, int]:
    """The run's chunks of consecutive dialogues, each closed once it holds ``size`` dialogues or
    ``max_messages`` messages, from the dialogues' maintained message counters (never a count over
    the message table), streamed and written in batches; returns how many chunks and messages."""
    rows = Dialogue.objects.filter(project=project).order_by("pk").values_list("pk", "message_count")
    chunks: list[RunChunk] = []
    n_chunks = n_messages = 0
    ids: list[int] = []
    count = 0
    for pk, messages in rows.iterator(chunk_size=10_000):
        ids.append(pk)
        count += messages
        if len(ids) >= size or count >= max_messages:
            chunks.append(RunChunk(run=run, index=n_chunks, dialogue_ids=ids, message_count=count))
            n_chunks, n_messages, ids, count = n_chunks + 1, n_messages + count, [], 0
        if len(chunks) >= CHUNK_WRITE_BATCH:
            RunChunk.objects.bulk_create(chunks)
            chunks.clear()
    if ids:
        chunks.append(RunChunk(run=run, index=n_chunks, dialogue_ids=ids, message_count=count))
        n_chunks, n_messages = n_chunks + 1, n_messages + count
    RunChunk.objects.bulk_create(chunks)
    return n_chunks, n_messages
    return run


def run_enqueue(run: DetectorRun, *, only_unfinished: bool = True) -> int:
    """Queue every chunk not yet done (after commit). Returns how many were queued."""
    chunks = run.chunks.all()
    if only_unfinished:
        chunks = chunks.exclude(status=RunChunk.Status.DONE)
    ids = list(chunks.values_list("pk", flat=True))
    for chunk_id in ids:
        enqueue(names.RUNS_CHUNK_PROCESS, chunk_id)
    return len(ids)


def run_cancel(*, run: DetectorRun, user=None) -> DetectorRun:
    with transaction.atomic():
        run = DetectorRun.objects.select_for_update().get(pk=run.pk)
        if jobs.job_cancel(run):
            audit_record(user=user, action="run.cancel", obj=run, project=run.project)
    run.refresh_from_db()
    return run


def run_resume(*, run: DetectorRun, user=None) -> int:
    """Re-queue the unfinished chunks of a failed or cancelled run; finished chunks are kept."""
    with transaction.atomic():
        run = DetectorRun.objects.select_for_update().get(pk=run.pk)
        run.chunks.filter(status=RunChunk.Status.FAILED).update(status=RunChunk.Status.PENDING, error="")
        run.status, run.error, run.finished_at = DetectorRun.Status.QUEUED, "", None
        run.save(update_fields=["status", "error", "finished_at"])
        audit_record(user=user, action="run.resume", obj=run, project=run.project)
        return run_enqueue(run)


def chunk_process(*, chunk_id: int, worker: str = "") -> str:
    """Detect over one chunk and write its predictions; returns what happened (for logs/tests).

    Any worker may take any chunk; ``worker`` (the Celery worker's name) is recorded on the chunk
    that it finishes, so a run shows how its chunks spread. Rows are written as dialogues finish
    (:func:`_detect`), so an attempt that fails keeps what it wrote and the next one resumes
    after it; an LLM's usage (also when it fails: the tokens were spent) is added to the run's."""
    chunk = RunChunk.objects.select_related("run").get(pk=chunk_id)
    run = chunk.run
    if chunk.status == RunChunk.Status.DONE:
        return "already done"
    if run.status in (DetectorRun.Status.CANCELLED, DetectorRun.Status.FAILED):
        return f"run {run.status}"
    jobs.job_start(run)
    RunChunk.objects.filter(pk=chunk.pk).update(attempts=F("attempts") + 1)
    chunk.refresh_from_db(fields=["attempts", "messages_done"])
    t0 = time.perf_counter()
    detector = None
    try:
        detector = detector_for(run)
        pairs = dialogues_from_db(chunk.dialogue_ids)
        return _detect(detector, pairs, chunk, worker=worker, t0=t0)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        chunk_fail(chunk=chunk, error=redact(error), usage=_llm_usage(run, detector))
        if redact(error) != error:  # the worker logs what is raised: not the key an endpoint echoed
            raise ChunkError(redact(error)) from None
        raise
    finally:
        if run.detector == "llm" and detector is not None:
            detector.close()


def _detect(detector: Detector, pairs, chunk: RunChunk, *, worker: str, t0: float) -> str:
    """The chunk's dialogues not yet written, detected as the detector yields them; what is
    detected is written (with the chunk's ``messages_done`` and the run's progress) every
    ``PROGRESS_SECONDS``, the rest with the chunk's DONE. A fast detector writes once; a slow
    one (an LLM's) keeps nearly all it finished when it fails."""
    written = chunk.messages_done
    todo = _unwritten(pairs, written)
    batch: list = []
    left, last = len(todo), time.monotonic()
    for pair, dets in zip(todo, detector.detect_many([d for d, _ in todo]), strict=True):
        batch.append((pair, dets))
        left -= 1
        if left and time.monotonic() - last >= PROGRESS_SECONDS:
            if not _rows_write(chunk, batch, offset=written):
                return "taken over by another attempt"
            written += sum(len(d.messages) for (d, _), _ in batch)
            batch, last = [], time.monotonic()
            jobs.job_progress(chunk.run, _messages_done(chunk.run_id), chunk.run.progress_total)
    return _chunk_finish(detector, pairs, chunk, batch, offset=written, worker=worker, t0=t0)


def _unwritten(pairs: list, written: int) -> list:
    """The dialogues after the first ``written`` messages (those an earlier attempt wrote)."""
    seen = 0
    for i, (dialogue, _) in enumerate(pairs):
        if seen >= written:
            return pairs[i:]
        seen += len(dialogue.messages)
    return []


def _rows_write(chunk: RunChunk, batch: list, *, offset: int, locked: RunChunk | None = None) -> bool:
    """Write one batch of ``(pair, detections)`` after the chunk's first ``offset`` messages;
    False when another attempt of the chunk has written past them (or finished it)."""
    with transaction.atomic():
        locked = locked or RunChunk.objects.select_for_update().get(pk=chunk.pk)
        if locked.status == RunChunk.Status.DONE or locked.messages_done != offset:
            return False
        pairs = [pair for pair, _ in batch]
        predictions, segments, margins, _ = _chunk_rows(chunk.run, pairs, [dets for _, dets in batch])
        for model, columns, rows in ((Prediction, PREDICTION_COLUMNS, predictions),
                                     (MessageSegment, SEGMENT_COLUMNS, segments),
                                     (MessageUncertainty, MARGIN_COLUMNS, margins)):
            insert_rows(model, columns, rows)
        locked.messages_done = offset + sum(len(d.messages) for d, _ in pairs)
        RunChunk.objects.filter(pk=locked.pk).update(messages_done=locked.messages_done)
    return True


def _chunk_finish(detector: Detector, pairs, chunk: RunChunk, batch: list, *, offset: int, worker: str,
                  t0: float) -> str:
    """The chunk's last rows, its DONE and its usage in one transaction, then the run advanced."""
    with transaction.atomic():
        locked = RunChunk.objects.select_for_update().get(pk=chunk.pk)
        current = DetectorRun.objects.select_for_update().get(pk=chunk.run_id)
        if locked.status == RunChunk.Status.DONE:
            return "already done"
        if current.status == DetectorRun.Status.CANCELLED:
            return "run cancelled"
        if not _rows_write(chunk, batch, offset=offset, locked=locked):
            return "taken over by another attempt"
        _recount(locked, sum(len(d.messages) for d, _ in pairs))
        locked.status, locked.error, locked.worker = RunChunk.Status.DONE, "", worker[:200]
        locked.seconds, locked.finished_at = time.perf_counter() - t0, timezone.now()
        locked.peak_rss_mb = peak_rss_mb()
        locked.save(update_fields=["status", "error", "worker", "seconds", "finished_at", "peak_rss_mb",
                                   "message_count"])
        current.usage = usage_add(current.usage or {}, _llm_usage(current, detector))
        _advance_run(current, str(getattr(detector, "model_version", ""))[:300])
    return "done"


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _recount(locked: RunChunk, messages: int) -> None:
    """A chunk planned from counters that were off (messages written outside an import) is
    corrected from what it detected, and so is its run's total."""
    if messages != locked.message_count:
        DetectorRun.objects.filter(pk=locked.run_id).update(
            progress_total=F("progress_total") + messages - locked.message_count)
        locked.message_count = messages


def _messages_done(run_id: int) -> int:
    """A run's messages detected: every done chunk's, and what the chunks under way have done."""
    done = RunChunk.objects.filter(run_id=run_id).aggregate(n=Sum(Case(
        When(status=RunChunk.Status.DONE, then=F("message_count")),
        When(status=RunChunk.Status.PENDING, then=F("messages_done")), default=0)))
    return done["n"] or 0


PREDICTION_COLUMNS = ("run_id", "message_id", "start", "end", "label", "score", "source_label")
SEGMENT_COLUMNS = ("run_id", "message_id", "segment", "score")
MARGIN_COLUMNS = ("run_id", "message_id", "margin")


def _chunk_rows(run: DetectorRun, pairs, detections) -> tuple[list, list, list, list[int]]:
    """Rows (tuples of ``PREDICTION_COLUMNS``, ``SEGMENT_COLUMNS`` and ``MARGIN_COLUMNS``) of
    predictions, segments and uncertainty margins for one chunk's detections, and the message ids
    they replace; spans past their message's end are dropped."""
    predictions, segments, margins = [], [], []
    message_ids: list[int] = []
    for (dialogue, pks), dets in zip(pairs, detections, strict=True):
        message_ids.extend(pks)
        for det in dets:
            message_id = pks[det.index]
            text_len = len(dialogue.messages[det.index].text)
            for s in det.spans:
                if s.end <= text_len:
                    predictions.append((run.pk, message_id, s.start, s.end, s.label, float(s.score),
                                        (s.source or s.label)[:80]))
            if det.segment is not None:
                segments.append((run.pk, message_id, det.segment, det.segment_score))
            if det.margin is not None:
                margins.append((run.pk, message_id, max(0.0, det.margin)))
    return predictions, segments, margins, message_ids


def _advance_run(current: DetectorRun, model_version: str) -> None:
    """Count a locked run's finished chunks and messages after one more chunk is done; the last
    one marks it succeeded (and audits that), or failed when more of its messages got no usable
    answer than its detector allows (``max_failed_share``)."""
    current.done_chunks = current.chunks.filter(status=RunChunk.Status.DONE).count()
    current.progress_done = _messages_done(current.pk)
    current.model_version = model_version
    fields = ["done_chunks", "progress_done", "model_version", "usage"]
    if current.done_chunks == current.total_chunks:
        too_many = failed_share_error(
            current.usage or {}, current.config.get("max_failed_share", DEFAULT_MAX_FAILED_SHARE))
        if too_many:
            current.save(update_fields=fields)
            jobs.job_fail(current, f"{too_many}; the run page lists them")
            audit_record(user=None, action="run.failed", obj=current, project=current.project, error=too_many)
            run_finished_announce(current)
            return
        current.status, current.finished_at = DetectorRun.Status.SUCCEEDED, timezone.now()
        fields += ["status", "finished_at"]
        audit_record(user=None, action="run.succeeded", obj=current, project=current.project,
                     messages=current.progress_done)
        run_finished_announce(current)
    current.save(update_fields=fields)


def run_finished_announce(run: DetectorRun) -> None:
    """The event for the project's webhooks, queued after commit (only when a hook listens)."""
    if hooks_listening(run.project_id, WebhookEvent.RUN_FINISHED):
        enqueue(names.WEBHOOKS_FIRE, WebhookEvent.RUN_FINISHED.value, run.pk)


def chunk_fail(*, chunk: RunChunk, error: str, usage: Mapping[str, Any] | None = None) -> None:
    """A chunk failed for good: the run is marked failed with the error, and what the chunk spent
    added to its usage; finished chunks and the chunk's written dialogues stay."""
    with transaction.atomic():
        if usage:
            current = DetectorRun.objects.select_for_update().only("usage").get(pk=chunk.run_id)
            current.usage = usage_add(current.usage or {}, usage)
            current.save(update_fields=["usage"])
        RunChunk.objects.filter(pk=chunk.pk).update(status=RunChunk.Status.FAILED, error=error[:20000])
        if jobs.job_fail(chunk.run, f"chunk {chunk.index}: {error}"):
            audit_record(user=None, action="run.failed", obj=chunk.run, project=chunk.run.project, error=error[:500])
            run_finished_announce(chunk.run)
