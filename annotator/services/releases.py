"""Anonymized releases: the corpus with gold spans (or a chosen run's spans) replaced.

A release is an :class:`~annotator.models.Export` of kind ``release``. Building one reads the
chosen dialogues with their spans from the database once (:func:`annotator.services.dialogues.stream_dialogues`,
which merges pending gold first, as a gold export does), spilling them to local files, for the two
passes of :mod:`pipeline.surrogates.batch` (spans, then surrogates / tags / redaction with the leak
check and the utility report), which write the outputs where they belong:

- ``<project>/release-vNNN/``: ``release.jsonl`` (import format),
  ``leaks.json``, ``utility.json``, ``manifest.json`` — the downloadable release;
- ``<project>/private/release-vNNN/mapping.jsonl``: the original → surrogate
  table, never part of the release, downloadable by admins only;

both in the ``exports`` storage (``BLINDSPOT_EXPORTS_DIR`` by default, or an object store:
:mod:`annotator.storage`), built locally and uploaded when complete.

A release is *publishable* only when the leak check found nothing; :func:`release_publish`
refuses any other. The leak check can only look for originals that something detected, so every
build also audits itself (:mod:`pipeline.surrogates.audit`): fragments of originals, incomplete
identifiers, maths numbers kept, and an independent second opinion on the released text (the rules
detector always; the project's tagger, recall first, and Presidio tuned where the project asks for
them and they are available) become the release's review queue
(:mod:`annotator.services.release_review`); a release of more dialogues than
``BLINDSPOT_RELEASE_CHUNK_DIALOGUES`` leaves its second pass (or, under the corpus scope, its
second opinion) to chunks that every worker shares (:mod:`annotator.services.release_chunks`),
with the same result. Every release also states its evidence (gold, and how
much of it people reviewed in Blindspot, or an unreviewed run) and its residual risk, estimated
from the reviewed messages (:mod:`pipeline.metrics.residual`) and by capture–recapture
(:mod:`pipeline.metrics.capture`). Publishing an unreviewed release, or one with candidates
nobody reviewed, needs an explicit, audited acknowledgement that names them; a release with a
candidate confirmed as PII since it was built must be rebuilt first.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.utils import timezone

from annotator import storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import AdjudicationDecision, DetectorRun, Dialogue, Export, Project
from annotator.selectors.dialogues import StreamStats
from annotator.selectors.release_review import (
    confirmed_fields,
    confirmed_spans,
    review_counts,
    review_verdicts,
)
from annotator.selectors.releases import release_evidence
from annotator.selectors.tagger import project_tagger
from annotator.services import release_chunks
from annotator.services.audit import audit_record
from annotator.services.dialogues import stream_dialogues
from annotator.services.exports import (
    ExportError,
    blindspot_version,
    export_build,
    export_create,
    export_dir,
    export_finish,
    export_publish,
    file_entries,
    fresh_dir,
    private_dir,
    private_key,
)
from annotator.services.release_review import candidates_record
from annotator.services.runs import RunError, detector_config, shared_detector
from pipeline.surrogates import MODES, SCOPES
from pipeline.surrogates.audit import AuditSpill, ReleaseAudit, SecondOpinion
from pipeline.surrogates.batch import (
    Progress,
    SpanPass,
    collect_spans,
    write_checks,
    write_release,
    write_reports,
    write_summary,
)
from pipeline.surrogates.candidates import Candidate
from pipeline.surrogates.engine import Deidentifier
from pipeline.surrogates.fields import FieldPolicy, FieldPolicyError
from pipeline.surrogates.leaks import LeakChecker
from pipeline.surrogates.llm import LLMSurrogates
from pipeline.surrogates.parts import (
    Record,
    SpillFiles,
    can_split,
    merge_states,
    part_state,
    registrations,
)
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Span

SOURCES = ("gold", "run")
NO_KEY = "no-surrogate-key-needed-for-tags"  # tag and redact modes draw nothing at random


def surrogate_key(mode: str, *, keyed_ids: bool = False) -> str:
    """The release's key. Surrogates need one; so do keyed ids in any mode: an HMAC under a key
    everybody knows is undone by hashing guessed ids ("maria-lopez-session-1")."""
    key = settings.BLINDSPOT_SURROGATE_KEY
    if (mode == "surrogate" or keyed_ids) and len(key or "") < 8:
        needs = "surrogate releases" if mode == "surrogate" else "keyed dialogue ids (or set the project's ids to keep)"
        raise ExportError(f"Set BLINDSPOT_SURROGATE_KEY (at least 8 characters) to build {needs}.")
    return key or NO_KEY


def release_key(export: Export) -> str:
    return surrogate_key(export.params.get("mode", "surrogate"), keyed_ids=field_policy(export).id == "keyed")


def release_start(*, project: Project, user, source: str = "gold", run: DetectorRun | None = None,
                  mode: str = "surrogate", scope: str = "dialogue", use_llm: bool = False,
                  complete_only: bool = True) -> Export:
    """Queue a release build (a Celery job with progress)."""
    if source not in SOURCES or mode not in MODES or scope not in SCOPES:
        raise ExportError("Unknown source, mode or scope.")
    try:
        surrogate_key(mode, keyed_ids=project.field_policy().id == "keyed")
    except FieldPolicyError as exc:
        raise ExportError(f"The project's policy for the released record is not valid: {exc}") from None
    if source == "run":
        if run is None or run.project_id != project.pk:
            raise ExportError("Choose a run of this project.")
        if run.status != DetectorRun.Status.SUCCEEDED:
            raise ExportError(f"Run {run.label} has not succeeded; only finished runs can be released.")
    elif not AdjudicationDecision.objects.filter(message__project=project).exists():
        raise ExportError("The project has no gold set yet; release from a detector run instead.")
    if use_llm and not (settings.OPENAI_BASE_URL or settings.OPENAI_API_KEY):
        raise ExportError("LLM surrogates need OPENAI_BASE_URL or OPENAI_API_KEY.")
    params = {"source": source, "run": run.pk if run else None, "mode": mode, "scope": scope,
              "use_llm": use_llm, "complete_only": complete_only,
              # the field policy it is built with (the project's choices; {} is the defaults)
              "fields": dict(project.release_fields)}
    export = export_create(project=project, kind=Export.Kind.RELEASE, user=user, params=params,
                           source_run=run if source == "run" else None)
    enqueue(names.EXPORTS_BUILD, export.pk)
    return export


def _proposer(export: Export):
    if not export.params.get("use_llm"):
        return None
    return LLMSurrogates(model=settings.BLINDSPOT_LLM_MODEL, base_url=settings.OPENAI_BASE_URL or None,
                         api_key=settings.OPENAI_API_KEY)


@dataclass
class Chunked:
    """A release left to chunks that every worker shares: the files they read (its dialogues with
    their spans, or only what the audit reads of each released dialogue) and their folder in
    storage, and what every chunk must know (the plan's fields: the second opinion, the verdicts,
    and for a release in parts its engine's state)."""

    spill: SpillFiles
    key: str
    plan: dict[str, Any]


@dataclass
class Released:
    """What the first pass of a release read: which dialogues and messages, and what it left out."""

    stats: StreamStats = field(default_factory=StreamStats)
    dialogue_ids: list[int] = field(default_factory=list)
    dialogue_pks: dict[str, int] = field(default_factory=dict)  # the released dialogues' ids -> rows
    messages: int = 0
    unreviewed: int = 0
    chunked: Chunked | None = None  # the rest is left to chunks

    def counts(self) -> dict[str, int]:
        return {"dialogues": len(self.dialogue_ids), "messages": self.messages,
                "skipped_dialogues": self.stats.skipped, "messages_without_gold": self.unreviewed,
                "total_dialogues": self.stats.dialogues}


def _source(export: Export) -> str | DetectorRun:
    return "gold" if export.params.get("source", "gold") == "gold" else export.source_run


def _first_pass(export: Export, released: Released, confirmed: dict[int, list[Span]]) -> Iterator[PDialogue]:
    """The chosen dialogues with the source's spans, after merging pending gold (as a gold export
    does), plus the spans people confirmed in a release review (``confirmed``, by message id);
    ``complete_only`` keeps only fully reviewed dialogues, from gold or from a run alike. A run's
    messages that people reviewed go out with their gold spans: what the review found is fixed."""
    for s in stream_dialogues(export.project, _source(export), export.params.get("complete_only", True),
                              stats=released.stats, gold_where_reviewed=True):
        released.dialogue_ids.append(s.pk)
        released.dialogue_pks[s.dialogue.id] = s.pk
        released.messages += len(s.message_ids)
        released.unreviewed += s.reviewed.count(False)
        yield _with_confirmed(s.dialogue, s.message_ids, confirmed)


def _with_confirmed(dialogue: PDialogue, message_ids: tuple[int, ...], confirmed: dict[int, list[Span]]) -> PDialogue:
    if not confirmed or not any(mid in confirmed for mid in message_ids):
        return dialogue
    messages = tuple(
        replace(m, spans=tuple(sorted({*m.spans, *confirmed[mid]}, key=lambda s: (s.start, s.end, s.label))))
        if mid in confirmed else m
        for m, mid in zip(dialogue.messages, message_ids, strict=True)
    )
    return replace(dialogue, messages=messages)


def second_opinion_detectors(export: Export) -> tuple[SecondOpinion, list[list[Any]], dict[str, str]]:
    """The detectors that look again at the released text: the rules detector's structured
    identifiers always; the project's tagger (its active version or the day-one model; recall first) and Presidio tuned where the
    project asks for them and they can run here. Never the release's own source (a run of the
    tagger is not its own second opinion). Returns the second opinion; the ``[name, recorded
    config]`` of its detectors beyond the rules (what a chunk on another worker rebuilds); and why
    each one asked for is not among them."""
    project = export.project
    run = export.source_run if export.params.get("source") == "run" else None
    source = run.detector if run is not None else ""
    wanted, specs, unavailable = [], [], {}
    if project.second_opinion_tagger and project_tagger(project) and source not in ("tagger", "ensemble"):
        wanted.append(("tagger", {"policy": "recall_first"}))
    if project.second_opinion_presidio and source != "presidio":
        wanted.append(("presidio", {"preset": "tuned"}))
    for name, config in wanted:
        try:
            recorded = detector_config(project=project, detector=name, config=config)
            shared_detector(name, recorded)
            specs.append([name, recorded])
        except (RunError, ImportError, OSError, ValueError) as exc:  # not available here: say so, go on
            unavailable[name] = str(exc)[:300]
    return release_chunks.second_opinion_built(specs), specs, unavailable


def _no_dialogue(released: Released) -> ExportError:
    if released.stats.skipped:
        return ExportError("No dialogue to release: none is fully reviewed (in the gold set) yet; untick "
                           "'Only fully reviewed dialogues' to release unreviewed ones.")
    return ExportError("The project has no dialogues.")


def release_paths(export: Export) -> dict[str, Path]:
    """Where the release's files go: the release and its reports in the export directory, the
    mapping table apart (private); the summary is kept on the record only. Both start empty."""
    return _paths(fresh_dir(export_dir(export)), fresh_dir(private_dir(export)))


def _paths(root: Path, private: Path) -> dict[str, Path]:
    return {"release": root / "release.jsonl", "leaks": root / "leaks.json", "utility": root / "utility.json",
            "summary": private / "summary.json", "mapping": private / "mapping.jsonl",
            "candidates": private / "candidates.jsonl", "leaks_private": private / "leaks.private.json"}


def field_policy(export: Export) -> FieldPolicy:
    """The policy for the record around the texts that the release was started with."""
    return FieldPolicy.from_config(export.params.get("fields"))


def _engine(export: Export, key: str, originals: Iterable[tuple[str, str]], confirmed: Iterable[str]) -> Deidentifier:
    """The release's de-identifier, with the corpus's ``originals`` registered and what people
    confirmed outside the messages' text (metadata values, the anchor)."""
    return Deidentifier(key=key, mode=export.params.get("mode", "surrogate"),
                        scope=export.params.get("scope", "dialogue"), proposer=_proposer(export),
                        forbidden=originals, confirmed=confirmed, fields=field_policy(export),
                        confirmed_fields=confirmed_fields(export.project))


def _counted(records: Iterable[Record], progress: Callable[[str, int], None]) -> Iterator[Record]:
    for done, record in enumerate(records, start=1):
        if done % 100 == 0:
            progress("release", done)
        yield record


def _deidentify(export: Export, paths: dict[str, Path], key: str, step) -> tuple[dict | None, dict | None, Released]:
    """Pass 1 over the database: the chosen dialogues with their spans spilled to files of a
    chunk's dialogues, the corpus's originals collected. Then pass 2 over those files: here (the
    release and its reports; its audit here too, or, under ``scope="corpus"``, what the audit
    reads, for chunks), or, for a release of more dialogues than a chunk holds, in chunks that
    every worker shares (:mod:`pipeline.surrogates.parts`): the job then only works out what
    each chunk's engine must know and leaves the rest to them (``released.chunked``; no summary
    or leak report yet). Returns the summary, the public leak report and what was released."""
    released = Released()

    def progress(stage: str, n: int) -> None:
        step(n + (released.stats.dialogues if stage == "release" else 0))

    verdicts = review_verdicts(export.project)
    folder, chunks_key = release_chunks.chunk_folder(export)
    spill = SpillFiles(folder / release_chunks.DIALOGUES, release_chunks.chunk_size())
    try:
        found = collect_spans(_first_pass(export, released, confirmed_spans(export.project)), None, spill,
                              progress=progress, fields=field_policy(export))
    finally:
        spill.close()
    if not found.dialogues:
        raise _no_dialogue(released)
    t1 = time.perf_counter()
    deid = _engine(export, key, found.originals, verdicts.confirmed)
    second, specs, unavailable = second_opinion_detectors(export)
    plan = {"second_opinion": specs, "second_opinion_names": second.names, "dismissed": sorted(verdicts.dismissed),
            "confirmed": sorted(verdicts.confirmed)}
    extra = {"source": export.params.get("source"), "run": export.params.get("run")}
    chunked = found.dialogues > release_chunks.chunk_size()
    if chunked and can_split(deid):
        registered = registrations(deid, _counted(spill.records(), progress), known=found.originals)
        (folder / release_chunks.ENGINE).write_text(
            json.dumps({"originals": sorted(found.originals), "registered": registered}, ensure_ascii=False),
            encoding="utf-8")
        released.chunked = Chunked(spill, chunks_key, {
            **plan, "parts": True, "chunk_dialogues": spill.size, "found": found.counts(), "strategy": deid.describe(),
            "extra_summary": extra, "unavailable": unavailable, "spans_s": found.seconds, "started": time.time()})
        return None, None, released
    audit = ReleaseAudit(second_opinion=second, dismissed=verdicts.dismissed, confirmed=verdicts.confirmed)
    if chunked:
        released.chunked = Chunked(AuditSpill(folder / release_chunks.AUDIT, spill.size), chunks_key,
                                   {**plan, "parts": False})
    summary, checker = _release_in_job(paths=paths, spill=spill, folder=folder, deid=deid, found=found, audit=audit,
                                       released=released, extra=extra, started=t1, progress=progress)
    paths["summary"].unlink(missing_ok=True)
    summary["second_opinion_unavailable"] = unavailable
    return summary, checker.report.to_dict(public=True), released


def _release_in_job(*, paths: dict[str, Path], spill: SpillFiles, folder: Path, deid: Deidentifier, found: SpanPass,
                    audit: ReleaseAudit, released: Released, extra: dict[str, Any], started: float,
                    progress: Progress) -> tuple[dict[str, Any], LeakChecker]:
    """Pass 2 in this job: the release, its mapping and its reports from the spilled dialogues, and
    its audit, here or (``released.chunked``: corpus scope over many chunks) into the audit's files
    that the chunks read. The spilled dialogues are removed once read. Returns the summary and the
    leak checker."""
    with release_chunks.scratch(paths["mapping"].parent) as scratch:
        try:
            checker, utility = write_release(spill.records(), deid, {**paths, "scratch": scratch},
                                             originals=found.originals, progress=progress,
                                             audit=released.chunked.spill if released.chunked else audit)
        finally:  # one job: no chunk folder stays; chunks read only the audit's files
            shutil.rmtree(spill.folder if released.chunked else folder.parent, ignore_errors=True)
        reports = {"source": "database", "release_s": time.perf_counter() - started, "mapping": True, "tally": None,
                   "extra_summary": extra}
        if released.chunked:
            summary = write_checks(paths, found.counts(), deid.describe(), deid.fallbacks, checker.report, utility,
                                   seconds={"spans": found.seconds, "release": reports.pop("release_s")},
                                   audited=True, **reports)
            summary["utility"] = utility.to_dict()
        else:
            summary = write_reports(paths, found, deid, checker, utility, audit=audit, **reports)
    return summary, checker


def release_write(export: Export, *, progress: Callable[[int, int], None] | None = None) -> dict[str, Any] | None:
    """Build the release files; returns the record's fields (files, manifest, report, publishable),
    or None when it goes on in chunks (the last of them finishes the release)."""
    key = release_key(export)
    paths = release_paths(export)
    dialogues = max(Dialogue.objects.filter(project=export.project).count(), 1)
    total = (3 if dialogues > release_chunks.chunk_size() else 2) * dialogues  # chunks: a third for them
    step = (lambda done: progress(min(done, total), total)) if progress else (lambda done: None)
    summary, leaks, released = _deidentify(export, paths, key, step)
    facts = {"review": release_evidence(project=export.project, source=export.params.get("source", "gold"),
                                        run_id=export.params.get("run"), dialogue_pks=released.dialogue_ids),
             "counts": released.counts()}
    if released.chunked is not None:
        chunked = released.chunked
        if not chunked.plan["parts"]:
            facts.update(_release_files(paths, summary, leaks))
        plan = {**chunked.plan, **facts, "progress": {"base": 2 * dialogues, "total": total}}
        release_chunks.chunks_plan(export, chunked.spill, chunked.key, plan, released.dialogue_pks)
        return None
    facts.update(_release_files(paths, summary, leaks))
    recorded = candidates_record(export, paths["candidates"], released.dialogue_pks)
    return _release_record(export, paths, facts, recorded, total)


def _release_files(paths: dict[str, Path], summary: dict, leaks: dict) -> dict[str, Any]:
    """What a release's record holds of its files, taken where they were written: the reports,
    the files' hashes, the mapping table's size."""
    with open(paths["mapping"], encoding="utf-8") as fh:
        rows = sum(1 for _ in fh)
    return {"summary": summary, "leaks": leaks, "utility": summary.pop("utility"),
            "entries": file_entries(paths["release"].parent, ["release.jsonl", "leaks.json", "utility.json"]),
            "mapping": {"name": "mapping.jsonl", "size": paths["mapping"].stat().st_size, "rows": rows}}


def _release_record(export: Export, paths: dict[str, Path], facts: dict[str, Any], recorded: dict[str, int],
                    total: int) -> dict[str, Any]:
    """The record's fields from the facts and the self-audit's queue; writes ``manifest.json``."""
    summary, leaks, utility, review = facts["summary"], facts["leaks"], facts["utility"], facts["review"]
    candidates = {**summary["candidates"], **recorded}
    candidates.pop("listed", None)  # the queue has them (and the private file); the record keeps counts
    candidates.pop("listed_truncated", None)
    root = paths["release"].parent
    manifest = release_manifest(export, summary, leaks, utility, review, facts["counts"], facts["entries"],
                                candidates)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    summary.pop("candidates")
    report = {"summary": summary, "leaks": leaks, "utility": utility, "mapping": facts["mapping"],
              "candidates": candidates, "capture_recapture": summary["capture_recapture"],
              "second_opinion_unavailable": summary.pop("second_opinion_unavailable"), **review}
    return {"files": facts["entries"] + file_entries(root, ["manifest.json"]), "manifest": manifest,
            "report": report, "publishable": bool(leaks["publishable"]),
            "progress_done": total, "progress_total": total}


def _release_part(export: Export, plan: dict[str, Any], index: int, records: Iterable[Record], audit: ReleaseAudit,
                  engine: release_chunks.EngineState, folder: Path) -> tuple[dict[str, Any], list[Candidate]]:
    """Chunk ``index`` of a release in parts (on any worker): its dialogues de-identified by the
    engine as it stood before them (``engine``: the corpus's originals and what each dialogue
    registers), written with their mapping rows to ``folder``, leak-checked, counted and audited.
    Returns its state (:func:`~pipeline.surrogates.parts.part_state`) and its pending candidates."""
    engines, first = release_chunks.ENGINES, index * plan["chunk_dialogues"]
    checker = engines.checker(engine.key, engine.originals)
    deid = engines.take(engine.key, lambda: _engine(export, release_key(export),
                                                     engine.originals, plan["confirmed"]),
                        engine.registered, first)
    with release_chunks.scratch(release_chunks.local_chunks(export)) as scratch:
        paths = {"release": folder / release_chunks.PART_RELEASE, "mapping": folder / release_chunks.PART_MAPPING,
                 "candidates": scratch / "candidates.jsonl", "scratch": scratch}
        checker, utility = write_release(records, deid, paths, checker=checker, audit=audit)
        with open(paths["candidates"], encoding="utf-8") as fh:
            pending = [Candidate.from_dict(json.loads(line)) for line in fh]
        state = part_state(deid, checker, utility)
    engines.give_back(engine.key, deid, first + utility.dialogues)
    return state, pending


def _parts_joined(export: Export, paths: dict[str, Path], plan: dict[str, Any]) -> dict[str, Any]:
    """The last chunk's step for a release in parts: the parts' release and mapping rows joined in
    order, their reports merged and written; the facts its record takes of them."""
    with release_chunks.scratch(release_chunks.local_chunks(export)) as scratch:
        with open(paths["release"], "wb") as release, open(paths["mapping"], "wb") as mapping:
            merged = merge_states(release_chunks.parts_joined(export, {release_chunks.PART_RELEASE: release,
                                                                       release_chunks.PART_MAPPING: mapping}),
                                  scratch=scratch)
        seconds = {"spans": plan["spans_s"], "release": time.time() - plan["started"]}
        summary = write_checks(paths, plan["found"], plan["strategy"], merged.fallbacks, merged.leaks,
                               merged.utility, seconds=seconds, source="database", mapping=True, tally=None,
                               extra_summary=plan["extra_summary"], audited=True)
        summary["utility"] = merged.utility.to_dict()
    summary["second_opinion_unavailable"] = plan["unavailable"]
    return _release_files(paths, summary, merged.leaks.to_dict(public=True))


def _release_finish(export: Export, plan: dict[str, Any], merged: ReleaseAudit) -> None:
    """The last chunk's step (its transaction, the release's row locked): for a release in parts,
    the parts joined and their reports merged; the chunks' audits merged in dialogue order into
    ``merged`` and its candidates file, the summary completed with them, the review queue, the
    manifest; the files it wrote added to the store; the release succeeds."""
    paths = _paths(export_dir(export), private_dir(export))  # the job's files stay: no fresh folders
    for folder in (paths["release"].parent, paths["candidates"].parent):
        folder.mkdir(parents=True, exist_ok=True)
    if plan["parts"]:
        plan = {**plan, **_parts_joined(export, paths, plan)}
    with open(paths["candidates"], "w", encoding="utf-8") as out:
        merged.out = out
        dialogue_pks = release_chunks.chunks_merge(merged, export)
    summary = write_summary(paths, plan["summary"], plan["utility"], audit=merged)
    paths["summary"].unlink(missing_ok=True)
    summary.pop("utility")
    recorded = candidates_record(export, paths["candidates"], dialogue_pks)
    fields = _release_record(export, paths, {**plan, "summary": summary}, recorded, plan["progress"]["total"])
    export_publish(export, replace=False)
    export_finish(export, fields)


def release_chunk_audit(*, chunk_id: int, worker: str = "") -> str:
    """One chunk of a release (:mod:`annotator.services.release_chunks`): its part, or its second
    opinion only; the last one finishes the release here."""
    return release_chunks.chunk_audit(chunk_id=chunk_id, part=_release_part, finish=_release_finish, worker=worker)


def release_manifest(export: Export, summary: dict, leaks: dict, utility: dict, review: dict,
                     counts: dict[str, int], entries: list[dict[str, Any]], candidates: dict[str, Any]) -> dict[str, Any]:
    """``manifest.json`` of a release: its source, strategy, counts, leak check, evidence, hashes."""
    run = export.source_run
    return {
        "kind": "release",
        "project": export.project.slug,
        "version": export.version,
        "built_at": timezone.now().isoformat(),
        "blindspot_version": blindspot_version(),
        "source": {"kind": export.params.get("source"), "run": run.pk if run else None,
                   "detector": run.detector if run else None,
                   "detector_version": run.detector_version if run else None,
                   "model_version": run.model_version if run else None},
        "strategy": summary["strategy"],
        "fields": field_policy(export).table(),
        **counts,
        "spans": summary["spans"],
        "publishable": leaks["publishable"],
        "leaks": leaks["leaks"],
        "leak_check_scope": ("finds the originals that the release's spans detected somewhere and their parts; "
                             "what nobody marked is looked for by the self-audit's second opinion"),
        "self_audit": {k: candidates.get(k) for k in ("pending", "by_reason", "dismissed", "confirmed",
                                                       "second_opinion", "outside_messages")},
        "capture_recapture": summary["capture_recapture"],
        "utility_numbers_changed": utility.get("messages_numbers_changed"),
        "evidence": review["evidence"],
        "residual_risk": review["residual_risk"],
        "replaced_per_label": utility["replaced_by_label"],
        "maths_intact": utility["maths_intact"],
        "fallbacks": summary["fallbacks"],
        "files": entries,
        "mapping_table": "kept apart from the release; admins only",
    }


def release_mapping_open(export: Export) -> File:
    """The release's mapping table, open for reading from storage."""
    if export.kind != Export.Kind.RELEASE or export.status != Export.Status.SUCCEEDED:
        raise ExportError("Only a built release has a mapping table.")
    try:
        return storage.open_file(storage.exports_storage(), f"{private_key(export)}/mapping.jsonl")
    except storage.StorageError:
        raise ExportError("The mapping table is missing.") from None


def release_needs_acknowledgement(export: Export) -> bool:
    """Unreviewed (built from a run, or from gold with messages outside what people reviewed in
    Blindspot), or with review candidates still pending; older builds recorded no evidence, and a
    run source is enough to tell."""
    evidence = export.report.get("evidence")
    if evidence is None:
        unreviewed = export.params.get("source") == "run" or bool(export.manifest.get("messages_without_gold"))
    else:
        unreviewed = bool(evidence.get("needs_acknowledgement"))
    return unreviewed or bool(review_counts(export)["pending"])


def release_residual_sentence(export: Export) -> str:
    residual = export.report.get("residual_risk") or {}
    return residual.get("sentence") or "Residual risk not estimated (built before estimates were recorded)."


def release_acknowledgement(export: Export) -> str:
    """What an admin acknowledges by publishing this release as it is: the candidates nobody
    reviewed (by count) and the residual risk."""
    pending = review_counts(export)["pending"]
    parts = []
    if pending:
        parts.append(f"{pending:,} place(s) its self-audit flagged as possible PII were not reviewed.")
    parts.append(release_residual_sentence(export))
    return " ".join(parts)


def release_publish(*, export: Export, user, acknowledge: bool = False) -> Export:
    """Mark a built release as published; refused unless its leak check found nothing, and, for an
    unreviewed release, unless the admin acknowledges its estimated residual risk (audited)."""
    if export.kind != Export.Kind.RELEASE or export.status != Export.Status.SUCCEEDED:
        raise ExportError("Only a built release can be published.")
    if not export.publishable:
        n = export.report.get("leaks", {}).get("leaks", "some")
        raise ExportError(f"This release cannot be published: the leak check found {n} original PII "
                          "string(s) in it. Fix the spans (or release from gold) and build a new version.")
    if export.report.get("published"):
        return export
    counts = review_counts(export)
    if counts["confirmed"]:
        raise ExportError(f"{counts['confirmed']} place(s) in this release were confirmed as PII after it was built, "
                          "so it still holds them: build a new version (it replaces them) and publish that.")
    published: dict[str, Any] = {"at": timezone.now().isoformat(), "by": user.pk}
    if release_needs_acknowledgement(export):
        risk = release_acknowledgement(export)
        if not acknowledge:
            raise ExportError("This release is unreviewed, or its self-audit left places nobody reviewed, and the "
                              "leak check only finds what was marked. Review them, or acknowledge the risk to "
                              f"publish it. {risk}")
        published["acknowledged_risk"] = risk
        published["pending_candidates"] = counts["pending"]
        audit_record(user=user, action="export.release.acknowledge_unreviewed", obj=export, project=export.project,
                     version=export.version, residual_risk=risk, pending_candidates=counts["pending"],
                     per_1000=(export.report.get("residual_risk") or {}).get("per_1000"),
                     per_1000_upper=(export.report.get("residual_risk") or {}).get("per_1000_upper"),
                     evidence=(export.report.get("evidence") or {}).get("statement"))
    export.report = {**export.report, "published": published}
    export.save(update_fields=["report"])
    audit_record(user=user, action="export.release.publish", obj=export, project=export.project,
                 version=export.version)
    return export


def release_build(*, export_id: int) -> str:
    """Build a queued release (``exports.export_build`` with this module's writer)."""
    return export_build(export_id=export_id, kind=Export.Kind.RELEASE, write=release_write)
