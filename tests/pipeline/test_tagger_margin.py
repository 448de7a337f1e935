"""The tagger's per-message uncertainty: the decision margin (pure numpy, no model)."""

from __future__ import annotations

import pytest

from pipeline.tags import decision_margin, decode_words
from pipeline.text import tokenize

LABELS = ("NAME", "AGE")


def test_margin_is_the_nearest_word_to_its_threshold():
    probs = [[0.02, 0.01], [0.55, 0.05], [0.9, 0.0]]
    assert decision_margin(probs, [0.5, 0.5]) == pytest.approx(0.05)  # 0.55 NAME vs 0.5
    assert decision_margin(probs, [0.3, 0.5]) == pytest.approx(0.25)  # 0.55 NAME vs 0.3


def test_margin_counts_the_total_that_continues_a_span():
    # best label 0.3 (0.2 from 0.5) but 0.3 + 0.18 = 0.48 is 0.02 from continuing a span
    assert decision_margin([[0.3, 0.18]], [0.5, 0.5]) == pytest.approx(0.02)


def test_a_word_on_the_threshold_has_margin_zero_and_flips_the_call():
    text = "hi Maria"
    words = tokenize(text)
    on = [[0.0, 0.0], [0.5, 0.0]]
    assert decision_margin(on, [0.5, 0.5]) == 0
    assert decode_words(words, on, None, LABELS, [0.5, 0.5])  # at the threshold: a span
    assert not decode_words(words, on, None, LABELS, [0.5001, 0.5001])  # a hair above: none


def test_a_message_without_words_has_no_margin():
    assert decision_margin([], [0.5, 0.5]) is None
