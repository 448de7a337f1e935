"""The int8 check allows for its sample's noise: a quantised model fails only when its F1 drop
exceeds the tolerance by more than the paired bootstrap's standard errors allow (synthetic
predictions: no model needed)."""

from __future__ import annotations

import pytest

from pipeline.metrics.bootstrap import paired_drop_test
from pipeline.tagger.onnx_export import INT8_MAX_F1_DROP, OnnxVerificationError, check_verification
from pipeline.tagger.scoring import dialogue_counts
from pipeline.types import Span

DIALOGUES, MESSAGES = 40, 5
NAME = Span(0, 4, "NAME")


def _report(missed: set[tuple[int, int]]) -> dict:
    """Gold: one name per message; the fp32 model finds every one, the int8 one misses ``missed``
    (dialogue, message) pairs."""
    gold = [[NAME] for _ in range(DIALOGUES * MESSAGES)]
    cand = [[] if (k // MESSAGES, k % MESSAGES) in missed else [NAME] for k in range(DIALOGUES * MESSAGES)]
    counts = dialogue_counts(gold, gold, cand, sizes=[MESSAGES] * DIALOGUES)
    return {"argmax_agreement": 0.99, "f1_drop_test": paired_drop_test(counts, tolerance=INT8_MAX_F1_DROP)}


def test_a_drop_over_the_tolerance_from_one_dialogue_is_noise_and_passes():
    report = _report({(7, m) for m in range(MESSAGES)})  # one dialogue read differently
    test = report["f1_drop_test"]
    assert test["drop"] > INT8_MAX_F1_DROP  # the old rule (drop > 0.01) refused this model
    assert test["se"] > 0 and test["passed"] and test["dialogues"] == DIALOGUES
    check_verification("int8", report)


def test_a_drop_spread_over_the_dialogues_fails():
    report = _report({(d, 0) for d in range(0, DIALOGUES, 2)})  # one name lost in every other dialogue
    assert report["f1_drop_test"]["drop"] > 0.04 and not report["f1_drop_test"]["passed"]
    with pytest.raises(OnnxVerificationError, match=r"F1 drop 0\.\d+ > 0.01 by more than 1.645 standard errors"):
        check_verification("int8", report)


def test_the_same_predictions_pass_with_no_noise():
    test = _report(set())["f1_drop_test"]
    assert test["drop"] == 0 and test["se"] == 0 and test["passed"]
