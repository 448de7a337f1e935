"""The tagger's per-message uncertainty: the decision margin (pure numpy, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.tagger.encoding import WindowConfig
from pipeline.tagger.model import MessageProbs, TaggerModel
from pipeline.tags import LabelMap, decision_margin, decode_words
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


class _Tokenizer:
    """As much of a tokenizer as decoding needs (no window is encoded here)."""

    pad_token_id = 0

    def build_inputs_with_special_tokens(self, ids):
        return [101, *ids, 102]

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1]}


def test_a_chunks_decisions_are_each_messages_own_spans_and_margin():
    """The detector decodes a chunk's messages at once: the same spans and margins as one by one."""
    rng = np.random.default_rng(0)
    label_map = LabelMap("bio", LABELS)
    model = TaggerModel(None, _Tokenizer(), label_map, WindowConfig())
    texts = ["hi Maria and Tom (Tom!)", "", "what is 3/4 of 12?", "Ana, age 9", "ok", "?"] * 30
    messages = []
    for text in texts:
        words = tokenize(text)
        messages.append(MessageProbs(words, rng.dirichlet(np.full(label_map.num_tags, 0.3), len(words)).astype(np.float32)))
    thresholds = {"NAME": 0.3, "AGE": 0.6}
    decided = model.decisions(texts, messages, thresholds)
    assert len(decided) == len(texts)
    for text, message, (spans, margin) in zip(texts, messages, decided, strict=True):
        assert spans == model.to_spans(text, message, thresholds)
        assert margin == decision_margin(model.entity_probs(message.probs)[0], [0.3, 0.6])
    assert sum(bool(spans) for spans, _ in decided) > 30 and sum(not spans for spans, _ in decided) > 30
    assert model.decisions(["", " "], [MessageProbs([], np.zeros((0, label_map.num_tags)))] * 2) == [([], None)] * 2
