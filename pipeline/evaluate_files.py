"""File-level evaluation: predictions and gold in the per-message format (or gold as a corpus)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.corpus import (
    CorpusError,
    CorpusProblem,
    gold_from_dialogues,
    read_corpus,
    read_predictions,
)
from pipeline.metrics.evaluation import EvaluationReport, evaluate


def _is_corpus(path: Path) -> bool:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                return "messages" in json.loads(line)
    return False


def read_segments(path: str | Path) -> dict[tuple[str, int], str]:
    """``segment`` fields of a per-message file (a ``math_segments`` run written by ``detect``)."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                obj = json.loads(line)
                if obj.get("segment"):
                    out[(str(obj["dialogue_id"]), int(obj["index"]))] = obj["segment"]
    return out


def evaluate_files(pred_path: str | Path, gold_path: str | Path, *, corpus_path: str | Path | None = None,
                   segments_path: str | Path | None = None, n_boot: int = 1000, seed: int = 0) -> EvaluationReport:
    gold_path = Path(gold_path)
    if _is_corpus(gold_path):
        dialogues = read_corpus(gold_path)
        gold = gold_from_dialogues(dialogues)
    else:
        if corpus_path is None:
            raise CorpusError([CorpusProblem(1, "gold is in the per-message format: pass --corpus for the texts")])
        dialogues = read_corpus(corpus_path)
        gold = read_predictions(gold_path)
    texts = {(d.id, m.index): m.text for d in dialogues for m in d.messages}
    pred = read_predictions(pred_path)
    unknown = sorted(set(pred) - set(texts))[:5]
    if unknown:
        raise CorpusError([CorpusProblem(0, f"predictions for messages not in the corpus, e.g. {unknown}")])
    segments = read_segments(segments_path) if segments_path else None
    return evaluate(texts=texts, gold=gold, pred=pred, segments=segments, n_boot=n_boot, seed=seed)
