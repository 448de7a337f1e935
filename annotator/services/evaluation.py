"""Score detector runs against the project's current gold set (the table a paper prints)."""

from __future__ import annotations

from typing import Any

from annotator.models import DetectorRun, GoldSpan, Message, MessageSegment, Prediction, Project


def gold_inputs(project: Project) -> tuple[dict, dict, dict[int, tuple[str, int]]]:
    """Texts and gold spans of every message that has a gold decision, keyed (dialogue, index)."""
    from annotator.adapters import spans_by_message

    rows = (Message.objects.filter(project=project, decision__isnull=False)
            .values_list("pk", "dialogue__external_id", "position", "text"))
    keys: dict[int, tuple[str, int]] = {}
    texts: dict[tuple[str, int], str] = {}
    for pk, ext, pos, text in rows:
        keys[pk] = (ext, pos)
        texts[(ext, pos)] = text
    gold_rows = GoldSpan.objects.filter(message__project=project).values("message_id", "start", "end", "label")
    gold = {keys[m]: spans for m, spans in spans_by_message(gold_rows).items() if m in keys}
    return texts, gold, keys


def latest_segments(project: Project, keys: dict[int, tuple[str, int]]) -> dict[tuple[str, int], str] | None:
    run = (DetectorRun.objects.filter(project=project, detector="math_segments",
                                      status=DetectorRun.Status.SUCCEEDED).order_by("-finished_at").first())
    if run is None:
        return None
    return {keys[m]: seg for m, seg in MessageSegment.objects.filter(run=run).values_list("message_id", "segment")
            if m in keys}


def evaluate_run(run: DetectorRun, *, n_boot: int = 1000) -> dict[str, Any] | None:
    from annotator.adapters import spans_by_message
    from pipeline.metrics.evaluation import evaluate

    if run.detector == "math_segments":
        return None
    texts, gold, keys = gold_inputs(run.project)
    if not texts:
        return None
    pred_rows = (Prediction.objects.filter(run=run, message_id__in=list(keys))
                 .values("message_id", "start", "end", "label", "score", "source_label"))
    pred = {keys[m]: spans for m, spans in spans_by_message(pred_rows).items()}
    report = evaluate(texts=texts, gold=gold, pred=pred, segments=latest_segments(run.project, keys),
                      n_boot=n_boot, seed=0)
    return report.to_dict()


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
