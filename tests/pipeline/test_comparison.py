"""Comparing a new tagger version with the active one on the same gold dev dialogues."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.metrics.comparison import compare_versions, dev_scores, paired_f2_difference
from pipeline.types import Dialogue, Message, Span


def _dialogues(n: int = 30) -> list[Dialogue]:
    out = []
    for k in range(n):
        name = f"Name{k}"
        text = f"Hi {name}, what is 12 times 3?"
        out.append(Dialogue(id=f"d{k}", messages=(
            Message(text, index=0, spans=(Span(3, 3 + len(name), "NAME"),)),
            Message("36", index=1),
        )))
    return out


def _gold(dialogues, keep=lambda k: True) -> dict:
    return {(d.id, m.index): list(m.spans) for k, d in enumerate(dialogues) for m in d.messages if keep(k)}


def test_a_version_that_finds_more_names_is_better_with_an_interval_above_zero():
    dev = _dialogues()
    new = _gold(dev)
    old = _gold(dev, keep=lambda k: k % 2 == 0)  # finds half of the names
    c = compare_versions(dev, new, old, n_boot=300)
    assert c.better, c.reasons
    assert c.new.f2 == 1.0 and c.old.recall == 0.5 and c.new.name_recall == 1.0
    assert c.delta_f2 > 0 and 0 < c.ci[0] <= c.delta_f2 <= c.ci[1]
    assert c.reasons[0].startswith("dev F2 1.000 vs")
    assert c.to_dict()["ci"] == list(c.ci)


def test_an_equal_version_is_not_better_the_interval_reaches_zero():
    dev = _dialogues()
    c = compare_versions(dev, _gold(dev), _gold(dev), n_boot=200)
    assert not c.better and c.delta_f2 == 0.0 and c.ci == (0.0, 0.0)
    assert "not better, the interval reaches 0" in c.reasons[0]


def test_more_numbers_removed_or_numeric_false_positives_refuse_a_better_f2():
    dev = _dialogues()
    old = _gold(dev, keep=lambda k: k % 2 == 0)
    new = _gold(dev)
    for d in dev:  # the new version also takes the answer "36" for an identifier
        new[(d.id, 1)] = [Span(0, 2, "PHONE")]
    c = compare_versions(dev, new, old, n_boot=200)
    assert not c.better
    assert c.new.numbers_removed > c.old.numbers_removed and c.new.numeric_fp > c.old.numeric_fp
    assert any("removes more number tokens" in r for r in c.reasons)
    assert any("more numeric false positives" in r for r in c.reasons)


def test_no_active_version_counts_as_better_and_empty_dev_is_an_error():
    dev = _dialogues(3)
    c = compare_versions(dev, _gold(dev), None)
    assert c.better and c.old is None and c.reasons == ("no active version to beat",)
    with pytest.raises(ValueError, match="no dev dialogues"):
        compare_versions([], {}, None)


def test_paired_difference_of_identical_counts_is_zero_and_dev_scores_without_names():
    counts = np.array([[1, 2, 1, 2], [0, 1, 0, 1]])
    assert paired_f2_difference(counts, counts, n_boot=50) == (0.0, (0.0, 0.0))
    dev = [Dialogue(id="x", messages=(Message("mail a@b.org", index=0, spans=(Span(5, 12, "EMAIL"),)),))]
    scores = dev_scores(dev, {("x", 0): [Span(5, 12, "EMAIL")]})
    assert scores.f2 == 1.0 and scores.name_recall is None
