"""The utility report's n-gram counts wait on disk past a bound, so a release's worker does
not hold every distinct n-gram of a million messages; the figures stay exactly those of one pass."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

from pipeline.surrogates.utility import BUCKETS, NGRAM_ORDERS, NgramCounts, TextStats

WORDS = [f"w{i}" for i in range(400)] + ["the", "answer", "is", "9351", "3/4", "Ünïcode", "don't", "x_1"]


def _texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    # a Zipf-like vocabulary: a few words often, most of them rarely, as in real text
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(0, 14))) + rng.choice(["", " ?", " !"])
            for _ in range(n)]


def _reference(texts: list[str]) -> dict[str, float | int]:
    """The figures as the report defined them before it could spill: one Counter per order, the
    entropy summed term by term."""
    counts = {n: Counter() for n in NGRAM_ORDERS}
    for text in texts:
        words = [w.lower() for w in text.split() if w[0].isalnum() or w[0] == "_"]
        for n in NGRAM_ORDERS:
            counts[n].update(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    out: dict[str, float | int] = {"vocabulary": len(counts[1])}
    for n in NGRAM_ORDERS:
        total = sum(counts[n].values())
        out[f"entropy_{n}gram"] = -sum(c / total * math.log2(c / total) for c in counts[n].values())
    return out


def _stats(texts: list[str], spill_at: int) -> TextStats:
    stats = TextStats(ngrams=NgramCounts(spill_at=spill_at))
    for text in texts:
        stats.add(text)
    return stats


def test_spilled_counts_give_the_figures_of_one_pass_exactly():
    texts = _texts(3000)
    held = _stats(texts, spill_at=10**9)
    spilled = _stats(texts, spill_at=500)
    assert not held.ngrams.spilled and spilled.ngrams.spilled
    assert spilled.to_dict() == held.to_dict()
    reference = _reference(texts)
    figures = held.to_dict()
    assert figures["vocabulary"] == reference["vocabulary"]
    for n in NGRAM_ORDERS:
        assert figures[f"entropy_{n}gram"] == round(reference[f"entropy_{n}gram"], 4)
        assert figures[f"entropy_{n}gram"] > 1  # not a degenerate corpus: the check can fail


def test_memory_holds_at_most_the_bound_and_one_message():
    spilled = TextStats(ngrams=NgramCounts(spill_at=200))
    most = 0
    for text in _texts(2000, seed=3):
        spilled.add(text)
        most = max(most, spilled.ngrams.held())
    assert most <= 200
    files = list(Path(spilled.ngrams._spill.name).iterdir())
    assert 1 < len(files) <= len(NGRAM_ORDERS) * BUCKETS
    # every n-gram lives in one bucket only: no bucket's n-grams meet another's
    seen: dict[tuple[str, str], str] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            key = (path.name.split("-")[0], line.split("\t", 1)[1])
            assert seen.setdefault(key, path.name) == path.name


def test_parts_merged_into_a_spilling_report_give_the_one_pass_figures():
    texts = _texts(2400, seed=11)
    whole = _stats(texts, spill_at=10**9).to_dict()
    merged = TextStats(ngrams=NgramCounts(spill_at=300))
    for start in range(0, len(texts), 400):
        merged.merge(_stats(texts[start:start + 400], spill_at=10**9).state())
    assert merged.ngrams.spilled
    assert merged.to_dict() == whole
    # and a spilled part hands on the same state as one that was not
    part = texts[:600]
    assert _stats(part, spill_at=100).state()["ngrams"] == {
        str(n): dict(c) for n, c in _stats(part, spill_at=10**9).ngrams.counts.items()}


def test_the_spill_folder_goes_with_the_counts():
    """The spilled n-grams hold the original words: nothing stays behind on disk."""
    stats = _stats(_texts(500), spill_at=50)
    folder = Path(stats.ngrams._spill.name)
    assert folder.is_dir()
    del stats
    assert not folder.exists()


def test_no_text_counts_nothing():
    figures = TextStats().to_dict()
    assert figures["vocabulary"] == 0 and figures["entropy_3gram"] == 0.0 and figures["words_per_turn"] == 0.0


def test_figures_asked_again_after_more_text_count_it():
    texts = _texts(900, seed=5)
    stats = _stats(texts[:450], spill_at=100)
    first = stats.to_dict()
    assert stats.to_dict() == first  # asked twice: the same
    for text in texts[450:]:
        stats.add(text)
    assert stats.to_dict() == _stats(texts, spill_at=10**9).to_dict() != first
