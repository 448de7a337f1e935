"""Anonymized releases: the corpus with gold spans (or a chosen run's spans) replaced.

A release is an :class:`~annotator.models.Export` of kind ``release``. Building one streams the
chosen dialogues with their spans from the database (:func:`annotator.services.dialogues.stream_dialogues`,
which merges pending gold first, as a gold export does) straight into the two passes of
:mod:`pipeline.surrogates.batch` (spans, then surrogates / tags / redaction with the leak check and
the utility report), which write the outputs where they belong:

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
(:mod:`annotator.services.release_review`). Every release also states its evidence (gold, and how
much of it people reviewed in Blindspot, or an unreviewed run) and its residual risk, estimated
from the reviewed messages (:mod:`pipeline.metrics.residual`) and by capture–recapture
(:mod:`pipeline.metrics.capture`). Publishing an unreviewed release, or one with candidates
nobody reviewed, needs an explicit, audited acknowledgement that names them; a release with a
candidate confirmed as PII since it was built must be rebuilt first.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
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
from annotator.selectors.dialogues import StreamStats, iter_dialogues
from annotator.selectors.release_review import confirmed_spans, review_counts, review_verdicts
from annotator.selectors.releases import release_evidence
from annotator.services.audit import audit_record
from annotator.services.dialogues import stream_dialogues
from annotator.services.exports import (
    ExportError,
    blindspot_version,
    export_build,
    export_create,
    export_dir,
    file_entries,
    fresh_dir,
    private_dir,
    private_key,
)
from annotator.services.release_review import candidates_record
from annotator.services.runs import RunError, detector_config, shared_detector
from pipeline.surrogates import MODES, SCOPES
from pipeline.surrogates.audit import ReleaseAudit, SecondOpinion, default_second_opinion
from pipeline.surrogates.batch import (
    collect_spans,
    spilled_spans,  # the spill reader of pass 2
    write_release,
    write_reports,
)
from pipeline.surrogates.engine import Deidentifier
from pipeline.surrogates.llm import LLMSurrogates
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Span

SOURCES = ("gold", "run")
NO_KEY = "no-surrogate-key-needed-for-tags"  # tag and redact modes draw nothing at random


def surrogate_key(mode: str) -> str:
    key = settings.BLINDSPOT_SURROGATE_KEY
    if mode == "surrogate" and len(key or "") < 8:
        raise ExportError("Set BLINDSPOT_SURROGATE_KEY (at least 8 characters) to build surrogate releases.")
    return key or NO_KEY


def release_start(*, project: Project, user, source: str = "gold", run: DetectorRun | None = None,
                  mode: str = "surrogate", scope: str = "dialogue", use_llm: bool = False,
                  complete_only: bool = True) -> Export:
    """Queue a release build (a Celery job with progress)."""
    if source not in SOURCES or mode not in MODES or scope not in SCOPES:
        raise ExportError("Unknown source, mode or scope.")
    surrogate_key(mode)
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
              "use_llm": use_llm, "complete_only": complete_only}
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
class Released:
    """What the first pass of a release read: which dialogues and messages, and what it left out."""

    stats: StreamStats = field(default_factory=StreamStats)
    dialogue_ids: list[int] = field(default_factory=list)
    dialogue_pks: dict[str, int] = field(default_factory=dict)  # the released dialogues' ids -> rows
    message_ids: list[int] = field(default_factory=list)
    messages: int = 0
    unreviewed: int = 0

    def counts(self) -> dict[str, int]:
        return {"dialogues": len(self.dialogue_ids), "messages": self.messages,
                "skipped_dialogues": self.stats.skipped, "messages_without_gold": self.unreviewed,
                "total_dialogues": self.stats.dialogues}


def _source(export: Export) -> str | DetectorRun:
    return "gold" if export.params.get("source", "gold") == "gold" else export.source_run


def _first_pass(export: Export, released: Released, confirmed: dict[int, list[Span]]) -> Iterator[PDialogue]:
    """The chosen dialogues with the source's spans, after merging pending gold (as a gold export
    does), plus the spans people confirmed in a release review (``confirmed``, by message id);
    ``complete_only`` keeps only fully reviewed dialogues, from gold or from a run alike."""
    for s in stream_dialogues(export.project, _source(export), export.params.get("complete_only", True),
                              stats=released.stats):
        released.dialogue_ids.append(s.pk)
        released.dialogue_pks[s.dialogue.id] = s.pk
        released.message_ids.extend(s.message_ids)
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


def second_opinion_detectors(export: Export) -> tuple[list, dict[str, str]]:
    """The detectors that look again at the released text: the rules detector's structured
    identifiers always; the project's active tagger (recall first) and Presidio tuned where the
    project asks for them and they can run here. Never the release's own source (a run of the
    tagger is not its own second opinion). Returns the detectors, and why each one asked for is not
    among them."""
    project = export.project
    run = export.source_run if export.params.get("source") == "run" else None
    source = run.detector if run is not None else ""
    detectors = default_second_opinion()
    wanted, unavailable = [], {}
    if project.second_opinion_tagger and project.active_tagger and source not in ("tagger", "ensemble"):
        wanted.append(("tagger", {"policy": "recall_first"}))
    if project.second_opinion_presidio and source != "presidio":
        wanted.append(("presidio", {"preset": "tuned"}))
    for name, config in wanted:
        try:
            detectors.append(shared_detector(name, detector_config(project=project, detector=name, config=config)))
        except (RunError, ImportError, OSError, ValueError) as exc:  # not available here: say so, go on
            unavailable[name] = str(exc)[:300]
    return detectors, unavailable


def _no_dialogue(released: Released) -> ExportError:
    if released.stats.skipped:
        return ExportError("No dialogue to release: none is fully reviewed (in the gold set) yet; untick "
                           "'Only fully reviewed dialogues' to release unreviewed ones.")
    return ExportError("The project has no dialogues.")


def release_paths(export: Export) -> dict[str, Path]:
    """Where the release's files go: the release and its reports in the export directory, the
    mapping table apart (private); the summary is kept on the record only."""
    root, private = fresh_dir(export_dir(export)), fresh_dir(private_dir(export))
    return {"release": root / "release.jsonl", "leaks": root / "leaks.json", "utility": root / "utility.json",
            "summary": private / "summary.json", "mapping": private / "mapping.jsonl",
            "candidates": private / "candidates.jsonl", "leaks_private": private / "leaks.private.json"}


def _deidentify(export: Export, paths: dict[str, Path], key: str, step) -> tuple[dict, dict, Released]:
    """Both passes of the streaming de-identifier over the database: spans, then the release; the
    summary, the leak report and what was released."""
    released = Released()

    def progress(stage: str, n: int) -> None:
        step(n + (released.stats.dialogues if stage == "release" else 0))

    verdicts = review_verdicts(export.project)
    confirmed = confirmed_spans(export.project)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spill:
        found = collect_spans(_first_pass(export, released, confirmed), None, spill, progress=progress)
        if not found.dialogues:
            raise _no_dialogue(released)
        spill.seek(0)
        t1 = time.perf_counter()
        deid = Deidentifier(key=key, mode=export.params.get("mode", "surrogate"),
                            scope=export.params.get("scope", "dialogue"), proposer=_proposer(export),
                            forbidden=found.originals, confirmed=verdicts.confirmed)
        detectors, unavailable = second_opinion_detectors(export)
        audit = ReleaseAudit(second_opinion=SecondOpinion(detectors),
                             dismissed=verdicts.dismissed, confirmed=verdicts.confirmed)
        again = (s.dialogue for s in iter_dialogues(export.project, _source(export),
                                                    dialogue_ids=released.dialogue_ids))
        checker, utility = write_release(again, spilled_spans(spill), deid, paths, originals=found.originals,
                                         progress=progress, audit=audit)
    summary = write_reports(paths, found, deid, checker, utility, source="database",
                            release_s=time.perf_counter() - t1, tally=None, audit=audit,
                            extra_summary={"source": export.params.get("source"), "run": export.params.get("run")})
    paths["summary"].unlink(missing_ok=True)
    summary["second_opinion_unavailable"] = unavailable
    return summary, checker.report.to_dict(public=True), released


def release_write(export: Export, *, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build the release files; returns the record's fields (files, manifest, report, publishable)."""
    project = export.project
    key = surrogate_key(export.params.get("mode", "surrogate"))
    paths = release_paths(export)
    total = 2 * max(Dialogue.objects.filter(project=project).count(), 1)
    step = (lambda done: progress(min(done, total), total)) if progress else (lambda done: None)
    summary, leaks, released = _deidentify(export, paths, key, step)
    recorded = candidates_record(export, paths["candidates"], released.dialogue_pks)
    candidates = {**summary["candidates"], **recorded}
    candidates.pop("listed", None)  # the queue has them (and the private file); the record keeps counts
    candidates.pop("listed_truncated", None)
    root = paths["release"].parent
    entries = file_entries(root, ["release.jsonl", "leaks.json", "utility.json"])
    utility = summary.pop("utility")
    review = release_evidence(project=project, source=export.params.get("source", "gold"),
                              run_id=export.params.get("run"), message_ids=released.message_ids)
    manifest = release_manifest(export, summary, leaks, utility, review, released, entries, candidates)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    with open(paths["mapping"], encoding="utf-8") as fh:
        rows = sum(1 for _ in fh)
    mapping = {"name": "mapping.jsonl", "size": paths["mapping"].stat().st_size, "rows": rows}
    summary.pop("candidates")
    report = {"summary": summary, "leaks": leaks, "utility": utility, "mapping": mapping, "candidates": candidates,
              "capture_recapture": summary["capture_recapture"],
              "second_opinion_unavailable": summary.pop("second_opinion_unavailable"), **review}
    return {"files": entries + file_entries(root, ["manifest.json"]), "manifest": manifest,
            "report": report, "publishable": bool(leaks["publishable"]),
            "progress_done": total, "progress_total": total}


def release_manifest(export: Export, summary: dict, leaks: dict, utility: dict, review: dict,
                     released: Released, entries: list[dict[str, Any]], candidates: dict[str, Any]) -> dict[str, Any]:
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
        **released.counts(),
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
