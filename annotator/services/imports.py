"""Corpus import: all-or-nothing, fast, and honest about what it refused.

Re-importing is *refused by default* when any dialogue id already exists in the project (the
error lists them), because silently merging two versions of a transcript is how data gets lost.
``skip_existing=True`` makes a re-run idempotent instead: existing dialogues are left untouched
and only new ones are added.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import (
    AdjudicationDecision,
    BackgroundJob,
    DetectorRun,
    Dialogue,
    GoldSpan,
    Message,
    Prediction,
    Project,
    RunChunk,
)
from annotator.services.audit import audit_record
from pipeline import formats
from pipeline.corpus import CorpusError, CorpusProblem, ParseReport, Repeat
from pipeline.types import Dialogue as PDialogue

BATCH = 5000
SPANS_AS = ("run", "gold", "ignore")
SKIP_ON_THE_PAGE = "tick \"Skip existing\" on the import form"


class ExistingDialoguesError(CorpusError):
    """A re-import refused because the project already has some of its dialogue ids. Not a
    problem of one line of the file, so it names none; :meth:`advice` words how to skip them for
    where the import came from (the upload page's checkbox, the command's ``--skip-existing``)."""

    def __init__(self, project: Project, existing: set[str]):
        self.existing = sorted(existing)
        shown = ", ".join(self.existing[:10]) + (" …" if len(existing) > 10 else "")
        self.summary = (f"{len(existing)} dialogue id(s) already exist in project {project.slug}: {shown}. "
                        "Nothing was imported")
        super().__init__([])
        self.args = (self.advice(SKIP_ON_THE_PAGE),)

    def advice(self, how_to_skip: str) -> str:
        return f"{self.summary}; {how_to_skip} to add only the new dialogues."

    def __str__(self) -> str:
        return self.args[0]


@dataclass
class ImportResult:
    dialogues: int = 0
    messages: int = 0
    spans: int = 0
    skipped: list[str] = field(default_factory=list)
    run_id: int | None = None
    seconds: float = 0.0
    normalised: int = 0  # messages whose CRLF / CR line breaks were stored as LF
    derived_ids: int = 0  # dialogues of the file that had no id: named from the file name and their content
    repeats: int = 0  # dialogues the file repeated identically: imported once (ParseReport.repeats)
    repeats_other_meta: int = 0  # of which the repeat's own meta differed: the first line's kept

    def to_dict(self) -> dict:
        return {
            "dialogues": self.dialogues,
            "messages": self.messages,
            "normalised": self.normalised,
            "derived_ids": self.derived_ids,
            "repeats": self.repeats,
            "repeats_other_meta": self.repeats_other_meta,
            "spans": self.spans,
            "skipped": len(self.skipped),
            "run_id": self.run_id,
            "seconds": round(self.seconds, 2),
        }


def corpus_parse(
    *, project: Project, raw: bytes, name: str, report: ParseReport | None = None, fmt: str | None = None,
    default_speaker: str | None = None,
) -> list[PDialogue]:
    """Parse an upload against the project's taxonomy and the columns' limits, so that SQLite and
    PostgreSQL refuse the same files; raises CorpusError with every problem. ``fmt`` is one of
    :data:`pipeline.formats.FORMATS` (Label Studio, doccano, spaCy DocBin too); None guesses it.
    ``default_speaker`` is the speaker of messages the file gives none, set before they are checked."""
    _refuse_over_limit(len(raw))
    return formats.parse_upload(raw, name=name, labels=set(project.labels), report=report, fmt=fmt,
                                max_bytes=settings.BLINDSPOT_IMPORT_MAX_BYTES, max_id_length=_max_id_length(),
                                default_speaker=default_speaker)


def _refuse_over_limit(size: int) -> None:
    limit = settings.BLINDSPOT_IMPORT_MAX_BYTES
    if size > limit:
        raise CorpusError([CorpusProblem(1, f"the file is {size:,} bytes, over the {limit:,}-byte import limit")])


def _max_id_length() -> int:
    return Dialogue._meta.get_field("external_id").max_length


def corpus_import_start(*, project: Project, user, params: dict) -> BackgroundJob:
    """Queue the import of an uploaded file (``params``: path, name, spans_as, skip_existing,
    format) as a background job; its page polls the progress."""
    job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.IMPORT, created_by=user,
                                       params=params)
    enqueue(names.PROJECTS_CORPUS_IMPORT, job.pk)
    return job


def corpus_import_file(
    *, project: Project, path: str | Path, name: str | None = None, user=None, spans_as: str = "run",
    skip_existing: bool = False, progress: Callable[[int, int], None] | None = None, fmt: str | None = None,
    default_speaker: str | None = None,
) -> ImportResult:
    """Import a file; ``name`` is what the user called it (an upload is stored under another name).
    The file is read, checked and written ``BLINDSPOT_IMPORT_BATCH_DIALOGUES`` dialogues at a time
    (:func:`pipeline.formats.stream_upload`) in one transaction, so the worker's memory stays that
    of a batch whatever the file's size, and a bad line anywhere still leaves nothing written.
    ``progress`` gets the messages written and their total estimated from the share of the file
    read (the total is known only at the end)."""
    path = Path(path)
    source = Path(name).name if name else path.name
    size = path.stat().st_size
    _refuse_over_limit(size)
    report = ParseReport()
    with path.open("rb") as fh:
        batches = formats.stream_upload(
            fh, batch=settings.BLINDSPOT_IMPORT_BATCH_DIALOGUES, name=source, labels=set(project.labels),
            report=report, fmt=fmt, max_bytes=settings.BLINDSPOT_IMPORT_MAX_BYTES, max_id_length=_max_id_length(),
            default_speaker=default_speaker,
        )
        estimate = (lambda done: progress(done, max(done, round(done * size / max(fh.tell(), 1))))) if progress else None
        return _import_batches(project, batches, report, source=source, user=user, spans_as=spans_as,
                               skip_existing=skip_existing, progress=estimate)


def corpus_import(
    *, project: Project, dialogues: Sequence[PDialogue], source: str, user=None,
    spans_as: str = "run", skip_existing: bool = False,
    progress: Callable[[int, int], None] | None = None, normalised: Mapping[str, int] | None = None,
    derived_ids: Collection[str] = (), repeats: Sequence[Repeat] = (),
) -> ImportResult:
    """Write parsed dialogues in one transaction; on any error nothing is written.
    ``normalised`` (dialogue id -> messages) is what parsing changed, ``derived_ids`` the ids
    parsing made for dialogues the file gave none (Label Studio, doccano, DocBin: file name and
    content hash), and ``repeats`` the dialogues the file repeated identically (parsed once), for
    the report; ``derived_ids`` counts every such dialogue of the file, skipped or not."""
    total = sum(len(d.messages) for d in dialogues)
    size = settings.BLINDSPOT_IMPORT_BATCH_DIALOGUES
    batches = (dialogues[start:start + size] for start in range(0, len(dialogues), size))
    report = ParseReport(normalised=dict(normalised or {}), derived_ids=set(derived_ids), repeats=list(repeats))
    return _import_batches(project, batches, report, source=source, user=user, spans_as=spans_as,
                           skip_existing=skip_existing, progress=progress and (lambda done: progress(done, total)))


def _import_batches(
    project: Project, batches: Iterable[Sequence[PDialogue]], report: ParseReport, *, source: str, user,
    spans_as: str, skip_existing: bool, progress: Callable[[int], None] | None,
) -> ImportResult:
    """Write the batches in one transaction. Ids the project has are found a batch at a time;
    unless skipped, the first stops the writing and the rest is read on, so that the error lists
    every such id, and a bad line (the reader's CorpusError) is still what is reported first, as
    when the whole file was parsed before writing. ``report.normalised`` is emptied as batches go."""
    if spans_as not in SPANS_AS:
        raise ValueError(f"spans_as must be one of {SPANS_AS}")
    t0 = time.perf_counter()
    result = ImportResult()
    writer = _BatchWriter(project, source, spans_as, user)
    with transaction.atomic():
        for batch in batches:
            clashing = _clashing_ids(project, [d.id for d in batch])
            result.skipped.extend(clashing)
            result.derived_ids += sum(1 for d in batch if d.id in report.derived_ids)
            result.normalised += sum(n for d in batch if (n := report.normalised.pop(d.id, 0)) and d.id not in clashing)
            if result.skipped and not skip_existing:
                continue
            writer.write([d for d in batch if d.id not in clashing], result)
            if progress:
                progress(result.messages)
        if result.skipped and not skip_existing:
            raise ExistingDialoguesError(project, set(result.skipped))
        result.skipped.sort()
        result.repeats = len(report.repeats)  # known once the file is read: the reader lists them as it goes
        result.repeats_other_meta = sum(r.other_meta for r in report.repeats)
        writer.finish(result)
        audit_record(user=user, action="corpus.import", obj=project, project=project,
                     source=source, spans_as=spans_as, **result.to_dict())
    result.seconds = time.perf_counter() - t0
    return result


def _clashing_ids(project: Project, ids: list[str]) -> set[str]:
    """The ids among ``ids`` (a batch) the project already has."""
    return set(Dialogue.objects.filter(project=project, external_id__in=ids).values_list("external_id", flat=True))


class _BatchWriter:
    """An import's batches written: dialogues, their messages (COPY on PostgreSQL), then the file's
    spans, as a run (created at the first span) or as gold. Between batches it keeps the
    dialogues' primary keys only, for the run's chunk and the gold decisions every message of the
    import gets once the file has any span."""

    def __init__(self, project: Project, source: str, spans_as: str, user):
        self.project, self.source, self.spans_as, self.user = project, source, spans_as, user
        self.run: DetectorRun | None = None
        self.pks: list[int] = []

    def write(self, todo: Sequence[PDialogue], result: ImportResult) -> None:
        rows = _create_dialogues(self.project, todo, self.source)
        result.dialogues += len(rows)
        result.messages += _create_messages(self.project, rows, todo)
        spans = sum(len(m.spans) for d in todo for m in d.messages)
        if self.spans_as == "ignore":
            return
        self.pks.extend(row.pk for row in rows)
        if spans:
            result.spans += spans
            _import_spans(self, rows, todo)

    def import_run(self) -> DetectorRun:
        """The run the file's spans become, named after the source; created at the first span."""
        if self.run is None:
            self.run = DetectorRun.objects.create(
                project=self.project, detector=f"import:{self.source}"[:64], source=DetectorRun.Source.IMPORT,
                config={"file": self.source}, status=DetectorRun.Status.SUCCEEDED, created_by=self.user,
                model_version=self.source[:300], total_chunks=1, done_chunks=1,
            )
        return self.run

    def finish(self, result: ImportResult) -> None:
        """The run's totals and its one chunk (what it covered: every message of this import), or
        the gold decisions; ``result.run_id`` set."""
        if self.run is not None:
            self.run.progress_total = self.run.progress_done = result.messages
            self.run.save(update_fields=["progress_total", "progress_done"])
            RunChunk.objects.create(run=self.run, index=0, dialogue_ids=self.pks, message_count=result.messages,
                                    status=RunChunk.Status.DONE, finished_at=self.run.created_at)
            result.run_id = self.run.pk
        elif self.spans_as == "gold" and result.spans:
            size = settings.BLINDSPOT_IMPORT_BATCH_DIALOGUES
            for start in range(0, len(self.pks), size):
                AdjudicationDecision.objects.bulk_create(
                    [AdjudicationDecision(message_id=mid, outcome=AdjudicationDecision.Outcome.IMPORTED,
                                          decided_by=self.user, notes=f"imported from {self.source}")
                     for mid in Message.objects.filter(dialogue_id__in=self.pks[start:start + size])
                     .values_list("pk", flat=True)],
                    batch_size=BATCH,
                )


def _import_spans(writer: _BatchWriter, rows: list[Dialogue], todo: Sequence[PDialogue]) -> None:
    """A batch's file-supplied spans: predictions of the import's run, or gold spans (their
    decisions come at the end, :meth:`_BatchWriter.finish`)."""
    msg_ids = _message_ids(rows)
    spans = [(msg_ids[(row.pk, m.index)], s) for row, d in zip(rows, todo, strict=True) for m in d.messages
             for s in m.spans]
    if writer.spans_as == "run":
        run = writer.import_run()
        Prediction.objects.bulk_create(
            [Prediction(run=run, message_id=mid, start=s.start, end=s.end, label=s.label, score=s.score,
                        source_label=s.label) for mid, s in spans],
            batch_size=BATCH, ignore_conflicts=True,
        )
    else:
        GoldSpan.objects.bulk_create(
            [GoldSpan(message_id=mid, start=s.start, end=s.end, label=s.label,
                      provenance=AdjudicationDecision.Outcome.IMPORTED) for mid, s in spans],
            batch_size=BATCH, ignore_conflicts=True,
        )


def _create_dialogues(project: Project, todo: Sequence[PDialogue], source: str) -> list[Dialogue]:
    """The dialogue rows, in ``todo``'s order, with their primary keys set."""
    rows = Dialogue.objects.bulk_create(
        [Dialogue(project=project, external_id=d.id, anchor=d.anchor, meta=dict(d.meta), source=source,
                  message_count=len(d.messages))
         for d in todo],
        batch_size=BATCH,
    )
    if rows and rows[0].pk is None:  # backends without RETURNING
        by_ext = dict(Dialogue.objects.filter(project=project, external_id__in=[d.id for d in todo])
                      .values_list("external_id", "pk"))
        for row in rows:
            row.pk = by_ext[row.external_id]
    return rows


def _create_messages(project: Project, rows: list[Dialogue], todo: Sequence[PDialogue]) -> int:
    """Every message of ``todo`` written in batches; how many were written."""
    messages: list[Message] = []
    done = 0
    for row, d in zip(rows, todo, strict=True):
        for m in d.messages:
            messages.append(Message(
                dialogue_id=row.pk, project=project, position=m.index, speaker_role=m.role,
                speaker=m.speaker[:200], text=m.text, ts=(m.ts or "")[:64], meta=dict(m.meta),
            ))
        if len(messages) >= BATCH:
            done += _flush(messages)
    return done + _flush(messages)


def _flush(messages: list[Message]) -> int:
    n = len(messages)
    if n and connection.vendor == "postgresql":
        _copy_messages(messages)
    elif n:
        Message.objects.bulk_create(messages, batch_size=BATCH)
    messages.clear()
    return n


MESSAGE_COLUMNS = ("dialogue_id", "project_id", "position", "speaker_role", "speaker", "text", "ts", "meta")


def _copy_messages(messages: list[Message]) -> None:
    """PostgreSQL's COPY for a batch of messages: the import of a national corpus is mostly these
    rows, and COPY writes them several times faster than INSERTs. ``meta`` goes through its field,
    which refuses NaN as every other write does."""
    meta = Message._meta.get_field("meta")
    columns = ", ".join(f'"{c}"' for c in MESSAGE_COLUMNS)
    with connection.cursor() as cur, cur.copy(f"COPY {Message._meta.db_table} ({columns}) FROM STDIN") as copy:
        for m in messages:
            copy.write_row((m.dialogue_id, m.project_id, m.position, m.speaker_role, m.speaker, m.text, m.ts,
                            meta.get_db_prep_value(m.meta, connection)))


def _message_ids(rows: list[Dialogue]) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    pks = [r.pk for r in rows]
    for i in range(0, len(pks), BATCH):
        for pk, did, pos in Message.objects.filter(dialogue_id__in=pks[i:i + BATCH]).values_list(
            "pk", "dialogue_id", "position"
        ):
            out[(did, pos)] = pk
    return out
