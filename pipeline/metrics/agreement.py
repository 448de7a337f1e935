"""Inter-annotator agreement: token-level kappas and alpha, span-level F1, dialogue bootstrap.

Everything is computed from additive per-dialogue counts (confusion matrices, coincidence
matrices, Fleiss sufficient statistics, span match counts; the formulas are in
:mod:`pipeline.metrics.coefficients`). A bootstrap resample of dialogues is
then one weight vector, and all resamples together are one matrix product
``weights (B x D) @ counts (D x F)``: 1,000 resamples cost one BLAS call per block instead of
1,000 library calls. The point estimate is the same formula on the full sample, which equals
scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package's nominal alpha (the tests
pin both).

Token level uses word tokens (:func:`pipeline.text.tokenize`) in IO encoding: a token takes the
label of the span that overlaps it, ``O`` otherwise. *Typed* compares labels; *untyped* compares
PII vs not. An annotator who did not label an item is missing there (not ``O``).
"""

from __future__ import annotations

import io
import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from itertools import combinations
from typing import Any

import numpy as np

from pipeline import csvsafe
from pipeline.metrics.coefficients import (  # re-exported: the report's formulas
    OUTSIDE,
    alpha_from_coincidence,
    bootstrap_weights,
    collapse,
    collapse_matrix,
    f1_from_counts,
    fleiss_from_stats,
    fleiss_kappa,
    grouped_sums,
    kappa_from_confusion,
    match_spans,
    percentile_ci,
    resampled_sums,
    token_labels,
)
from pipeline.text import count_tokens, tokenize
from pipeline.types import MATH, NON_MATH, SPEAKER_ROLES, Span

BLIND = "blind"
AWARE = "aware"
CONDITIONS = (BLIND, AWARE)
PAIR_CONDITIONS = (BLIND, AWARE, "mixed")
SEGMENTS = (MATH, NON_MATH, "unknown")

__all__ = [
    "AWARE", "BLIND", "CONDITIONS", "OUTSIDE", "AgreementReport", "AnnotatedItem", "AnnotatorLabels",
    "Figure", "agreement_report", "alpha_from_coincidence", "bootstrap_weights", "collapse_matrix",
    "f1_from_counts", "fleiss_from_stats", "fleiss_kappa", "kappa_from_confusion", "match_spans",
    "percentile_ci", "token_labels",
]


@dataclass(frozen=True, slots=True)
class AnnotatorLabels:
    """One annotator's finished decision on one item."""

    spans: tuple[Span, ...] = ()
    condition: str = BLIND
    seconds: float | None = None  # active decision time, when known


@dataclass(frozen=True, slots=True)
class AnnotatedItem:
    """One target message with every annotator's decision on it."""

    dialogue_id: str
    index: int
    text: str
    role: str = "other"
    segment: str | None = None
    annotations: Mapping[str, AnnotatorLabels] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.dialogue_id, self.index)


@dataclass(frozen=True, slots=True)
class Figure:
    """One agreement figure with its bootstrap confidence interval."""

    metric: str  # cohen_kappa | fleiss_kappa | krippendorff_alpha | span_f1
    level: str  # token | span
    scheme: str  # typed | untyped (token); exact | overlap (span)
    pair: str  # "a~b" for pairwise figures, "*" for all annotators
    by: str  # all | label | role | segment | condition
    group: str
    value: float
    ci_low: float
    ci_high: float
    n: int  # tokens compared (Cohen), units (Fleiss), pairable values (alpha) or spans (span F1)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("value", "ci_low", "ci_high"):
            out[k] = _clean(out[k])
        return out


@dataclass
class AgreementReport:
    annotators: tuple[str, ...]
    labels: tuple[str, ...]
    n_items: int
    n_dialogues: int
    n_tokens: int
    n_boot: int
    confidence: float
    seed: int
    figures: list[Figure] = field(default_factory=list)

    CSV_FIELDS = tuple(Figure.__slots__)

    def get(self, metric: str, **where: str) -> Figure | None:
        """The first figure of ``metric`` matching ``where`` (defaults: by="all", group="all")."""
        where = {"by": "all", "group": "all", **where}
        for f in self.figures:
            if f.metric == metric and all(getattr(f, k) == v for k, v in where.items()):
                return f
        return None

    def select(self, **where: str) -> list[Figure]:
        return [f for f in self.figures if all(getattr(f, k) == v for k, v in where.items())]

    def csv_rows(self) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.figures]

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csvsafe.DictWriter(buf, fieldnames=self.CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.csv_rows())
        return buf.getvalue()

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotators": list(self.annotators),
            "labels": list(self.labels),
            "n_items": self.n_items,
            "n_dialogues": self.n_dialogues,
            "n_tokens": self.n_tokens,
            "n_boot": self.n_boot,
            "confidence": self.confidence,
            "seed": self.seed,
            "figures": self.csv_rows(),
        }


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


# --------------------------------------------------------------------------- the token table


@dataclass
class _Table:
    annotators: tuple[str, ...]
    labels: tuple[str, ...]
    dialogues: list[str]
    tok_d: np.ndarray  # (T,) dialogue code
    tok_msg: np.ndarray  # (T,) item index
    tok_role: np.ndarray  # (T,)
    tok_seg: np.ndarray  # (T,)
    lab: np.ndarray  # (A, T) category code, -1 = annotator did not label the item
    cond: np.ndarray  # (A, M) 0 blind, 1 aware, -1 missing
    item_d: np.ndarray  # (M,)
    item_role: np.ndarray
    item_seg: np.ndarray
    plain_m: np.ndarray  # (P,) the items nobody marked: not in the token rows (every token O)
    plain_n: np.ndarray  # (P,) their tokens

    @property
    def k(self) -> int:
        return len(self.labels) + 1

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogues)

    @property
    def n_tokens(self) -> int:
        return int(self.lab.shape[1] + self.plain_n.sum())

    @cached_property
    def blocks(self) -> list[_Block]:
        """The table's dialogues in blocks (:func:`_dialogue_blocks`), worked out once for every
        pair, breakdown and condition that reads them."""
        return _dialogue_blocks(self.tok_d, self.item_d, self.plain_m, self.n_dialogues)


CHUNK_SPANS = 65_536  # spans turned into Python numbers at once when the table is filled
TOKEN_BLOCK = 1 << 20  # tokens whose temporaries exist at once when the table is counted
UNIT_BLOCK = 1 << 16  # marked units counted at once (each takes a row per category and label)


def _role_code(role: str) -> int:
    return SPEAKER_ROLES.index(role) if role in SPEAKER_ROLES else SPEAKER_ROLES.index("other")


def _seg_code(segment: str | None) -> int:
    return SEGMENTS.index(segment) if segment in (MATH, NON_MATH) else 2


class _Records:
    """What the table keeps of each item as it is read (:meth:`add`), in flat typed arrays, not
    lists of tuples (2 million (annotator, item, condition) tuples alone took 200 MB). Annotators
    and labels get codes as they appear (``fixed``: the taxonomy's codes, other labels ignored)."""

    def __init__(self, labels: Sequence[str] | None):
        self.fixed = None if labels is None else {lab: i + 1 for i, lab in enumerate(labels)}
        self.seen_labels: dict[str, int] = dict(self.fixed or {})
        self.a_seen: dict[str, int] = {}
        self.d_index: dict[str, int] = {}
        self.item_d, self.counts = array("q"), array("q")
        self.item_role, self.item_seg = array("b"), array("b")
        self.cond_a, self.cond_m, self.cond_c = array("q"), array("q"), array("b")  # annotator, item, 0 blind / 1 aware
        self.marks = array("q")  # 4 per span: annotator code, first token, end token, label code
        self.plain_m, self.plain_n = array("q"), array("q")
        self.pair_rows: dict[tuple[str, str], array] = {}  # 8 per row, see _item_span_rows
        self.n_tokens = 0

    def add(self, m: int, it: AnnotatedItem) -> None:
        code = self.d_index.setdefault(it.dialogue_id, len(self.d_index))
        if code != len(self.d_index) - 1:
            raise ValueError(f"the items of dialogue {it.dialogue_id!r} do not come together: the report sums "
                             "each dialogue's counts once its items are read (give the items in dialogue order)")
        self.item_d.append(code)
        self.item_role.append(_role_code(it.role))
        self.item_seg.append(_seg_code(it.segment))
        for a, al in it.annotations.items():
            self.cond_a.append(self.a_seen.setdefault(a, len(self.a_seen)))
            self.cond_m.append(m)
            self.cond_c.append(1 if al.condition == AWARE else 0)
        n = 0
        if any(al.spans for al in it.annotations.values()):
            n = self._add_marks(m, it)
        else:
            self.plain_m.append(m)
            self.plain_n.append(count_tokens(it.text))
        self.counts.append(n)
        self.n_tokens += n

    def _add_marks(self, m: int, it: AnnotatedItem) -> int:
        """A marked item's spans as token ranges, and its span matches; returns its tokens."""
        toks = tokenize(it.text)
        starts, ends = [t.start for t in toks], [t.end for t in toks]
        for a, al in it.annotations.items():
            for sp in al.spans:
                if self.fixed is None:
                    self.seen_labels.setdefault(sp.label, len(self.seen_labels) + 1)
                code = self.seen_labels.get(sp.label)
                if code is not None:
                    i0, i1 = bisect_right(ends, sp.start), bisect_left(starts, sp.end)
                    self.marks.extend((self.a_seen[a], self.n_tokens + i0, self.n_tokens + i1, code))
        _item_span_rows(m, it, self.seen_labels, self.fixed is not None, self.pair_rows)
        return len(toks)


def _build_table(
    items: Iterable[AnnotatedItem], labels: Sequence[str] | None
) -> tuple[_Table, dict[tuple[str, str], np.ndarray]]:
    """The token table and the span matches of ``items``, read in one pass: an item is dropped
    as soon as its tokens and spans are recorded (:class:`_Records`), so a million messages are
    never held at once (they outweigh the table many times). Only the items someone marked get
    token rows: every token of the others is O for each annotator who labelled the item, so
    their tokens are counted per item (``plain_m``, ``plain_n``), and the table grows with what
    people marked, not with the gold (7.3 million token rows at a million messages).
    The table keeps its codes in the smallest integers that hold them, annotators and labels in
    sorted order."""
    rec = _Records(labels)
    for m, it in enumerate(items):
        rec.add(m, it)
    annotators = tuple(sorted(rec.a_seen))
    labels = tuple(labels) if labels is not None else tuple(sorted(rec.seen_labels))
    # codes as they appeared -> codes in sorted order
    a_code = np.empty(len(rec.a_seen), dtype=np.int64)
    for a, i in rec.a_seen.items():
        a_code[i] = annotators.index(a)
    l_code = np.zeros(len(rec.seen_labels) + 1, dtype=np.int16)
    for lab, i in rec.seen_labels.items():
        l_code[i] = labels.index(lab) + 1
    n_items = len(rec.counts)
    cond = np.full((len(annotators), n_items), -1, dtype=np.int8)
    if rec.cond_a:
        cond[a_code[np.frombuffer(rec.cond_a, dtype=np.int64)], np.frombuffer(rec.cond_m, dtype=np.int64)] = \
            np.frombuffer(rec.cond_c, dtype=np.int8)
    del rec.cond_a, rec.cond_m, rec.cond_c
    item_d = np.frombuffer(rec.item_d, dtype=np.int64).astype(np.int32)
    item_role, item_seg = (np.frombuffer(v, dtype=np.int8).copy() for v in (rec.item_role, rec.item_seg))
    tok_msg = np.repeat(np.arange(n_items, dtype=np.int32), np.frombuffer(rec.counts, dtype=np.int64))
    lab = (cond[:, tok_msg] >= 0).astype(np.int16)  # no int64 table on the way (A x T: 300 MB at 1M messages)
    lab -= 1  # 0 (outside) where the annotator labelled the item, -1 where not
    spans = np.frombuffer(rec.marks, dtype=np.int64).reshape(-1, 4)
    for block in range(0, len(spans), CHUNK_SPANS):  # in reading order: a later span of one annotator wins
        for a, i0, i1, code in spans[block:block + CHUNK_SPANS].tolist():
            lab[a_code[a], i0:i1] = l_code[code]
    table = _Table(
        annotators=annotators, labels=labels, dialogues=list(rec.d_index), tok_d=item_d[tok_msg],
        tok_msg=tok_msg, tok_role=item_role[tok_msg], tok_seg=item_seg[tok_msg], lab=lab, cond=cond,
        item_d=item_d, item_role=item_role, item_seg=item_seg,
        plain_m=np.frombuffer(rec.plain_m, dtype=np.int64).copy(),
        plain_n=np.frombuffer(rec.plain_n, dtype=np.int64).copy(),
    )
    return table, _span_matches(rec.pair_rows, l_code)


def _span_matches(pair_rows: dict[tuple[str, str], array], l_code: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    """Each pair's rows of span agreement, their label codes as indices in the sorted labels."""
    matches = {}
    for pair, rows in sorted(pair_rows.items()):
        r = np.frombuffer(rows, dtype=np.int64).reshape(-1, 8).copy()
        r[:, 1] = l_code[r[:, 1]] - 1  # label code as it appeared -> index in ``labels``
        matches[pair] = r
    return matches


# --------------------------------------------------------------------------- the report


class _Emitter:
    """Turns point values and bootstrap arrays into :class:`Figure` rows."""

    def __init__(self, confidence: float):
        self.confidence = confidence
        self.figures: list[Figure] = []

    def add(self, point, boot, n, **keys) -> None:
        point, n = np.atleast_1d(point), np.atleast_1d(n)
        lo, hi = percentile_ci(np.asarray(boot).reshape(-1, point.size), self.confidence)
        groups = keys.pop("groups")
        for i, g in enumerate(groups):
            if n[i] > 0:
                self.figures.append(Figure(**keys, group=g, value=float(point[i]),
                                           ci_low=float(lo[i]), ci_high=float(hi[i]),
                                           n=int(n[i])))


Breakdown = tuple[str, tuple[str, ...], np.ndarray, np.ndarray]  # by, groups, code per token row, per item


def _breakdowns(t: _Table) -> list[Breakdown]:
    return [("all", ("all",), np.zeros(len(t.tok_d), dtype=np.int8), np.zeros(len(t.item_d), dtype=np.int8)),
            ("role", SPEAKER_ROLES, t.tok_role, t.item_role),
            ("segment", SEGMENTS, t.tok_seg, t.item_seg)]


def _token_kappa_block(out: _Emitter, t: _Table, w: np.ndarray, metric: str, pair: str,
                       counts: _Folded, by: str, groups: tuple[str, ...], fn) -> None:
    """``counts``: (G, K, K) matrices over dialogues and resamples; emit typed, untyped and
    per-label rows."""
    k = t.k
    g = len(groups)
    point = counts.point.reshape(g, k, k)
    boot = counts.boot.reshape(-1, g, k, k)
    n = point.sum(axis=(-2, -1))  # tokens compared (kappa) or pairable values (alpha)
    common = {"metric": metric, "level": "token", "pair": pair, "by": by}
    out.add(fn(point), fn(boot), n, scheme="typed", groups=groups, **common)
    m = collapse_matrix(k, None)
    out.add(fn(collapse(point, m)), fn(collapse(boot, m)), n, scheme="untyped",
            groups=groups, **common)
    if by == "all":
        ms = np.stack([collapse_matrix(k, c) for c in range(1, k)])  # (L, K, 2)
        p_l = np.einsum("lki,gkm,lmj->glij", ms, point, ms)[0]  # (L, 2, 2)
        b_l = np.einsum("lki,bgkm,lmj->bglij", ms, boot, ms)[:, 0]
        n_l = p_l[:, 1, :].sum(-1) + p_l[:, :, 1].sum(-1) - p_l[:, 1, 1]  # tokens either marked
        out.add(fn(p_l), fn(b_l), n_l, metric=metric, level="token", scheme="typed", pair=pair,
                by="label", groups=t.labels)


class _CellSums:
    """Sums per dialogue and cell of a stack of confusion (or coincidence) matrices, kept for the
    cells that occur only: a ``(D, used)`` array, not ``(D, G, K, K)``. Most cells never occur
    (labels no two annotators confused); the full arrays took 180 MB each at a million messages.
    Cells get a column the first time they occur."""

    def __init__(self, n_dialogues: int, n_cells: int):
        self.n_dialogues, self.n_cells = n_dialogues, n_cells
        self.column = np.full(n_cells, -1, dtype=np.int64)
        self.cells = np.zeros(0, dtype=np.int64)
        self.sums = np.zeros((n_dialogues, 0))

    def add(self, dialogue: np.ndarray, cell: np.ndarray, weight: np.ndarray | None = None) -> None:
        new = np.flatnonzero((np.bincount(cell, minlength=self.n_cells) > 0) & (self.column < 0))
        if new.size:
            self.column[new] = len(self.cells) + np.arange(new.size)
            self.cells = np.concatenate([self.cells, new])
            self.sums = np.hstack([self.sums, np.zeros((self.n_dialogues, new.size))])
        used = len(self.cells)
        flat = np.bincount(dialogue.astype(np.int64) * used + self.column[cell], weights=weight,
                           minlength=self.n_dialogues * used)
        self.sums += flat.reshape(self.n_dialogues, used)

    def fold_into(self, folded: _Folded, first: int) -> None:
        """Add these dialogues' sums (dialogues ``first`` on) to ``folded``."""
        folded.fold(first, self.sums, self.cells)


class _Folded:
    """Sums over dialogues, and over each bootstrap resample's dialogues (``w``), of some cells,
    folded in a block of dialogues at a time: the sums per dialogue of a million messages (33,355
    dialogues by hundreds of cells, for each breakdown) are never held at once."""

    def __init__(self, w: np.ndarray, n_cells: int):
        self.w = w
        self.point = np.zeros(n_cells)  # the cells summed over dialogues
        self.boot = np.zeros((w.shape[0], n_cells))  # each bootstrap resample's totals

    def fold(self, first: int, rows: np.ndarray, cells: np.ndarray | None = None) -> None:
        """``rows``: the sums of dialogues ``first`` on, one row each, of ``cells`` (default all)."""
        cells = np.arange(rows.shape[1]) if cells is None else cells
        self.point[cells] += rows.sum(axis=0)
        self.boot[:, cells] += resampled_sums(self.w[:, first:first + len(rows)], rows)



def _add_pairs(sums: _CellSums, dialogue: np.ndarray, group: np.ndarray, la: np.ndarray, lb: np.ndarray,
               k: int, weight: np.ndarray | None = None) -> None:
    """Add the (a, b) codes of aligned tokens to their dialogue's (group, a, b) cell (a code or
    group below 0: not counted)."""
    ok = (la >= 0) & (lb >= 0) & (group >= 0)
    cell = (group[ok].astype(np.int64) * k + la[ok]) * k + lb[ok]
    sums.add(dialogue[ok], cell, None if weight is None else weight[ok])


def _token_blocks(rows: slice) -> Iterator[slice]:
    return (slice(s, min(s + TOKEN_BLOCK, rows.stop)) for s in range(rows.start, rows.stop, TOKEN_BLOCK))


@dataclass(frozen=True)
class _Block:
    """Consecutive dialogues ``first`` to ``end`` (excluded): their token rows and their items
    nobody marked (slices of ``plain_m``), never a dialogue cut in two."""

    first: int
    end: int
    rows: slice
    plain: slice

    @property
    def n(self) -> int:
        return self.end - self.first


def _dialogue_blocks(tok_d: np.ndarray, item_d: np.ndarray, plain_m: np.ndarray, n_dialogues: int) -> list[_Block]:
    """The dialogues in blocks of about :data:`TOKEN_BLOCK` token rows (a longer dialogue is a
    block of its own): everything per dialogue is summed a block at a time, then folded."""
    rows = np.bincount(tok_d, minlength=n_dialogues).cumsum()
    plain = np.bincount(item_d[plain_m], minlength=n_dialogues).cumsum()
    blocks, first = [], 0
    while first < n_dialogues:
        start = int(rows[first - 1]) if first else 0
        end = min(max(first + 1, int(np.searchsorted(rows, start + TOKEN_BLOCK, side="right"))), n_dialogues)
        blocks.append(_Block(first, end, slice(start, int(rows[end - 1])),
                             slice(int(plain[first - 1]) if first else 0, int(plain[end - 1]))))
        first = end
    return blocks


def _pair_confusions(t: _Table, a: int, b: int, group: np.ndarray, item_group: np.ndarray,
                     n_groups: int, w: np.ndarray) -> _Folded:
    """Per (dialogue, group) confusion matrices of raters a and b over dialogues and resamples,
    a block of dialogues at a time (the whole table's temporaries took 600 MB at a million
    messages): their tokens, then their items nobody marked, whose tokens both raters
    labelled add to their group's O-O cell."""
    k = t.k
    folded = _Folded(w, n_groups * k * k)
    for block in t.blocks:
        sums = _CellSums(block.n, n_groups * k * k)
        for blk in _token_blocks(block.rows):
            _add_pairs(sums, t.tok_d[blk] - block.first, group[blk], t.lab[a, blk], t.lab[b, blk], k)
        m = t.plain_m[block.plain]
        g = item_group[m]
        ok = (t.cond[a, m] >= 0) & (t.cond[b, m] >= 0) & (g >= 0)
        sums.add(t.item_d[m[ok]] - block.first, g[ok].astype(np.int64) * k * k, t.plain_n[block.plain][ok].astype(float))
        sums.fold_into(folded, block.first)
    return folded


def _cohen(out: _Emitter, t: _Table, w: np.ndarray) -> None:
    for a, b in combinations(range(len(t.annotators)), 2):
        pair = f"{t.annotators[a]}~{t.annotators[b]}"
        pair_cond = np.full(len(t.item_d), -1, dtype=np.int8)
        ca, cb = t.cond[a], t.cond[b]
        both = (ca >= 0) & (cb >= 0)
        pair_cond[both & (ca == 0) & (cb == 0)] = 0
        pair_cond[both & (ca == 1) & (cb == 1)] = 1
        pair_cond[both & (ca != cb)] = 2
        for by, groups, code, item_code in [*_breakdowns(t),
                                            ("condition", PAIR_CONDITIONS, pair_cond[t.tok_msg], pair_cond)]:
            conf = _pair_confusions(t, a, b, code, item_code, len(groups), w)
            _token_kappa_block(out, t, w, "cohen_kappa", pair, conf, by, groups,
                               kappa_from_confusion)


def _units(t: _Table, block: _Block, cond_code: int | None,
           breakdowns: list[Breakdown]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The units (tokens at least two raters labelled, in one condition or all) of a block of
    dialogues, read a block of tokens at a time: the indices of those someone marked (few), and
    per breakdown, the units every rater called O and their ratings, per (dialogue of the block,
    group): ``(n, G, 2)`` (the tokens of the items nobody marked counted per item)."""
    n_d = block.n
    busy_parts = [np.zeros(0, dtype=np.int64)]
    easy = {by: np.zeros((n_d, len(groups), 2)) for by, groups, _code, _item in breakdowns}
    for blk in _token_blocks(block.rows):
        lab = t.lab[:, blk]
        if cond_code is not None:
            lab = np.where(t.cond[:, t.tok_msg[blk]] == cond_code, lab, -1)
        present = (lab >= 0).sum(axis=0)
        unit, marked = present >= 2, (lab > 0).any(axis=0)
        busy_parts.append(np.flatnonzero(unit & marked) + blk.start)
        plain = unit & ~marked
        d, m_plain = t.tok_d[blk][plain] - block.first, present[plain]
        for by, groups, code, _item in breakdowns:
            easy[by] += grouped_sums(d, code[blk][plain], n_d, len(groups), [None, m_plain])
    plain_m = t.plain_m[block.plain]
    cond = t.cond[:, plain_m]
    present = ((cond >= 0) if cond_code is None else (cond == cond_code)).sum(axis=0)
    unit = present >= 2
    m, n = plain_m[unit], t.plain_n[block.plain][unit]
    for by, groups, _code, item_code in breakdowns:
        easy[by] += grouped_sums(t.item_d[m] - block.first, item_code[m], n_d, len(groups), [n, n * present[unit]])
    return np.concatenate(busy_parts), easy


def _all_rater(out: _Emitter, t: _Table, w: np.ndarray) -> None:
    """Fleiss' kappa and Krippendorff's alpha across all annotators, per breakdown.

    Units where every rater said O (most tokens) agree trivially: P_i = 1 in every scheme, and
    their m_u ratings add to O's total and to the O-O coincidence cell (:func:`_units`). Only the
    units someone marked need per-unit work, done a block of units at a time into per-dialogue
    sums (the whole set's temporaries grew with the gold), a block of dialogues at a
    time, folded over dialogues and resamples."""
    n_cols = 3 + len(t.labels) + t.k  # P_i typed, untyped and per label, one per unit, each category's ratings
    cond_sets = [(None, None)] + [(c, i) for i, c in enumerate(CONDITIONS)]
    for cond_name, cond_code in cond_sets:
        breakdowns = _breakdowns(t)
        if cond_name is not None:
            breakdowns = [("condition", (cond_name,), np.zeros(len(t.tok_d), dtype=np.int8),
                           np.zeros(len(t.item_d), dtype=np.int8))]
        stats = {by: _Folded(w, len(groups) * n_cols) for by, groups, _code, _item in breakdowns}
        coinc = {by: _Folded(w, len(groups) * t.k * t.k) for by, groups, _code, _item in breakdowns}
        any_unit = False
        for block in t.blocks:
            any_unit |= _all_rater_block(t, block, cond_code, breakdowns, n_cols, stats, coinc)
        if not any_unit:
            continue
        for by, groups, _code, _item in breakdowns:
            g = len(groups)
            _fleiss_rows(out, t, by, groups, stats[by].point.reshape(g, n_cols),
                         stats[by].boot.reshape(-1, g, n_cols))
            _token_kappa_block(out, t, w, "krippendorff_alpha", "*", coinc[by], by, groups,
                               alpha_from_coincidence)


def _all_rater_block(t: _Table, block: _Block, cond_code: int | None, breakdowns: list[Breakdown], n_cols: int,
                     stats: dict[str, _Folded], coinc: dict[str, _Folded]) -> bool:
    """One block of dialogues' Fleiss statistics and coincidences, folded into ``stats`` and
    ``coinc``; whether it has any unit."""
    n_a, k, n_lab = len(t.annotators), t.k, len(t.labels)
    busy, easy = _units(t, block, cond_code, breakdowns)
    st = {by: np.zeros((block.n, len(groups), n_cols)) for by, groups, _code, _item in breakdowns}
    co = {by: _CellSums(block.n, len(groups) * k * k) for by, groups, _code, _item in breakdowns}
    for start in range(0, len(busy), UNIT_BLOCK):
        units = busy[start:start + UNIT_BLOCK]
        sub = t.lab[:, units]
        if cond_code is not None:
            sub = np.where(t.cond[:, t.tok_msg[units]] == cond_code, sub, -1).astype(np.int16)
        m_b = (sub >= 0).sum(axis=0).astype(float)
        cnt = np.zeros((len(units), k))
        for r in range(n_a):
            ok = np.nonzero(sub[r] >= 0)[0]
            cnt[ok, sub[r][ok]] += 1  # one rater adds at most 1 per unit: no collisions
        denom = m_b * (m_b - 1)
        p_typed = ((cnt**2).sum(1) - m_b) / denom
        pii = cnt[:, 1:].sum(1)
        p_untyped = (pii**2 + cnt[:, 0] ** 2 - m_b) / denom
        p_label = (cnt[:, 1:] ** 2 + (m_b[:, None] - cnt[:, 1:]) ** 2 - m_b[:, None]) / denom[:, None]
        weight = 1.0 / (m_b - 1)
        d = t.tok_d[units] - block.first
        cols = [p_typed, p_untyped, *p_label.T, None, *cnt.T]
        for by, groups, code, _item in breakdowns:
            st[by] += grouped_sums(d, code[units], block.n, len(groups), cols)
            for a, b in combinations(range(n_a), 2):
                _add_pairs(co[by], d, code[units], sub[a], sub[b], k, weight)
                _add_pairs(co[by], d, code[units], sub[b], sub[a], k, weight)
    for by, groups, _code, _item in breakdowns:
        g = len(groups)
        e = easy[by]
        st[by][..., : 3 + n_lab] += e[..., :1]  # P_i = 1 and one unit each
        st[by][..., 3 + n_lab] += e[..., 1]  # all their ratings are O
        stats[by].fold(block.first, st[by].reshape(block.n, -1))
        every = np.arange(block.n * g)
        co[by].add(every // g, (every % g) * k * k, e[..., 1].ravel())  # the O-O cell of each group
        co[by].fold_into(coinc[by], block.first)
    return len(busy) > 0 or any(e[..., 0].any() for e in easy.values())


def _fleiss_rows(out: _Emitter, t: _Table, by: str, groups, point, boot) -> None:
    n_lab = len(t.labels)
    k = t.k
    n_units = point[..., 2 + n_lab]

    def fl(stats, col, totals):
        return fleiss_from_stats(stats[..., col], stats[..., 2 + n_lab], totals)

    common = {"metric": "fleiss_kappa", "level": "token", "pair": "*", "by": by,
              "groups": groups}
    tot_p, tot_b = point[..., 3 + n_lab:], boot[..., 3 + n_lab:]
    out.add(fl(point, 0, tot_p), fl(boot, 0, tot_b), n_units, scheme="typed", **common)

    def untyped(tot):
        return np.stack([tot[..., 0], tot[..., 1:].sum(-1)], axis=-1)

    out.add(fl(point, 1, untyped(tot_p)), fl(boot, 1, untyped(tot_b)), n_units,
            scheme="untyped", **common)
    if by == "all":
        def per_label(stats, tot):
            vals = []
            for c in range(1, k):
                two = np.stack([tot.sum(-1) - tot[..., c], tot[..., c]], axis=-1)
                vals.append(fl(stats, 1 + c, two)[..., 0])
            return np.stack(vals, axis=-1)

        n_l = tot_p[0, 1:]
        out.add(per_label(point, tot_p), per_label(boot, tot_b), n_l, metric="fleiss_kappa",
                level="token", scheme="typed", pair="*", by="label", groups=t.labels)


def _item_span_rows(m: int, it: AnnotatedItem, label_codes: Mapping[str, int], fixed: bool,
                    pair_rows: dict[tuple[str, str], array]) -> None:
    """Item ``m``'s rows of span agreement, per pair of its annotators (in name order): one per
    label either marked, with the label's code, the pair's condition, the spans of each, exact
    matches and overlap matches of each side. With a ``fixed`` taxonomy, other labels are ignored."""
    ann = it.annotations
    for a, b in combinations(sorted(ann), 2):
        sa = [s for s in ann[a].spans if not fixed or s.label in label_codes]
        sb = [s for s in ann[b].spans if not fixed or s.label in label_codes]
        if not sa and not sb:
            continue
        ca, cb = ann[a].condition, ann[b].condition
        pc = 2 if ca != cb else (1 if ca == AWARE else 0)
        rows = pair_rows.setdefault((a, b), array("q"))
        for lab in sorted({s.label for s in sa} | {s.label for s in sb}):
            xa = [s for s in sa if s.label == lab]
            xb = [s for s in sb if s.label == lab]
            ex, _ = match_spans(xa, xb, match="exact")
            oa, ob = match_spans(xa, xb, match="overlap")
            rows.extend((m, label_codes[lab], pc, len(xa), len(xb), ex, oa, ob))


def _span_level(out: _Emitter, matches: dict[tuple[str, str], np.ndarray], t: _Table, w: np.ndarray) -> None:
    for (a, b), r in matches.items():
        msg, lab_c, pc = r[:, 0], r[:, 1], r[:, 2]
        cols = [r[:, 3], r[:, 4], r[:, 5], r[:, 6], r[:, 7]]
        pair = f"{a}~{b}"
        for by, groups, code in [("all", ("all",), np.zeros_like(msg)),
                                 ("label", t.labels, lab_c),
                                 ("role", SPEAKER_ROLES, t.item_role[msg]),
                                 ("segment", SEGMENTS, t.item_seg[msg]),
                                 ("condition", PAIR_CONDITIONS, pc)]:
            g = len(groups)
            stats = grouped_sums(t.item_d[msg], code, t.n_dialogues, g, cols)
            point = stats.sum(0)
            boot = resampled_sums(w, stats.reshape(t.n_dialogues, -1)).reshape(-1, g, 5)
            n = point[:, 0] + point[:, 1]
            for scheme, (ma, mb) in (("exact", (2, 2)), ("overlap", (3, 4))):
                out.add(f1_from_counts(point[:, 0], point[:, 1], point[:, ma], point[:, mb]),
                        f1_from_counts(boot[..., 0], boot[..., 1], boot[..., ma], boot[..., mb]),
                        n, metric="span_f1", level="span", scheme=scheme, pair=pair, by=by,
                        groups=groups)


def agreement_report(
    items: Iterable[AnnotatedItem],
    *,
    labels: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgreementReport:
    """Every agreement figure of ``items`` with dialogue-bootstrap confidence intervals.

    ``labels`` fixes the taxonomy (spans with other labels are ignored); by default it is the set
    of labels annotators used. The items are read once, one at a time (an iterator is never held
    whole).
    """
    t, matches = _build_table(items, labels)
    n_items = len(t.item_d)
    w = bootstrap_weights(t.n_dialogues, n_boot, seed)
    out = _Emitter(confidence)
    if len(t.annotators) >= 2:
        _cohen(out, t, w)
        _all_rater(out, t, w)
        _span_level(out, matches, t, w)
    return AgreementReport(
        annotators=t.annotators, labels=t.labels, n_items=n_items,
        n_dialogues=t.n_dialogues, n_tokens=t.n_tokens, n_boot=n_boot,
        confidence=confidence, seed=seed, figures=out.figures,
    )
