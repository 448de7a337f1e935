"""Score detector runs against the project's current gold set (the table a paper prints)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator.models import DetectorRun, Project
from annotator.selectors import assignments as sampling
from annotator.selectors import reports as sel
from annotator.selectors.dialogues import gold_texts_and_spans
from pipeline.metrics.evaluation import EvaluationReport, evaluate

Key = tuple[str, int]


@dataclass(frozen=True)
class GoldInputs:
    """What scoring any run against the current gold set takes, read once for all runs: gold
    messages' texts and spans, their MATH / NON-MATH segments and sampling weights."""

    texts: dict[Key, str]
    gold: dict[Key, list]
    segments: dict[Key, str] | None
    weights: dict[Key, float]
    labels: tuple[str, ...]


def gold_inputs(project: Project) -> GoldInputs | None:
    """The gold set as scoring reads it (through the one read path); None without gold."""
    texts, gold, _keys = gold_texts_and_spans(project)
    if not texts:
        return None
    return GoldInputs(texts=texts, gold=gold, segments=sel.segments_by_key(project, texts),
                      weights=sampling.weights_by_key(sampling.audit_sample_weights(project)),
                      labels=tuple(project.labels))


def score_run(run: DetectorRun, inputs: GoldInputs, *, n_boot: int = 1000, seed: int = 0) -> EvaluationReport:
    """One run against gold with the evaluation metrics, weighted by the sampling design: the one
    scoring that the run page and the detectors-versus-gold report both show."""
    pred = {k: v for k, v in sel.run_predictions(run).items() if k in inputs.texts}
    return evaluate(texts=inputs.texts, gold=inputs.gold, pred=pred, segments=inputs.segments, n_boot=n_boot,
                    seed=seed, labels=list(inputs.labels), weights=inputs.weights)


def evaluate_run(run: DetectorRun, *, n_boot: int = 1000) -> dict[str, Any] | None:
    """The run page's evaluation (None for a segments-only run or without gold)."""
    if run.detector == "math_segments":
        return None
    inputs = gold_inputs(run.project)
    if inputs is None:
        return None
    return score_run(run, inputs, n_boot=n_boot, seed=0).to_dict()


LEVEL_NAMES = {"token": "Token (IO)", "span_exact": "Span, exact", "span_overlap": "Span, overlap",
               "span_overlap_untyped": "Span, overlap, any label"}


def evaluation_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Flatten an evaluation report into table rows (overall first, then per label)."""
    rows = []
    for level in ("token", "span_exact", "span_overlap", "span_overlap_untyped"):
        if level not in report:
            continue
        items = [("ALL", report[level])] + sorted(report.get(f"{level}_by_label", {}).items())
        for label, score in items:
            ci = score.get("ci", {})
            rows.append({
                "level": LEVEL_NAMES[level], "label": label, "overall": label == "ALL",
                **{m: score.get(m) for m in ("precision", "recall", "f1", "f2", "tp", "fp", "fn")},
                **{f"{m}_ci": ci.get(m) for m in ("precision", "recall", "f1", "f2")},
            })
    return rows


def ambiguity_rows(report: dict[str, Any]) -> list[tuple[str, int, int]]:
    """False positives by the detector's own label, with how many contain a number."""
    amb = report.get("ambiguity", {})
    numeric = amb.get("numeric_fp_by_source", {})
    return sorted(((src, n, numeric.get(src, 0)) for src, n in amb.get("fp_by_source", {}).items()),
                  key=lambda r: -r[1])
