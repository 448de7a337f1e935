"""Scoring and tuning on dev: exact-span scores, per-label recall-first thresholds, and the check
that int8 and bfloat16 copies keep F1 within ``PRECISION_TOLERANCE`` of fp32 (beyond dev's noise:
the paired bootstrap test of :func:`pipeline.metrics.bootstrap.paired_drop_test`)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.metrics.bootstrap import paired_drop_test
from pipeline.tagger.model import TaggerModel
from pipeline.tagger.onnx_export import verification_sample
from pipeline.tagger.scoring import dialogue_counts, span_scores, tune_thresholds
from pipeline.tagger.training.config import PRECISION_TOLERANCE
from pipeline.types import Dialogue, Span

# windows per pass when training scores a torch fp32 model (its dev set, its thresholds): fp32
# spans do not depend on it, and training keeps one size so its figures repeat exactly
SCORING_BATCH_SIZE = 64


def evaluate_model(
    tagger: TaggerModel,
    dialogues: Sequence[Dialogue],
    *,
    beta: float,
    thresholds: dict[str, float] | None = None,
    batch_size: int = SCORING_BATCH_SIZE,
) -> tuple[dict, list]:
    """Exact-span scores of ``tagger`` on gold ``dialogues`` (raw model output, no post-filter)."""
    probs = tagger.predict(dialogues, batch_size=batch_size)
    gold, pred = dev_spans(tagger, dialogues, probs, thresholds or {})
    return span_scores(gold, pred, beta=beta), probs


def dev_spans(
    tagger: TaggerModel, dialogues: Sequence[Dialogue], probs: list, thresholds: dict[str, float]
) -> tuple[list[list[Span]], list[list[Span]]]:
    """Per message, the gold spans of the model's labels and the spans ``probs`` decode to."""
    gold: list[list[Span]] = []
    pred: list[list[Span]] = []
    known = set(tagger.label_map.labels)
    for d, dp in zip(dialogues, probs, strict=True):
        for m, mp in zip(d.messages, dp, strict=True):
            gold.append([s for s in m.spans if s.label in known])
            pred.append(tagger.to_spans(m.text, mp, thresholds))
    return gold, pred


def tune_on_dev(
    tagger: TaggerModel,
    dev: list[Dialogue],
    labels: tuple[str, ...],
    f_beta: float,
    check_precision: bool,
    dev_metrics: dict[str, Any],
    say: Callable[[str], None],
) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    """Per-label thresholds for recall-first operation, tuned on dev; dev metrics; precision checks."""
    thresholds = dict.fromkeys(labels, 0.5)
    checks: dict[str, Any] = {}
    if not dev:
        return thresholds, dev_metrics, checks
    say("tuning thresholds on dev")
    strict, probs = evaluate_model(tagger, dev, beta=f_beta)
    words, gold, ent = [], [], []
    for d, dp in zip(dev, probs, strict=True):
        for m, mp in zip(d.messages, dp, strict=True):
            words.append(mp.words)
            gold.append([s for s in m.spans if s.label in labels])
            ent.append(tagger.entity_probs(mp.probs)[0])
    thresholds, tuning = tune_thresholds(words, gold, ent, labels, beta=f_beta)
    recall_first = span_scores(*dev_spans(tagger, dev, probs, thresholds), beta=f_beta)
    dev_metrics.update(strict=strict, recall_first=recall_first, thresholds=tuning)
    if check_precision:
        say("checking int8 and bf16 against fp32")
        checks = measure_precisions(tagger, dev, f_beta)
    return thresholds, dev_metrics, checks


def measure_precisions(tagger: TaggerModel, dev: Sequence[Dialogue], beta: float) -> dict[str, dict]:
    """Score an int8 and a bf16 copy against fp32 on dev topped up with generated dialogues, as
    the ONNX export is (:func:`pipeline.tagger.onnx_export.verification_sample`); each is kept
    unless its F1 drop exceeds 0.01 by more than the sample's noise allows (the paired bootstrap
    test over its dialogues, ``drop_test``): on a student's 10 dev dialogues alone a torch int8
    copy 0.018 under fp32 passed within the noise.

    Seconds are recorded for all three (bf16 is fast only where the CPU has it natively).
    """
    sample = verification_sample(dev)
    t0 = time.perf_counter()
    gold, reference = dev_spans(tagger, sample, tagger.predict(sample, batch_size=SCORING_BATCH_SIZE), {})
    fp32_seconds = round(time.perf_counter() - t0, 2)
    sizes = [len(d.messages) for d in sample]
    fp32 = span_scores(gold, reference, beta=beta)
    methods = {
        "int8": "torch.ao.quantization.quantize_dynamic(encoder nn.Linear, qint8, per-channel)",
        "bf16": "model.to(torch.bfloat16)",
    }
    checks = {}
    for precision, method in methods.items():
        copy_ = TaggerModel(
            copy.deepcopy(tagger.model),
            tagger.tokenizer,
            tagger.label_map,
            tagger.window,
            use_token_types=tagger.use_token_types,
        ).set_precision(precision)
        t0 = time.perf_counter()
        _, spans = dev_spans(copy_, sample, copy_.predict(sample, batch_size=SCORING_BATCH_SIZE), {})
        seconds = round(time.perf_counter() - t0, 2)
        scores = span_scores(gold, spans, beta=beta)
        test = paired_drop_test(dialogue_counts(gold, reference, spans, sizes=sizes), tolerance=PRECISION_TOLERANCE)
        drop = round(fp32["f1"] - scores["f1"], 4)
        checks[precision] = {
            "method": method,
            "f1_fp32": fp32["f1"],
            "f1": scores["f1"],
            "f1_drop": drop,
            "tolerance": PRECISION_TOLERANCE,
            "drop_test": test,
            "keep": bool(test["passed"]),
            "dev_seconds": seconds,
            "dev_seconds_fp32": fp32_seconds,
        }
    return checks
