"""ORM rows <-> pipeline dataclasses: the one module that knows both sides."""

from __future__ import annotations

from collections.abc import Sequence

from annotator.models import Dialogue, Message
from pipeline.types import Dialogue as PDialogue
from pipeline.types import Message as PMessage


def dialogues_from_db(dialogue_ids: Sequence[int]) -> list[tuple[PDialogue, list[int]]]:
    """Pipeline dialogues for ``dialogue_ids`` (in that order) with each message's primary key."""
    rows = {d.pk: d for d in Dialogue.objects.filter(pk__in=dialogue_ids).only("pk", "external_id", "anchor", "meta")}
    by_dialogue: dict[int, list[tuple]] = {pk: [] for pk in dialogue_ids}
    for m in (Message.objects.filter(dialogue_id__in=dialogue_ids)
              .order_by("dialogue_id", "position")
              .values_list("pk", "dialogue_id", "position", "speaker", "speaker_role", "text", "ts", "meta")):
        by_dialogue[m[1]].append(m)
    out = []
    for pk in dialogue_ids:
        if pk not in rows:
            continue
        d = rows[pk]
        msgs = by_dialogue[pk]
        out.append((
            PDialogue(
                id=d.external_id, anchor=d.anchor or "", meta=d.meta or {},
                messages=tuple(
                    PMessage(text=text, speaker=speaker, role=role, index=pos, ts=ts or None, meta=meta or {})
                    for (_pk, _d, pos, speaker, role, text, ts, meta) in msgs
                ),
            ),
            [m[0] for m in msgs],
        ))
    return out

