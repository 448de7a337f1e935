"""Corpus import: all-or-nothing, fast, and honest about what it refused.

Re-importing is *refused by default* when any dialogue id already exists in the project (the
error lists them), because silently merging two versions of a transcript is how data gets lost.
``skip_existing=True`` makes a re-run idempotent instead: existing dialogues are left untouched
and only new ones are added.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
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
from pipeline.corpus import CorpusError, CorpusProblem, ParseReport
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

    def to_dict(self) -> dict:
        return {
            "dialogues": self.dialogues,
            "messages": self.messages,
            "normalised": self.normalised,
            "derived_ids": self.derived_ids,
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
    limit = settings.BLINDSPOT_IMPORT_MAX_BYTES
    if len(raw) > limit:
        raise CorpusError(
            [CorpusProblem(1, f"the file is {len(raw):,} bytes, over the {limit:,}-byte import limit")]
        )
    return formats.parse_upload(raw, name=name, labels=set(project.labels), report=report, fmt=fmt, max_bytes=limit,
                                max_id_length=Dialogue._meta.get_field("external_id").max_length,
                                default_speaker=default_speaker)


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
    """Import a file; ``name`` is what the user called it (an upload is stored under another name)."""
    path = Path(path)
    source = Path(name).name if name else path.name
    raw = path.read_bytes()
    report = ParseReport()
    dialogues = corpus_parse(project=project, raw=raw, name=source, report=report, fmt=fmt,
                             default_speaker=default_speaker)
    return corpus_import(
        project=project, dialogues=dialogues, source=source, user=user,
        spans_as=spans_as, skip_existing=skip_existing, progress=progress, normalised=report.normalised,
        derived_ids=report.derived_ids,
    )


def corpus_import(
    *, project: Project, dialogues: Sequence[PDialogue], source: str, user=None,
    spans_as: str = "run", skip_existing: bool = False,
    progress: Callable[[int, int], None] | None = None, normalised: Mapping[str, int] | None = None,
    derived_ids: Collection[str] = (),
) -> ImportResult:
    """Write parsed dialogues in one transaction; on any error nothing is written.
    ``normalised`` (dialogue id -> messages) is what parsing changed, and ``derived_ids`` the ids
    parsing made for dialogues the file gave none (Label Studio, doccano, DocBin: file name and
    content hash), for the report; the latter counts every such dialogue of the file, skipped or not."""
    if spans_as not in SPANS_AS:
        raise ValueError(f"spans_as must be one of {SPANS_AS}")
    t0 = time.perf_counter()
    result = ImportResult()
    existing = _clashing_ids(project, [d.id for d in dialogues], skip_existing)
    todo = [d for d in dialogues if d.id not in existing]
    result.skipped = sorted(existing)
    result.normalised = sum((normalised or {}).get(d.id, 0) for d in todo)
    result.derived_ids = sum(1 for d in dialogues if d.id in derived_ids)

    with transaction.atomic():
        rows = _create_dialogues(project, todo, source)
        result.dialogues = len(rows)
        result.messages = _create_messages(project, rows, todo, progress)
        span_count = sum(len(m.spans) for d in todo for m in d.messages)
        if span_count and spans_as != "ignore":
            result.spans = span_count
            result.run_id = _import_spans(project, rows, todo, source, spans_as, user)
        audit_record(user=user, action="corpus.import", obj=project, project=project,
                     source=source, spans_as=spans_as, **result.to_dict())
    result.seconds = time.perf_counter() - t0
    return result


def _clashing_ids(project: Project, ids: list[str], skip_existing: bool) -> set[str]:
    """The ids among ``ids`` the project already has; raises unless ``skip_existing``."""
    existing = set(
        Dialogue.objects.filter(project=project, external_id__in=ids).values_list("external_id", flat=True)
    ) if len(ids) < 50_000 else _existing_ids(project, ids)
    if existing and not skip_existing:
        raise ExistingDialoguesError(project, existing)
    return existing


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


def _create_messages(
    project: Project, rows: list[Dialogue], todo: Sequence[PDialogue],
    progress: Callable[[int, int], None] | None,
) -> int:
    """Every message of ``todo`` written in batches, reporting progress; how many were written."""
    total_messages = sum(len(d.messages) for d in todo)
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
            if progress:
                progress(done, total_messages)
    done += _flush(messages)
    if progress:
        progress(done, total_messages)
    return done


def _existing_ids(project: Project, ids: list[str]) -> set[str]:
    wanted = set(ids)
    return {e for e in Dialogue.objects.filter(project=project).values_list("external_id", flat=True).iterator()
            if e in wanted}


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


def _import_spans(project, rows, todo, source, spans_as, user) -> int | None:
    """File-supplied spans become a DetectorRun named after the source (or gold, for demo/gold files)."""
    msg_ids = _message_ids(rows)
    if spans_as == "run":
        run = DetectorRun.objects.create(
            project=project, detector=f"import:{source}"[:64], source=DetectorRun.Source.IMPORT,
            config={"file": source}, status=DetectorRun.Status.SUCCEEDED, created_by=user,
            progress_total=len(msg_ids), progress_done=len(msg_ids), model_version=source[:300],
            total_chunks=1, done_chunks=1,
        )
        # what the run covered (the messages of this import), as a detector run's chunks record it
        RunChunk.objects.create(run=run, index=0, dialogue_ids=[row.pk for row in rows], message_count=len(msg_ids),
                                status=RunChunk.Status.DONE, finished_at=run.created_at)
        Prediction.objects.bulk_create(
            [Prediction(run=run, message_id=msg_ids[(row.pk, m.index)], start=s.start, end=s.end,
                        label=s.label, score=s.score, source_label=s.label)
             for row, d in zip(rows, todo, strict=True) for m in d.messages for s in m.spans],
            batch_size=BATCH, ignore_conflicts=True,
        )
        return run.pk
    decisions = {}
    gold = []
    for row, d in zip(rows, todo, strict=True):
        for m in d.messages:
            mid = msg_ids[(row.pk, m.index)]
            decisions[mid] = AdjudicationDecision(
                message_id=mid, outcome=AdjudicationDecision.Outcome.IMPORTED, decided_by=user,
                notes=f"imported from {source}",
            )
            gold.extend(
                GoldSpan(message_id=mid, start=s.start, end=s.end, label=s.label,
                         provenance=AdjudicationDecision.Outcome.IMPORTED)
                for s in m.spans
            )
    AdjudicationDecision.objects.bulk_create(list(decisions.values()), batch_size=BATCH)
    GoldSpan.objects.bulk_create(gold, batch_size=BATCH, ignore_conflicts=True)
    return None
