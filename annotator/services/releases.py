"""Anonymized releases: the corpus with gold spans (or a chosen run's spans) replaced.

A release is an :class:`~annotator.models.Export` of kind ``release``. Building one dumps the
chosen dialogues with their spans to a private temporary file, runs the streaming batch path of
:mod:`pipeline.surrogates.batch` over it (surrogates / tags / redaction, the leak check, the
utility report) and files the outputs:

- ``BLINDSPOT_EXPORTS_DIR/<project>/release-vNNN/``: ``release.jsonl`` (import format),
  ``leaks.json``, ``utility.json``, ``manifest.json`` — the downloadable release;
- ``BLINDSPOT_EXPORTS_DIR/<project>/private/release-vNNN/mapping.jsonl``: the original → surrogate
  table, never part of the release, downloadable by admins only.

A release is *publishable* only when the leak check found nothing; :func:`release_publish`
refuses any other. The leak check can only look for originals that something detected, so every
release also states its evidence (gold, and how much of it was reviewed, or an unreviewed run) and
its residual risk, estimated from the reviewed messages (:mod:`pipeline.metrics.residual`);
publishing an unreviewed release needs an explicit, audited acknowledgement of that risk.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from annotator.adapters import dialogues_from_db
from annotator.dispatch import enqueue
from annotator.models import (
    AdjudicationDecision,
    DetectorRun,
    Dialogue,
    Export,
    GoldSpan,
    Prediction,
    Project,
)
from annotator.selectors.releases import release_evidence
from annotator.services.audit import audit_record
from annotator.services.exports import (
    BATCH_DIALOGUES,
    ExportError,
    blindspot_version,
    export_create,
    export_dir,
    file_entries,
    fresh_dir,
    private_dir,
)
from pipeline.corpus import dialogue_to_obj
from pipeline.surrogates import MODES, SCOPES
from pipeline.surrogates.batch import deidentify_file, report_paths

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
    from annotator.tasks.exports import export_build_task

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
    enqueue(export_build_task, export.pk)
    return export


def _proposer(export: Export):
    if not export.params.get("use_llm"):
        return None
    from pipeline.surrogates.llm import LLMSurrogates

    return LLMSurrogates(model=settings.BLINDSPOT_LLM_MODEL, base_url=settings.OPENAI_BASE_URL or None,
                         api_key=settings.OPENAI_API_KEY)


def _dump(export: Export, path, progress: Callable[[int], None]) -> tuple[dict[str, int], list[int]]:
    """The chosen dialogues with their spans, in the import format (a private temporary file), and
    the ids of the messages written. ``complete_only`` keeps only fully reviewed dialogues, from
    gold or from a run alike."""
    project = export.project
    source = export.params.get("source", "gold")
    complete_only = export.params.get("complete_only", True)
    ids = list(Dialogue.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    decided = set(AdjudicationDecision.objects.filter(message__project=project).values_list("message_id", flat=True))
    released: list[int] = []
    skipped = written = messages = unreviewed = 0
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(0, len(ids), BATCH_DIALOGUES):
            batch = ids[i:i + BATCH_DIALOGUES]
            pairs = dialogues_from_db(batch)
            msg_ids = [pk for _, pks in pairs for pk in pks]
            if source == "gold":
                rows = GoldSpan.objects.filter(message_id__in=msg_ids)
            else:
                rows = Prediction.objects.filter(run_id=export.params["run"], message_id__in=msg_ids)
            spans: dict[int, list[dict]] = {}
            for mid, s, e, lab in rows.values_list("message_id", "start", "end", "label"):
                spans.setdefault(mid, []).append({"start": s, "end": e, "label": lab})
            for dialogue, pks in pairs:
                missing = sum(pk not in decided for pk in pks)
                if missing and complete_only:
                    skipped += 1
                    continue
                unreviewed += missing
                released.extend(pks)
                obj = dialogue_to_obj(dialogue, with_spans=False)
                for m, pk in zip(obj["messages"], pks, strict=True):
                    if spans.get(pk):
                        m["spans"] = sorted(spans[pk], key=lambda d: (d["start"], d["end"]))
                fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
                written += 1
                messages += len(pks)
            progress(min(i + BATCH_DIALOGUES, len(ids)))
    if not written:
        raise ExportError("No dialogue to release: none is fully reviewed (in the gold set) yet; untick "
                          "'Only fully reviewed dialogues' to release unreviewed ones." if skipped
                          else "The project has no dialogues.")
    return {"dialogues": written, "messages": messages, "skipped_dialogues": skipped,
            "messages_without_gold": unreviewed, "total_dialogues": len(ids)}, released


def release_write(export: Export, *, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Build the release files; returns the record's fields (files, manifest, report, publishable)."""
    project = export.project
    mode = export.params.get("mode", "surrogate")
    key = surrogate_key(mode)
    root = fresh_dir(export_dir(export))
    private = fresh_dir(private_dir(export))
    n_dialogues = Dialogue.objects.filter(project=project).count()
    total = 3 * max(n_dialogues, 1)
    step = (lambda done: progress(done, total)) if progress else (lambda done: None)
    source_corpus = private / "source.jsonl"
    try:
        counts, released = _dump(export, source_corpus, step)
        offsets = {"spans": n_dialogues, "release": 2 * n_dialogues}
        summary = deidentify_file(
            source_corpus, private / "release.jsonl", key=key, mode=mode,
            scope=export.params.get("scope", "dialogue"), proposer=_proposer(export),
            progress=lambda stage, n: step(offsets.get(stage, 0) + n),
            extra_summary={"source": export.params.get("source"), "run": export.params.get("run")},
        )
    finally:
        source_corpus.unlink(missing_ok=True)
    out = report_paths(private / "release.jsonl")
    shutil.move(out["release"], root / "release.jsonl")
    shutil.move(out["leaks"], root / "leaks.json")
    shutil.move(out["utility"], root / "utility.json")
    out["summary"].unlink(missing_ok=True)
    mapping_path = out["mapping"].rename(private / "mapping.jsonl")
    entries = file_entries(root, ["release.jsonl", "leaks.json", "utility.json"])
    leaks = json.loads((root / "leaks.json").read_text(encoding="utf-8"))
    utility = summary.pop("utility")
    run = export.source_run
    review = release_evidence(project=project, source=export.params.get("source", "gold"), run_id=export.params.get("run"),
                              message_ids=released)
    manifest = {
        "kind": "release",
        "project": project.slug,
        "version": export.version,
        "built_at": timezone.now().isoformat(),
        "blindspot_version": blindspot_version(),
        "source": {"kind": export.params.get("source"), "run": run.pk if run else None,
                   "detector": run.detector if run else None,
                   "detector_version": run.detector_version if run else None,
                   "model_version": run.model_version if run else None},
        "strategy": summary["strategy"],
        **counts,
        "spans": summary["spans"],
        "publishable": leaks["publishable"],
        "leaks": leaks["leaks"],
        "leak_check_scope": "finds only originals that the release's spans detected somewhere",
        "evidence": review["evidence"],
        "residual_risk": review["residual_risk"],
        "replaced_per_label": utility["replaced_by_label"],
        "maths_intact": utility["maths_intact"],
        "fallbacks": summary["fallbacks"],
        "files": entries,
        "mapping_table": "kept apart from the release; admins only",
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    with open(mapping_path, encoding="utf-8") as fh:
        rows = sum(1 for _ in fh)
    mapping = {"name": "mapping.jsonl", "size": mapping_path.stat().st_size, "rows": rows}
    report = {"summary": summary, "leaks": leaks, "utility": utility, "mapping": mapping, **review}
    return {"files": entries + file_entries(root, ["manifest.json"]), "manifest": manifest,
            "report": report, "publishable": bool(leaks["publishable"]),
            "progress_done": total, "progress_total": total}


def release_mapping_path(export: Export):
    if export.kind != Export.Kind.RELEASE or export.status != Export.Status.SUCCEEDED:
        raise ExportError("Only a built release has a mapping table.")
    path = private_dir(export) / "mapping.jsonl"
    if not path.is_file():
        raise ExportError("The mapping table is missing.")
    return path


def release_needs_acknowledgement(export: Export) -> bool:
    """Unreviewed: built from a run, or from gold with messages outside it (older builds recorded
    no evidence; a run source is enough to tell)."""
    evidence = export.report.get("evidence")
    if evidence is None:
        return export.params.get("source") == "run" or bool(export.manifest.get("messages_without_gold"))
    return bool(evidence.get("needs_acknowledgement"))


def release_residual_sentence(export: Export) -> str:
    residual = export.report.get("residual_risk") or {}
    return residual.get("sentence") or "Residual risk not estimated (built before estimates were recorded)."


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
    published: dict[str, Any] = {"at": timezone.now().isoformat(), "by": user.pk}
    if release_needs_acknowledgement(export):
        risk = release_residual_sentence(export)
        if not acknowledge:
            raise ExportError("This release is unreviewed: its spans were not all checked by people, and the "
                              "leak check only finds what they detected. Acknowledge its residual risk to "
                              f"publish it. {risk}")
        published["acknowledged_risk"] = risk
        audit_record(user=user, action="export.release.acknowledge_unreviewed", obj=export, project=export.project,
                     version=export.version, residual_risk=risk,
                     per_1000=(export.report.get("residual_risk") or {}).get("per_1000"),
                     per_1000_upper=(export.report.get("residual_risk") or {}).get("per_1000_upper"),
                     evidence=(export.report.get("evidence") or {}).get("statement"))
    export.report = {**export.report, "published": published}
    export.save(update_fields=["report"])
    audit_record(user=user, action="export.release.publish", obj=export, project=export.project,
                 version=export.version)
    return export
