"""Evaluation read from files: the helpers behind ``manage.py evaluate`` and the segmentation grid search.

Gold comes either in the per-message format (``{"dialogue_id", "index", "spans"}``, optionally with
``"text"`` and ``"segment"``) or as an import-format corpus whose messages carry ``spans``.
Token-level figures need the message texts: from a gold corpus, from ``"text"`` fields, or from a
separate corpus file. The gold file decides which messages are evaluated: predictions for other
messages are left out (and counted in the report's notes), since nobody annotated them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.corpus import gold_from_dialogues, read_predictions
from pipeline.formats import read_corpus
from pipeline.metrics.evaluation import EvaluationError, EvaluationReport, Key, evaluate
from pipeline.types import MATH, NON_MATH, Dialogue, Span


def _first_object(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise EvaluationError(f"{path}: line 1 is not JSON ({exc.msg})") from None
                return obj if isinstance(obj, dict) else {}
    raise EvaluationError(f"{path}: the file is empty")


def is_corpus_file(path: str | Path) -> bool:
    """True for an import-format corpus (a dialogue per line), False for per-message rows."""
    path = Path(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        return True
    return "messages" in _first_object(path)


def _extras(path: Path) -> tuple[dict[Key, str], dict[Key, str], dict[Key, list[str]]]:
    """Optional ``text``, ``segment`` and per-span ``source`` fields of a per-message file."""
    texts: dict[Key, str] = {}
    segments: dict[Key, str] = {}
    sources: dict[Key, list[str]] = {}
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = json.loads(line)
            key = (str(obj["dialogue_id"]), int(obj["index"]))
            if isinstance(obj.get("text"), str):
                texts[key] = obj["text"]
            if obj.get("segment") in (MATH, NON_MATH):
                segments[key] = obj["segment"]
            spans = obj.get("spans") or []
            if any(isinstance(s, dict) and s.get("source") for s in spans):
                sources[key] = [str(s.get("source") or "") for s in spans]
    return texts, segments, sources


def read_spans(path: str | Path) -> tuple[dict[Key, list[Span]], dict[Key, str], dict[Key, str]]:
    """Per-message rows: ``(spans, texts, segments)``; spans keep a ``source`` when rows give one."""
    path = Path(path)
    spans = read_predictions(path)
    texts, segments, sources = _extras(path)
    for key, srcs in sources.items():
        spans[key] = [
            dataclasses.replace(s, source=src) if src else s
            for s, src in zip(spans[key], srcs, strict=True)
        ]
    return spans, texts, segments


def read_segments(path: str | Path) -> dict[Key, str]:
    """MATH / NON-MATH per message from a per-message file (``math_segments`` detector output)."""
    segments = _extras(Path(path))[1]
    if not segments:
        raise EvaluationError(f"{path}: no row carries a MATH / NON-MATH 'segment'")
    return segments


def load_gold(
    gold_path: str | Path, corpus_path: str | Path | None = None
) -> tuple[dict[Key, str], dict[Key, list[Span]], dict[Key, str]]:
    """``(texts, gold spans, segments found in the gold file)`` for the messages gold covers."""
    if is_corpus_file(gold_path):
        dialogues = read_corpus(gold_path)
        texts = {(d.id, m.index): m.text for d in dialogues for m in d.messages}
        segments = {
            (d.id, m.index): m.meta["segment"]
            for d in dialogues
            for m in d.messages
            if m.meta.get("segment") in (MATH, NON_MATH)
        }
        return texts, gold_from_dialogues(dialogues), segments
    gold, gold_texts, segments = read_spans(gold_path)
    if corpus_path is not None:
        corpus = {(d.id, m.index): m.text for d in read_corpus(corpus_path) for m in d.messages}
        missing = [k for k in gold if k not in corpus]
        if missing:
            raise EvaluationError(
                f"{len(missing)} gold message(s) are not in {corpus_path}, e.g. "
                f"{missing[0][0]!r} #{missing[0][1]}"
            )
        texts = {k: corpus[k] for k in gold}
    else:
        lacking = [k for k in gold if k not in gold_texts]
        if lacking:
            raise EvaluationError(
                f"{gold_path} gives no 'text' for {len(lacking)} message(s); "
                "token-level scores need the texts: pass the corpus file too"
            )
        texts = {k: gold_texts[k] for k in gold}
    return texts, gold, segments


def evaluate_files(
    pred_path: str | Path,
    gold_path: str | Path,
    corpus_path: str | Path | None = None,
    segments_path: str | Path | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    labels: Sequence[str] | None = None,
) -> EvaluationReport:
    """Evaluate a per-message prediction file against a gold file (see the module docstring).

    Segments come from ``segments_path`` when given, else from ``segment`` fields of the gold or
    prediction rows (a ``segment_aware`` LLM run carries them); without any, the MATH / NON-MATH
    split is left out.
    """
    texts, gold, segments = load_gold(gold_path, corpus_path)
    pred_all, _, pred_segments = read_spans(pred_path)
    pred = {k: v for k, v in pred_all.items() if k in texts}
    notes = []
    outside = sum(1 for k, v in pred_all.items() if k not in texts and v)
    if outside:
        notes.append(
            f"{outside:,} predicted message(s) with spans are not in the gold set and were left out"
        )
    if segments_path is not None:
        segments = read_segments(segments_path)
    elif not segments:
        segments = pred_segments
    seg = {k: segments[k] for k in texts if k in segments} if segments else None
    if seg is not None and len(seg) < len(texts):
        notes.append(f"{len(texts) - len(seg):,} message(s) have no segment")
    report = evaluate(
        texts=texts, gold=gold, pred=pred, segments=seg, n_boot=n_boot, seed=seed, labels=labels
    )
    return dataclasses.replace(report, notes=tuple(notes)) if notes else report


def grid_search_files(
    pred_path: str | Path,
    corpus_path: str | Path,
    t_anchors: Iterable[float],
    t_sims: Iterable[float],
    *,
    gold_path: str | Path | None = None,
    config: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`pipeline.detectors.segments.grid_search` over files.

    ``corpus_path`` gives the dialogues (and the gold spans, unless ``gold_path`` is given).
    """
    from pipeline.detectors.segments import MathSegmentDetector, grid_search

    dialogues: list[Dialogue] = read_corpus(corpus_path)
    if gold_path is not None:
        _, gold, _ = load_gold(gold_path, corpus_path)
    else:
        gold = gold_from_dialogues(dialogues)
    pred, _, _ = read_spans(pred_path)
    return grid_search(
        dialogues,
        gold,
        pred,
        t_anchors,
        t_sims,
        detector=MathSegmentDetector(config),
        progress=progress,
    )


GRID_LEGEND = (
    "T_anchor         a message whose maths density is at least this is an anchor: a MATH segment starts there",
    "T_sim            a neighbour joins a segment when its sentence embedding is at least this similar (cosine)",
    "MATH msgs        share of all messages that fall inside MATH segments",
    "FP in MATH       share of the detector's false positives (spans overlapping no gold span) inside MATH",
    "PII in MATH      share of the true PII (gold spans) inside MATH: what a MATH filter would lose",
    "FP:PII MATH      false positives per true PII span inside MATH (high: MATH is where the noise is)",
    "FP:PII NON-MATH  the same outside MATH",
    "Good thresholds: a high 'FP in MATH' with a low 'PII in MATH'; '–' where there is nothing to divide by.",
)


def format_grid(rows: Sequence[Mapping[str, Any]]) -> str:
    """The grid-search table: one line per ``(t_anchor, t_sim)``."""

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{100 * x:.1f}%"

    def ratio(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}:1"

    header = [
        "T_anchor",
        "T_sim",
        "MATH msgs",
        "FP in MATH",
        "PII in MATH",
        "FP:PII MATH",
        "FP:PII NON-MATH",
    ]
    body = [
        [
            f"{r['t_anchor']:g}",
            f"{r['t_sim']:g}",
            pct(r["math_message_share"]),
            pct(r["fp_in_math_share"]),
            pct(r["pii_in_math_share"]),
            ratio(r["fp_per_pii_math"]),
            ratio(r["fp_per_pii_non_math"]),
        ]
        for r in rows
    ]
    widths = [max(len(x[k]) for x in [header, *body]) for k in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(x, widths, strict=True)) for x in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
