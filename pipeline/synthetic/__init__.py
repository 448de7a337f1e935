"""Deterministic, seeded generator of maths-tutoring dialogues with gold PII spans.

``generate_corpus(n, seed)`` returns :class:`~pipeline.types.Dialogue` objects whose messages carry
gold :class:`~pipeline.types.Span` s over the default taxonomy, together with the domain's traps
(word-problem characters, fractions, equations, long numbers, times and dates inside problems,
money, measurements, plain course names, already-anonymised placeholders), which are recorded in
each message's ``meta["traps"]`` and never labelled. ``policy="recall_first"`` also labels the
word-problem characters as NAME (PIIvot's potential PII); ``"strict"`` (the default) does not.

Command line: ``python -m pipeline.synthetic --dialogues 60 --seed 7 --out corpus.jsonl``.
"""

from pipeline.synthetic.generator import (
    GENERATOR_NAME,
    GENERATOR_VERSION,
    POLICIES,
    corpus_stats,
    dialogue_to_row,
    generate_corpus,
    generate_dialogue,
    generate_messages,
    iter_corpus,
)
from pipeline.synthetic.maths import TRAP_KINDS
from pipeline.synthetic.pools import Pools, build_pools

__all__ = [
    "GENERATOR_NAME",
    "GENERATOR_VERSION",
    "POLICIES",
    "TRAP_KINDS",
    "Pools",
    "build_pools",
    "corpus_stats",
    "dialogue_to_row",
    "generate_corpus",
    "generate_dialogue",
    "generate_messages",
    "iter_corpus",
]
