"""The one read path from the database to the pipeline: dialogues with gold or a run's spans.

Every consumer of gold (gold exports, releases, tagger training, evaluation, agreement and
circularity) reads it here, so they all see the same gold in the same shape: pipeline
:class:`~pipeline.types.Dialogue` objects whose messages carry the source's spans, with the
primary key of each message beside them. Dialogues are read in batches of
:data:`BATCH_DIALOGUES` (keyset pagination: each batch's dialogues, messages, decisions and spans
in a handful of queries, the next batch queried when this one is used up), so memory stays flat on large
projects.

This module only reads; :func:`annotator.services.dialogues.stream_dialogues` merges pending gold
first and is what services call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Q

from annotator.adapters import dialogues_from_db
from annotator.models import (
    AdjudicationDecision,
    Assignment,
    DetectorRun,
    Dialogue,
    GoldSpan,
    Message,
    Prediction,
    Project,
)
from annotator.selectors.ordered import InOrder, Order, spans_in_order
from annotator.selectors.projects import pseudonyms
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Span

BATCH_DIALOGUES = 200
Key = tuple[str, int]
Source = str | DetectorRun  # "gold" or a run


@dataclass(frozen=True, slots=True)
class StreamedDialogue:
    """A dialogue with the source's spans on its messages, each message's primary key, and
    whether each message is in the gold set (has a decision)."""

    dialogue: PDialogue
    pk: int
    message_ids: tuple[int, ...]
    reviewed: tuple[bool, ...]

    @property
    def complete(self) -> bool:
        return all(self.reviewed)


@dataclass
class StreamStats:
    """What a stream left out, for the manifests that report it."""

    dialogues: int = 0  # read from the project (or the given ids)
    skipped: int = 0  # left out by ``complete_only``


def _dialogue_pks(project: Project, dialogue_ids: Sequence[int] | None) -> Iterator[list[int]]:
    """Batches of dialogue primary keys in import order (keyset pages, never the whole list)."""
    if dialogue_ids is not None:
        ids = list(dialogue_ids)
        for i in range(0, len(ids), BATCH_DIALOGUES):
            yield ids[i:i + BATCH_DIALOGUES]
        return
    last = 0
    while True:
        batch = list(Dialogue.objects.filter(project=project, pk__gt=last).order_by("pk")
                     .values_list("pk", flat=True)[:BATCH_DIALOGUES])
        if not batch:
            return
        yield batch
        last = batch[-1]


def _gold_details(message_ids: list[int], names: dict[int, str]) -> tuple[dict[int, list[Span]], dict[int, dict]]:
    """Gold spans per message and what a gold export states about them (decision, provenance,
    the annotators' notes)."""
    spans: dict[int, list[Span]] = {}
    details: dict[int, dict[str, Any]] = {}
    for mid, outcome, by in AdjudicationDecision.objects.filter(message_id__in=message_ids).values_list(
            "message_id", "outcome", "decided_by_id"):
        details[mid] = {"decision": outcome, "decided_by": names.get(by) if by else None, "spans": [],
                        "notes": []}
    _add_notes(details, names)
    for g in (GoldSpan.objects.filter(message_id__in=message_ids).order_by("message_id", "start", "end", "label")
              .values("message_id", "start", "end", "label", "provenance", "annotators", "model_matched")):
        mid = g.pop("message_id")
        spans.setdefault(mid, []).append(Span(g["start"], g["end"], g["label"]))
        if mid in details:
            details[mid]["spans"].append(g)
    return spans, details


def _add_notes(details: dict[int, dict], names: dict[int, str]) -> None:
    """Each gold message's notes from its finished assignments, in assignment order: what the
    annotator told the adjudicator (comment, "uncertain"), under their project pseudonym. Only a
    gold export asks for them (``gold_details``): notes are free text and may hold PII, so no
    release reads them."""
    rows = (Assignment.objects.filter(message_id__in=list(details), status=Assignment.Status.DONE)
            .filter(Q(comment__gt="") | Q(uncertain=True)).order_by("message_id", "pk")
            .values_list("message_id", "annotator_id", "comment", "uncertain"))
    for mid, uid, comment, uncertain in rows:
        details[mid]["notes"].append({"annotator": names.get(uid, f"user{uid}"), "text": comment,
                                      "uncertain": uncertain})


def _source_spans(source: Source, dialogue_ids: list[int]) -> dict[int, list[Span]]:
    """The source's spans of these dialogues' messages, by message id."""
    if source == "gold":
        rows = GoldSpan.objects.filter(message__dialogue_id__in=dialogue_ids)
    else:
        rows = Prediction.objects.filter(run=source, message__dialogue_id__in=dialogue_ids)
    spans: dict[int, list[Span]] = {}
    for mid, s, e, lab in rows.values_list("message_id", "start", "end", "label"):
        spans.setdefault(mid, []).append(Span(s, e, lab))
    return {mid: sorted(ss) for mid, ss in spans.items()}


def _gold_where_reviewed(spans: dict[int, list[Span]], batch: list[int], decided: dict[int, str]) -> dict[int, list[Span]]:
    """A run's spans, except on the messages people reviewed: there the gold set's, the best
    evidence there is (imported gold nobody reviewed in Blindspot does not count as reviewed)."""
    reviewed = {mid for mid, outcome in decided.items() if outcome != AdjudicationDecision.Outcome.IMPORTED}
    if not reviewed:
        return spans
    gold = _source_spans("gold", batch)
    out = {mid: ss for mid, ss in spans.items() if mid not in reviewed}
    out.update((mid, gold[mid]) for mid in reviewed if mid in gold)
    return out


def _with_spans(dialogue: PDialogue, pks: list[int], spans: dict[int, list[Span]],
                details: dict[int, dict] | None, keep: list[bool]) -> PDialogue:
    messages = []
    for m, pk, kept in zip(dialogue.messages, pks, keep, strict=True):
        if not kept:
            continue
        meta = {"gold": details[pk]} if details is not None else m.meta
        messages.append(replace(m, spans=tuple(spans.get(pk, ())), meta=meta))
    return replace(dialogue, messages=tuple(messages))


def iter_dialogues(project: Project, source: Source = "gold", *, complete_only: bool = False,
                   reviewed_only: bool = False, gold_details: bool = False, gold_where_reviewed: bool = False,
                   dialogue_ids: Sequence[int] | None = None,
                   stats: StreamStats | None = None) -> Iterator[StreamedDialogue]:
    """Dialogues in import order with ``source``'s spans ("gold" or a :class:`DetectorRun`).

    ``complete_only`` leaves out dialogues with a message outside the gold set; ``reviewed_only``
    keeps only the messages in it (and the dialogues with any); ``gold_details`` puts each gold
    message's decision, span provenance and annotators' notes in its ``meta["gold"]`` (what a gold
    export writes; a release never asks for it); ``gold_where_reviewed`` gives a run's messages
    that people reviewed their gold spans instead (what a release from a run ships; never a
    report that scores the run).
    """
    stats = stats if stats is not None else StreamStats()
    names = pseudonyms(project) if gold_details else {}
    for batch in _dialogue_pks(project, dialogue_ids):
        pairs = dialogues_from_db(batch)
        msg_ids = [pk for _, pks in pairs for pk in pks]
        # by the batch's dialogues, not its thousands of message ids: building those IN lists was
        # a third of a release's first pass at a million messages
        decided = dict(AdjudicationDecision.objects.filter(message__dialogue_id__in=batch)
                       .values_list("message_id", "outcome"))
        details = None
        if gold_details:
            spans, details = _gold_details(msg_ids, names)
        else:
            spans = _source_spans(source, batch)
            if gold_where_reviewed and source != "gold":
                spans = _gold_where_reviewed(spans, batch, decided)
        present = set(Dialogue.objects.filter(pk__in=batch).values_list("pk", flat=True))
        for dialogue_pk, (dialogue, pks) in zip([pk for pk in batch if pk in present], pairs, strict=True):
            stats.dialogues += 1
            reviewed = [pk in decided for pk in pks]
            if complete_only and not all(reviewed):
                stats.skipped += 1
                continue
            keep = reviewed if reviewed_only else [True] * len(pks)
            if not any(keep):
                continue
            yield StreamedDialogue(
                _with_spans(dialogue, pks, spans, details, keep), dialogue_pk,
                tuple(pk for pk, k in zip(pks, keep, strict=True) if k),
                tuple(r for r, k in zip(reviewed, keep, strict=True) if k),
            )


def gold_messages(project: Project) -> Iterator[tuple[Order, Key, str, tuple[Span, ...]]]:
    """Every gold message with its gold spans, ``(order, (dialogue id, index), text, spans)``,
    in dialogue order (``order`` is ``(dialogue pk, position)``), one at a time: what scoring a
    run against gold reads. The same texts and spans as ``iter_dialogues(project, "gold",
    reviewed_only=True)``.

    Two streamed reads, the gold messages and their spans, sorted alike and merged as they come:
    whole dialogues built and cut down to their gold cost more than scoring them, and the gold
    held in dicts took hundreds of MB, with gold on nine messages in ten of a million.
    A span of a message decided after the messages were read is passed over."""
    gold = Message.objects.filter(project=project, decision__isnull=False)
    spans = InOrder(spans_in_order(
        GoldSpan.objects.filter(message__in=gold).order_by("message__dialogue_id", "message__position")
        .values_list("message__dialogue_id", "message__position", "start", "end", "label").iterator(chunk_size=10_000),
        2))
    rows = gold.order_by("dialogue_id", "position").values_list("dialogue_id", "position", "dialogue__external_id", "text")
    for dpk, pos, did, text in rows.iterator(chunk_size=10_000):
        yield (dpk, pos), (did, pos), text, spans.pop((dpk, pos), ())
