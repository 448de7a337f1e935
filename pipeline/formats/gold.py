"""``gold.jsonl`` of a gold bundle: one row per gold message, with its decision, each span's
provenance and the annotators' notes (:func:`gold_record`). Written only: the import format
(:mod:`pipeline.formats.native`) is what reads dialogues with spans back in.
"""

from __future__ import annotations

import json
from typing import IO, Any

from pipeline.formats.bundle import BundleSpec
from pipeline.types import Dialogue, Message

EXAMPLE = (b'{"dialogue_id": "d1", "index": 0, "speaker": "tutor", "role": "tutor", "text": "Hi Ana!", '
           b'"split": "train", "decision": "unanimous", "decided_by": null, "spans": [{"start": 3, "end": 6, '
           b'"label": "NAME", "text": "Ana", "provenance": "unanimous", "annotators": ["ann1", "ann2"], '
           b'"model_matched": true}], "notes": [{"annotator": "ann2", '
           b'"text": "Ana: a pupil or a name in a word problem?", "uncertain": false}]}\n')


def gold_record(dialogue: Dialogue, message: Message, split: str) -> dict[str, Any]:
    """A ``gold.jsonl`` row: the message, its decision, its spans with their provenance, and what
    each annotator told the adjudicator (``notes``: pseudonym, comment, uncertain flag)."""
    gold = message.meta.get("gold") or {}
    return {
        "dialogue_id": dialogue.id,
        "index": message.index,
        "speaker": message.speaker,
        "role": message.role,
        "text": message.text,
        "split": split,
        "decision": gold.get("decision"),
        "decided_by": gold.get("decided_by"),
        "spans": [{"start": g["start"], "end": g["end"], "label": g["label"],
                   "text": message.text[g["start"]:g["end"]], "provenance": g["provenance"],
                   "annotators": g["annotators"], "model_matched": g["model_matched"]}
                  for g in gold.get("spans", [])],
        "notes": [{"annotator": n["annotator"], "text": n["text"], "uncertain": n["uncertain"]}
                  for n in gold.get("notes", [])],
    }


def write_row(fh: IO[str], row: dict[str, Any]) -> None:
    """One JSON line (non-ASCII kept) of a JSONL file."""
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")


class GoldJsonlWriter:
    """``gold.jsonl``: one row per gold message with provenance (:func:`gold_record`)."""

    def __init__(self, spec: BundleSpec):
        self.fh = open(spec.root / "gold.jsonl", "w", encoding="utf-8")  # noqa: SIM115

    def write(self, dialogue: Dialogue, split: str) -> None:
        for m in dialogue.messages:
            write_row(self.fh, gold_record(dialogue, m, split))

    def close(self) -> list[str]:
        self.fh.close()
        return ["gold.jsonl"]
