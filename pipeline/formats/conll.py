"""CoNLL files of a gold bundle: ``word<TAB>tag`` lines over :func:`pipeline.text.tokenize` words, in
IO and BIO; a word takes the label of the first gold span it overlaps
(:func:`pipeline.tags.word_labels`). Written only.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.formats.bundle import BundleSpec
from pipeline.tags import word_labels
from pipeline.text import tokenize
from pipeline.types import Dialogue, Span

EXAMPLE = b"# id = d1:0\nHi\tO\nAna\tB-NAME\n!\tO\n\n"


def word_tags(text: str, spans: Sequence[Span], scheme: str) -> list[tuple[str, str]]:
    """``(word, tag)`` pairs: ``O``, ``LABEL`` (IO) or ``B-LABEL``/``I-LABEL`` (BIO)."""
    words = tokenize(text)
    out = []
    for word, (label, begin) in zip(words, word_labels(words, spans), strict=True):
        if label is None:
            tag = "O"
        elif scheme == "io":
            tag = f"I-{label}"
        else:
            tag = f"{'B' if begin else 'I'}-{label}"
        out.append((word.text, tag))
    return out


def conll_block(dialogue_id: str, index: int, text: str, spans: Sequence[Span], scheme: str) -> str:
    """One message: a ``# id`` comment, ``word<TAB>tag`` lines, a blank line."""
    lines = [f"# id = {dialogue_id}:{index}"]
    lines += [f"{w.replace(chr(9), ' ')}\t{t}" for w, t in word_tags(text, spans, scheme)]
    return "\n".join(lines) + "\n\n"


class ConllWriter:
    """``conll/gold.io.conll`` and ``conll/gold.bio.conll`` (:func:`conll_block`)."""

    SCHEMES = ("io", "bio")

    def __init__(self, spec: BundleSpec):
        (spec.root / "conll").mkdir(exist_ok=True)
        self.fhs = {s: open(spec.root / "conll" / f"gold.{s}.conll", "w", encoding="utf-8")  # noqa: SIM115
                    for s in self.SCHEMES}

    def write(self, dialogue: Dialogue, split: str) -> None:
        for m in dialogue.messages:
            for scheme, fh in self.fhs.items():
                fh.write(conll_block(dialogue.id, m.index, m.text, m.spans, scheme))

    def close(self) -> list[str]:
        for fh in self.fhs.values():
            fh.close()
        return [f"conll/gold.{s}.conll" for s in self.SCHEMES]
