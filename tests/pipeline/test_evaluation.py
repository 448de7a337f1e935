"""Evaluation metrics on tiny hand-computed examples; bootstrap behaviour; the file helpers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pipeline.evaluate_files import evaluate_files, format_grid, is_corpus_file, read_spans
from pipeline.metrics.evaluation import (
    EvaluationError,
    Score,
    ScoredMessage,
    bootstrap_intervals,
    evaluate,
    evaluate_messages,
    token_labels,
)
from pipeline.text import tokenize
from pipeline.types import MATH, NON_MATH, Span

# d1/0: "Hi Maria Lopez, call 555-1234"   NAME "Maria Lopez" (3..14), PHONE "555-1234" (21..29)
# d1/1: "What is 3/4 of 12?"              no PII
# d2/0: "my id is 4815"                   ID_NUMBER "4815" (9..13)
# d2/1: "ok"
TEXTS = {
    ("d1", 0): "Hi Maria Lopez, call 555-1234",
    ("d1", 1): "What is 3/4 of 12?",
    ("d2", 0): "my id is 4815",
    ("d2", 1): "ok",
}
GOLD = {
    ("d1", 0): [Span(3, 14, "NAME"), Span(21, 29, "PHONE")],
    ("d2", 0): [Span(9, 13, "ID_NUMBER")],
}
PRED = {
    ("d1", 0): [Span(3, 8, "NAME", source="presidio:PERSON"), Span(21, 29, "PHONE")],
    ("d1", 1): [Span(8, 11, "DATE", source="presidio:DATE_TIME")],  # "3/4": a numeric FP
    ("d2", 0): [Span(9, 13, "PHONE", source="presidio:PHONE_NUMBER")],  # right place, wrong label
}
SEGMENTS = {("d1", 0): NON_MATH, ("d1", 1): MATH, ("d2", 0): NON_MATH, ("d2", 1): NON_MATH}


@pytest.fixture(scope="module")
def report():
    return evaluate(texts=TEXTS, gold=GOLD, pred=PRED, segments=SEGMENTS, n_boot=200, seed=1)


def test_token_level_is_type_agnostic_io(report):
    # tokens: Maria Lopez (gold NAME) · 555 - 1234 (gold PHONE) · 3/4 (pred only) · 4815 (both)
    # predicted PII tokens: Maria, 555, -, 1234, 3/4, 4815 = 6; gold: 6; both: 5
    assert (report.token.tp_pred, report.token.n_pred, report.token.n_gold) == (5, 6, 6)
    assert report.token.precision == pytest.approx(5 / 6)
    assert report.token.recall == pytest.approx(5 / 6)
    assert report.token.f1 == pytest.approx(5 / 6)


def test_token_level_per_label(report):
    name = report.token_by_label["NAME"]
    assert (name.tp, name.fp, name.fn) == (1, 0, 1)
    assert name.f2 == pytest.approx(5 * 1 * 0.5 / (4 * 1 + 0.5))
    phone = report.token_by_label["PHONE"]  # 4815 predicted PHONE but gold ID_NUMBER
    assert (phone.tp, phone.fp, phone.fn) == (3, 1, 0)
    assert report.token_by_label["ID_NUMBER"].fn == 1
    assert math.isnan(report.token_by_label["ID_NUMBER"].precision)  # nothing predicted
    assert math.isnan(report.token_by_label["DATE"].recall)  # no gold DATE


def test_span_level_exact_and_overlap(report):
    exact = report.span_exact  # only PHONE 21..29 matches exactly
    assert (exact.tp, exact.n_pred, exact.n_gold) == (1, 4, 3)
    assert exact.f1 == pytest.approx(2 * 0.25 * (1 / 3) / (0.25 + 1 / 3))
    overlap = report.span_overlap  # + "Maria" inside "Maria Lopez"
    assert (overlap.tp_pred, overlap.tp_gold) == (2, 2)
    assert report.span_overlap_by_label["NAME"].f1 == 1.0
    assert report.span_exact_by_label["NAME"].f1 == 0.0
    untyped = report.span_overlap_untyped  # + the mislabelled 4815
    assert (untyped.tp_pred, untyped.n_pred, untyped.tp_gold) == (3, 4, 3)


def test_overlap_counts_predictions_and_gold_separately():
    texts = {("d", 0): "Ana and Bo"}
    gold = {("d", 0): [Span(0, 3, "NAME"), Span(8, 10, "NAME")]}
    pred = {("d", 0): [Span(0, 10, "NAME")]}  # one prediction covering both names
    r = evaluate(texts=texts, gold=gold, pred=pred, n_boot=0)
    assert (r.span_overlap.precision, r.span_overlap.recall) == (1.0, 1.0)
    assert r.span_exact.f1 == 0.0
    assert r.token.precision == pytest.approx(2 / 3)  # "and" is predicted but not gold


def test_numeric_ambiguity_table(report):
    a = report.ambiguity
    assert (a.fp, a.tp, a.numeric_fp) == (1, 3, 1)
    assert a.fp_by_label == {"DATE": 1}
    assert a.fp_by_source == {"presidio:DATE_TIME": 1}
    assert a.numeric_fp_by_source == {"presidio:DATE_TIME": 1}
    math_seg, non_math = a.segments[MATH], a.segments[NON_MATH]
    assert (math_seg.messages, math_seg.fp, math_seg.tp, math_seg.gold) == (1, 1, 0, 0)
    assert (non_math.messages, non_math.fp, non_math.tp, non_math.gold) == (3, 0, 3, 3)
    assert math.isnan(math_seg.fp_per_tp) and non_math.fp_per_tp == 0.0


def test_utility(report):
    u = report.utility
    # number tokens: 555, 1234, 3/4, 12, 4815; removed: all but 12; outside gold: 3/4 and 12
    assert (u.number_tokens, u.number_tokens_removed) == (5, 4)
    assert (u.number_tokens_outside_gold, u.number_tokens_removed_outside_gold) == (2, 1)
    assert u.pred_spans_per_1000_messages == 1000.0
    assert u.gold_spans_per_1000_messages == 750.0


def test_missing_predictions_count_as_none():
    r = evaluate(texts=TEXTS, gold=GOLD, pred={}, n_boot=0)
    assert r.token.recall == 0.0 and math.isnan(r.token.precision)
    assert r.token.fn == 6 and r.utility.pred_spans == 0


def test_perfect_predictions():
    r = evaluate(texts=TEXTS, gold=GOLD, pred=GOLD, n_boot=50)
    for _, _, s in r.scores():
        if s.n_gold:
            assert s.f1 == 1.0 and s.ci["f1"] == (1.0, 1.0)


def test_duplicate_spans_count_once():
    dup = {k: v + v for k, v in PRED.items()}
    a = evaluate(texts=TEXTS, gold=GOLD, pred=PRED, n_boot=0)
    b = evaluate(texts=TEXTS, gold=GOLD, pred=dup, n_boot=0)
    assert a.to_dict() == b.to_dict()


def test_labels_pick_the_per_label_rows_only(report):
    r = evaluate(texts=TEXTS, gold=GOLD, pred=PRED, n_boot=0, labels=["NAME"])
    assert list(r.token_by_label) == ["NAME"]
    assert r.token.to_dict()["f1"] == report.token.to_dict()["f1"]


@pytest.mark.parametrize(
    "pred, message",
    [
        ({("nope", 0): [Span(0, 1, "NAME")]}, "unknown message"),
        ({("d2", 1): [Span(0, 5, "NAME")]}, "runs past the end"),
    ],
)
def test_spans_that_do_not_fit_are_an_error(pred, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate(texts=TEXTS, gold=GOLD, pred=pred)


def test_token_labels_take_the_widest_overlap():
    tokens = tokenize("Mary-Ann Smith")  # Mary · - · Ann · Smith
    tags = token_labels(tokens, [Span(0, 6, "NAME"), Span(6, 14, "LOCATION")])
    assert tags == ["NAME", "NAME", "LOCATION", "LOCATION"]  # "Ann": 1 char NAME, 2 LOCATION
    assert token_labels(tokens, []) == [None] * 4


# --- bootstrap -------------------------------------------------------------------------------


def _many(n_dialogues: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    texts, gold, pred = {}, {}, {}
    for d in range(n_dialogues):
        for i in range(5):
            key = (f"d{d}", i)
            texts[key] = "call Sam at 555 0100 about 3/4 now"
            gold[key] = [Span(5, 8, "NAME"), Span(12, 20, "PHONE")]
            pred[key] = [s for s in gold[key] if rng.random() < 0.8]
            if rng.random() < 0.3:
                pred[key].append(Span(27, 30, "DATE"))
    return texts, gold, pred


def test_bootstrap_interval_contains_the_point_estimate():
    texts, gold, pred = _many()
    r = evaluate(texts=texts, gold=gold, pred=pred, n_boot=500, seed=3)
    for _, _, s in r.scores():
        for metric, (lo, hi) in s.ci.items():
            point = getattr(s, metric)
            if not math.isnan(point):
                assert lo <= point <= hi, (metric, lo, point, hi)
    assert r.token.ci["f1"][0] < r.token.ci["f1"][1]  # resampling varies something


def test_bootstrap_is_deterministic_with_a_seed():
    texts, gold, pred = _many()
    a = evaluate(texts=texts, gold=gold, pred=pred, n_boot=300, seed=7).to_dict()
    b = evaluate(texts=texts, gold=gold, pred=pred, n_boot=300, seed=7).to_dict()
    c = evaluate(texts=texts, gold=gold, pred=pred, n_boot=300, seed=8).to_dict()
    assert a == b
    assert a["token"]["ci"] != c["token"]["ci"]


def test_bootstrap_resamples_whole_dialogues():
    # two dialogues: one all right, one all wrong; every resample is 0, 1/2 or 1 of each
    counts = np.array([[[2, 2, 2, 2]], [[0, 2, 0, 2]]])
    ci = bootstrap_intervals(counts, n_boot=400, seed=0)
    assert ci[0, 0, 0] == 0.0 and ci[0, 0, 1] == 1.0  # precision spans the extremes
    stats_possible = {0.0, 0.5, 1.0}
    assert {float(ci[0, 0, 0]), float(ci[0, 0, 1])} <= stats_possible


def test_no_resamples_means_no_intervals():
    r = evaluate(texts=TEXTS, gold=GOLD, pred=PRED, n_boot=0)
    assert all(math.isnan(lo) for lo, _ in r.token.ci.values())
    assert r.token.to_dict()["ci"]["f1"] == [None, None]


# --- output ----------------------------------------------------------------------------------


def test_to_dict_is_json(report):
    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert data["token"]["precision"] == pytest.approx(5 / 6, abs=1e-6)
    assert data["ambiguity"]["segments"][MATH]["fp"] == 1
    assert data["utility"]["number_tokens"] == 5


def test_format_table(report):
    table = report.format_table()
    assert "4 messages in 2 dialogues" in table
    assert "span overlap" in table and "presidio:DATE_TIME" in table
    assert "MATH" in table and "number tokens removed: 4 of 5 (80.0%)" in table
    assert "0.833 [" in table


def test_score_undefined_values():
    s = Score(0, 0, 0, 0)
    assert math.isnan(s.precision) and math.isnan(s.f1)
    assert Score(0, 3, 0, 2).f1 == 0.0


# --- files -----------------------------------------------------------------------------------


def _rows(spans, texts=None, segments=None):
    for (did, idx), text in TEXTS.items():
        row = {
            "dialogue_id": did,
            "index": idx,
            "spans": [
                {**s.to_dict(), **({"source": s.source} if s.source else {})}
                for s in spans.get((did, idx), [])
            ],
        }
        if texts:
            row["text"] = text
        if segments:
            row["segment"] = segments[(did, idx)]
        yield json.dumps(row)


def test_evaluate_files_per_message_gold_with_texts(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(_rows(GOLD, texts=True)) + "\n")
    pred = tmp_path / "pred.jsonl"
    extra = json.dumps(
        {"dialogue_id": "other", "index": 0, "spans": [{"start": 0, "end": 1, "label": "NAME"}]}
    )
    pred.write_text("\n".join([*_rows(PRED, segments=SEGMENTS), extra]) + "\n")
    assert not is_corpus_file(gold)
    spans, _, _ = read_spans(pred)
    assert spans[("d1", 1)][0].source == "presidio:DATE_TIME"
    r = evaluate_files(pred, gold, n_boot=0)
    direct = evaluate(texts=TEXTS, gold=GOLD, pred=PRED, segments=SEGMENTS, n_boot=0)
    assert r.token.to_dict() == direct.token.to_dict()
    assert r.ambiguity.to_dict() == direct.ambiguity.to_dict()
    assert r.notes and "left out" in r.notes[0]


def test_evaluate_files_with_a_gold_corpus(tmp_path):
    dialogues = {}
    for (did, idx), text in TEXTS.items():
        dialogues.setdefault(did, []).append(
            {
                "speaker": "tutor",
                "text": text,
                "spans": [s.to_dict(with_score=False) for s in GOLD.get((did, idx), [])],
            }
        )
    corpus = tmp_path / "gold_corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": d, "messages": m}) for d, m in dialogues.items()))
    pred = tmp_path / "pred.jsonl"
    pred.write_text("\n".join(_rows(PRED)) + "\n")
    seg = tmp_path / "segments.jsonl"
    seg.write_text("\n".join(_rows({}, segments=SEGMENTS)) + "\n")
    assert is_corpus_file(corpus)
    r = evaluate_files(pred, corpus, segments_path=seg, n_boot=0)
    assert r.token.precision == pytest.approx(5 / 6)
    assert r.ambiguity.segments[MATH].fp == 1


def test_evaluate_files_needs_texts(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(_rows(GOLD)) + "\n")
    with pytest.raises(EvaluationError, match="pass the corpus"):
        evaluate_files(gold, gold, n_boot=0)


def test_format_grid():
    rows = [
        {
            "t_anchor": 0.3,
            "t_sim": 0.4,
            "math_message_share": 0.5,
            "fp_in_math_share": 0.9,
            "pii_in_math_share": 0.1,
            "fp_per_pii_math": 4.88,
            "fp_per_pii_non_math": None,
        }
    ]
    table = format_grid(rows)
    assert "4.88:1" in table and "90.0%" in table and "–" in table


def test_scoring_a_stream_holds_no_message_it_has_read():
    """The detectors' scores read a gold set of 900,000 messages once per run; the
    scorer keeps one row of counts per dialogue, nothing per message (listing them kept about
    600 bytes each here)."""
    import tracemalloc

    words = " ".join(["Maya", "has", "3/4", "of", "the", "pizza", "in", "2024"] * 5)

    def stream(n_messages: int):
        for i in range(n_messages):
            gold = (Span(0, 4, "NAME"),) if i % 3 else ()
            yield ScoredMessage((f"d{i % 50}", i), f"{words} {i}", gold, (Span(0, 4, "NAME"),), MATH, 1.0)

    def peak(n_messages: int) -> int:
        tracemalloc.start()
        report = evaluate_messages(stream(n_messages), labels=["NAME"], segmented=True, n_boot=0)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert report.n_messages == n_messages and report.n_dialogues == 50
        return top

    peak(100)  # the caches warm
    per_message = (peak(4000) - peak(1000)) / 3000
    assert per_message < 100, f"{per_message:.0f} bytes kept per message read"
