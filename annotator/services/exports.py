"""Gold exports: immutable, versioned bundles of a project's gold set, downloadable again later.

An export is an :class:`~annotator.models.Export` row (kind ``gold``) plus the files stored under
``<project>/gold-vNNN/`` in the ``exports`` storage (``BLINDSPOT_EXPORTS_DIR`` by default, or an
object store: :mod:`annotator.storage`):

- ``gold.jsonl`` — one line per gold message: text, gold spans with provenance (unanimous /
  majority / adjudicated / imported, the annotators' pseudonyms and conditions, whether a model
  prediction matched), who decided;
- ``conll/gold.io.conll`` and ``conll/gold.bio.conll`` — word tokens and tags;
- ``hf/train.jsonl``, ``hf/test.jsonl``, ``hf/README.md`` — a Hugging Face ``datasets`` layout,
  split by dialogue;
- ``manifest.json`` — counts per label and split, the agreement summary, annotator pseudonyms,
  the project configuration, detector and model versions, the export time and the SHA-256 of every
  other file (the manifest's own hash is on the record).

The gold set is read through :func:`annotator.services.dialogues.stream_dialogues` (pending gold
merged first) and the files are written by the pure writers of :data:`pipeline.formats.CATALOG`
(where further formats register), run by :mod:`pipeline.exports`; this module records the manifest.

Files are written once; a build that is retried starts from an empty directory, and a finished
export is never rewritten. The anonymized release (kind ``release``) lives in
:mod:`annotator.services.releases` and shares this module's record keeping.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotator import storage
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import (
    AdjudicationDecision,
    BackgroundJob,
    DetectorRun,
    Export,
    Membership,
    Message,
    Project,
    WebhookEvent,
)
from annotator.selectors.exports import gold_state
from annotator.selectors.projects import pseudonyms
from annotator.selectors.webhooks import hooks_listening
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.dialogues import stream_dialogues
from pipeline.exports import BundleCounts, write_gold_bundle
from pipeline.formats.bundle import SPLITS, BundleSpec
from pipeline.hashing import sha256_file

BATCH_DIALOGUES = 200
ZIP_CHUNK = 1 << 16  # bytes read from storage at a time into a zip download
Progress = Callable[[int, int], None]
# the event a built export announces to the project's webhooks
BUILT_EVENTS = {Export.Kind.GOLD: WebhookEvent.GOLD_EXPORT_BUILT, Export.Kind.RELEASE: WebhookEvent.RELEASE_BUILT}


class ExportError(ValueError):
    """An export or release cannot be built as asked; the message is for the admin."""


# ----------------------------------------------------------------------------------- records


def export_key(export: Export) -> str:
    """The export's place in the ``exports`` storage (``<project>/<kind>-vNNN``)."""
    return f"{export.project.slug}/{export.kind}-v{export.version:03d}"


def private_key(export: Export) -> str:
    """Where what must never ship with the export is stored (a release's mapping table)."""
    return f"{export.project.slug}/private/{export.kind}-v{export.version:03d}"


def export_dir(export: Export) -> Path:
    """The local directory the export is built in: its final place on local storage, a staging
    directory uploaded by :func:`export_publish` on an object store (annotator/storage.py)."""
    return storage.work_dir(storage.exports_storage(), export_key(export))


def private_dir(export: Export) -> Path:
    return storage.work_dir(storage.exports_storage(), private_key(export))


def export_publish(export: Export, *, replace: bool = True) -> None:
    """Store the files just built (nothing to do on local storage); safe to repeat. ``replace``
    False adds them to what is stored (the files that finish a release built in chunks)."""
    store = storage.exports_storage()
    storage.publish_tree(store, export_dir(export), export_key(export), last=["manifest.json"], replace=replace)
    storage.publish_tree(store, private_dir(export), private_key(export), replace=replace)


def export_discard_staging(export: Export) -> None:
    """Drop what a failed build left in staging (a mapping table among it) on an object store; on
    local storage the files stay where they are, as before, until a retry starts afresh."""
    if not storage.is_local(storage.exports_storage()):
        for folder in (export_dir(export), private_dir(export)):
            shutil.rmtree(folder, ignore_errors=True)


def export_location(export: Export) -> str:
    """Where a built export's files are, for people (a directory or an ``s3://`` address)."""
    return storage.describe(storage.exports_storage(), export_key(export))


def export_create(*, project: Project, kind: str, user, params: dict[str, Any],
                  source_run: DetectorRun | None = None) -> Export:
    """A queued export with the project's next version number for ``kind``."""
    for _ in range(5):
        try:
            with transaction.atomic():
                latest = Export.objects.filter(project=project, kind=kind).aggregate(v=Max("version"))["v"]
                export = Export.objects.create(
                    project=project, kind=kind, version=(latest or 0) + 1, params=params,
                    source_run=source_run, created_by=user,
                )
                audit_record(user=user, action=f"export.{kind}.request", obj=export, project=project,
                             version=export.version, **params)
                return export
        except IntegrityError:  # two admins asked at once: take the next number
            continue
    raise ExportError("Could not allocate an export version; try again.")


def gold_export_start(*, project: Project, user, test_fraction: float = 0.2, seed: int = 0) -> Export:
    """Queue a gold export (a Celery job with progress)."""
    if not 0 <= test_fraction < 1:
        raise ExportError("The test share must be at least 0 and below 1.")
    if not AdjudicationDecision.objects.filter(message__project=project).exists():
        raise ExportError("The project has no gold set yet: merge or adjudicate annotations, or import gold spans.")
    export = export_create(project=project, kind=Export.Kind.GOLD, user=user,
                           params={"test_fraction": test_fraction, "seed": seed})
    enqueue(names.EXPORTS_BUILD, export.pk)
    return export


def export_progress(export: Export, done: int, total: int) -> None:
    jobs.job_progress(export, done, total)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def file_entries(root: Path, names: list[str]) -> list[dict[str, Any]]:
    return [{"name": n, "size": (root / n).stat().st_size, "sha256": sha256_file(root / n)} for n in names]


def export_file_open(export: Export, name: str) -> File:
    """One listed file of a finished export, open for reading from storage (anything else is refused)."""
    if export.status != Export.Status.SUCCEEDED or name not in {f["name"] for f in export.files}:
        raise ExportError("No such file in this export.")
    try:
        return storage.open_file(storage.exports_storage(), f"{export_key(export)}/{name}")
    except storage.StorageError:
        raise ExportError("The file is missing from the export's storage.") from None


class _ZipSink(io.RawIOBase):
    """Where ``zipfile`` writes a streamed archive: it keeps what was written until it is taken.
    Unseekable on purpose, so ``zipfile`` writes data descriptors instead of seeking back."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self._chunks = b"".join(self._chunks), []
        return out


def export_file_name(export: Export, name: str) -> str:
    """What a downloaded file of the export is called: project, kind, version and its name."""
    return f"{export.project.slug}-{export.kind}-v{export.version:03d}-{name.replace('/', '-')}"


def export_zip_name(export: Export) -> str:
    """The archive's file name, and the folder every file sits in inside it."""
    return f"{export.project.slug}-{export.kind}-v{export.version:03d}"


def export_zip_stream(export: Export) -> Iterator[bytes]:
    """Every listed file of a finished export as one zip archive, produced piece by piece (never
    held in memory or on disk). Checked before the first byte: the export is finished, and every
    listed name is a plain relative path whose file is in storage, so the archive is whole and no
    entry can point outside its folder."""
    if export.status != Export.Status.SUCCEEDED:
        raise ExportError("This export is not finished: there is nothing to download yet.")
    names = [f["name"] for f in export.files]
    store, key = storage.exports_storage(), export_key(export)
    for name in names:
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts or "\\" in name:
            raise ExportError(f"The export lists a file outside its folder: {name!r}.")
        if not store.exists(storage.storage_key(key, name)):
            raise ExportError(f"{name} is missing from the export's storage.")
    return _zip_chunks(export, names)


def _zip_chunks(export: Export, names: list[str]) -> Iterator[bytes]:
    sink, folder = _ZipSink(), export_zip_name(export)
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            with export_file_open(export, name) as src, archive.open(f"{folder}/{name}", "w", force_zip64=True) as dst:
                while chunk := src.read(ZIP_CHUNK):
                    dst.write(chunk)
                    if data := sink.take():
                        yield data
    yield sink.take()  # the central directory, written when the archive closes


def export_copy_to(export: Export, out: Path) -> None:
    """Copy a built export's files into the local directory ``out``."""
    store = storage.exports_storage()
    if storage.is_local(store):
        shutil.copytree(export_dir(export), out, dirs_exist_ok=True)
    else:
        storage.download_tree(store, export_key(export), out)


# ----------------------------------------------------------------------------------- gold


def blindspot_version() -> str:
    try:
        return metadata.version("blindspot")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "unknown"


def project_config(project: Project) -> dict[str, Any]:
    return {
        "name": project.name,
        "slug": project.slug,
        "taxonomy": project.taxonomy,
        "labelling_policy": project.labelling_policy,
        "visibility_mode": project.visibility_mode,
        "overlap_k": project.overlap_k,
        "context_window": project.context_window,
        "merge_rule": project.merge_rule,
        "guidelines": project.guidelines,
        "active_tagger": project.active_tagger,
    }


def detector_versions(project: Project) -> list[dict[str, Any]]:
    return [
        {"run": r.pk, "detector": r.detector, "detector_version": r.detector_version,
         "model_version": r.model_version, "source": r.source, "config": r.config,
         "finished_at": r.finished_at.isoformat() if r.finished_at else None}
        for r in DetectorRun.objects.filter(project=project, status=DetectorRun.Status.SUCCEEDED).order_by("pk")
    ]


def agreement_summary(project: Project) -> dict[str, Any] | None:
    """The overall figures of the latest agreement report, if one was computed."""
    job = (BackgroundJob.objects.filter(project=project, kind=BackgroundJob.Kind.AGREEMENT,
                                        status=BackgroundJob.Status.SUCCEEDED)
           .order_by("-finished_at", "-pk").first())
    if job is None or "agreement" not in job.result:
        return None
    a = job.result["agreement"]
    overall = [f for f in a.get("figures", []) if f.get("by") == "all" and f.get("group") == "all"]
    return {"computed_at": job.result.get("computed_at"), "n_items": a.get("n_items"),
            "n_dialogues": a.get("n_dialogues"), "annotators": a.get("annotators"), "figures": overall}


def annotator_pseudonyms(project: Project) -> list[dict[str, str]]:
    names = pseudonyms(project)
    return [{"pseudonym": names[uid], "role": role}
            for uid, role in Membership.objects.filter(project=project).order_by("pk").values_list("user_id", "role")]


def gold_export_write(export: Export, *, progress: Progress | None = None) -> dict[str, Any]:
    """Write the gold bundle; returns the record's fields (files, manifest)."""
    project = export.project
    root = fresh_dir(export_dir(export))
    test_fraction = float(export.params.get("test_fraction", 0.2))
    seed = int(export.params.get("seed", 0))
    # finished items become gold before they are exported (stream_dialogues merges them first)
    streamed = stream_dialogues(project, "gold", reviewed_only=True, gold_details=True)
    total = Message.objects.filter(project=project, decision__isnull=False).count()
    counts = write_gold_bundle(
        (s.dialogue for s in streamed),
        BundleSpec(root=root, name=project.name, version=export.version, labels=tuple(project.labels)),
        test_fraction=test_fraction, seed=seed, progress=(lambda done: progress(done, total)) if progress else None,
    )
    entries = file_entries(root, counts.files)
    manifest = gold_manifest(export, counts, entries, test_fraction=test_fraction, seed=seed)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return {"files": entries + file_entries(root, ["manifest.json"]), "manifest": manifest,
            "progress_done": counts.messages, "progress_total": total}


def gold_manifest(export: Export, counts: BundleCounts, entries: list[dict[str, Any]], *,
                  test_fraction: float, seed: int) -> dict[str, Any]:
    """``manifest.json`` of a gold bundle: counts, provenance, configuration, versions, hashes."""
    project = export.project
    names = pseudonyms(project)
    return {
        "kind": "gold",
        "project": project.slug,
        "version": export.version,
        "exported_at": timezone.now().isoformat(),
        "exported_by": names.get(export.created_by_id) if export.created_by_id else None,
        "blindspot_version": blindspot_version(),
        "messages": counts.messages,
        "dialogues": sum(counts.split_dialogues.values()),
        "spans": sum(counts.by_label.values()),
        "spans_per_label": dict(sorted(counts.by_label.items())),
        "spans_per_provenance": dict(sorted(counts.by_provenance.items())),
        "labels_outside_taxonomy": dict(counts.unknown_labels),
        "splits": {s: {"dialogues": counts.split_dialogues[s], "messages": counts.split_messages[s]}
                   for s in SPLITS},
        "split_rule": {"by": "dialogue", "test_fraction": test_fraction, "seed": seed},
        "agreement": agreement_summary(project),
        "annotators": annotator_pseudonyms(project),
        "project_config": project_config(project),
        "detectors": detector_versions(project),
        "offsets": "Python str code points, end exclusive",
        "files": entries,
    }


# ---------------------------------------------------------------------------------- building


def export_build(*, export_id: int, kind: str, write: Callable[..., dict[str, Any] | None]) -> str:
    """Build a queued export of ``kind`` with ``write`` (``gold_export_write`` here, or
    ``releases.release_write``); idempotent, failures recorded on the record. Each kind has its
    entry point (:func:`gold_export_build`, ``releases.release_build``), so this module never
    imports the release writer that imports it. ``write`` returns the record's fields, or None
    when the build goes on in other tasks (a release's second opinion in chunks), the last of
    which finishes it (:func:`export_finish`).

    The build claims its export first (``jobs.job_claim``): a second delivery of the same task
    while it runs does nothing. Whatever stops the build (an error, Ctrl-C in a command building
    it here) marks the export failed with its error: it is never left "running" by an error; a
    worker that died is taken over once the broker would redeliver its task (its visibility
    timeout)."""
    export = Export.objects.select_related("project", "source_run").get(pk=export_id)
    if export.kind != kind:
        raise ExportError(f"export {export_id} is a {export.kind} export, not a {kind} export")
    if export.status == Export.Status.SUCCEEDED:
        return "already built"
    # A failed build runs again from an empty directory; one running is left to its worker.
    redelivered_after = timedelta(seconds=settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"])
    if not jobs.job_claim(export, redo_failed=True, take_over_after=redelivered_after):
        export.refresh_from_db(fields=["status"])
        return "already built" if export.status == Export.Status.SUCCEEDED else "already running"
    # What gold looks like before it is read: a change from here on makes the export stale. Kept
    # on the record at once, for whichever task finishes the build.
    export.gold_state = gold_state(export.project) if export.uses_gold else {}
    Export.objects.filter(pk=export.pk).update(gold_state=export.gold_state)
    try:
        fields = write(export, progress=lambda d, t: export_progress(export, d, t))
        export_publish(export)  # into the object store, where one is configured
    except ExportError as exc:
        export_fail(export, exc)
        return "failed"
    except BaseException as exc:
        export_fail(export, exc if isinstance(exc, KeyboardInterrupt | SystemExit) else f"{type(exc).__name__}: {exc}")
        raise
    if fields is None:
        return "continues in chunks"
    export_finish(export, fields)
    return "built"


def export_finish(export: Export, fields: dict[str, Any]) -> None:
    """A built export succeeds with its ``fields`` (files, manifest, report); its project's
    webhooks are told (after commit) and the build is audited."""
    if jobs.job_finish(export, gold_state=export.gold_state, **fields):
        event = BUILT_EVENTS[export.kind]
        if hooks_listening(export.project_id, event):  # the project's webhooks, after commit
            enqueue(names.WEBHOOKS_FIRE, event.value, export.pk)
    audit_record(user=export.created_by, action=f"export.{export.kind}.built", obj=export,
                 project=export.project, version=export.version, publishable=fields.get("publishable"))


def gold_export_build(*, export_id: int) -> str:
    """Build a queued gold export (see :func:`export_build`)."""
    return export_build(export_id=export_id, kind=Export.Kind.GOLD, write=gold_export_write)


def export_fail(export: Export, error: BaseException | str) -> None:
    """An unfinished build failed with ``error``: its staged files are dropped, the record says
    why, and the failure is audited (once: a build already finished is left as it is)."""
    export_discard_staging(export)
    if jobs.job_fail(export, str(error) if isinstance(error, ExportError) else error):
        audit_record(user=export.created_by, action=f"export.{export.kind}.failed", obj=export,
                     project=export.project, error=jobs.error_text(error)[:500])
