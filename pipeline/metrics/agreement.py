"""Inter-annotator agreement: token-level kappas and alpha, span-level F1, dialogue bootstrap.

Everything is computed from additive per-dialogue counts (confusion matrices, coincidence
matrices, Fleiss sufficient statistics, span match counts). A bootstrap resample of dialogues is
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

import csv
import io
import math
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import combinations
from typing import Any

import numpy as np

from pipeline.text import tokenize
from pipeline.types import MATH, NON_MATH, SPEAKER_ROLES, Span

BLIND = "blind"
AWARE = "aware"
CONDITIONS = (BLIND, AWARE)
PAIR_CONDITIONS = (BLIND, AWARE, "mixed")
SEGMENTS = (MATH, NON_MATH, "unknown")
OUTSIDE = "O"


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
    n: int  # tokens compared (pairwise), units (all-rater) or spans (span level)

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
        writer = csv.DictWriter(buf, fieldnames=self.CSV_FIELDS, lineterminator="\n")
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


# --------------------------------------------------------------------------- bootstrap helpers


def bootstrap_weights(n_groups: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """``(n_boot, n_groups)`` counts: how often each dialogue is drawn in each resample."""
    if n_groups == 0 or n_boot <= 0:
        return np.zeros((max(n_boot, 0), n_groups))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_groups, size=(n_boot, n_groups))
    flat = (draws + (np.arange(n_boot) * n_groups)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_groups).reshape(n_boot, n_groups).astype(float)


def percentile_ci(boot: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0, ignoring resamples where the figure is undefined."""
    alpha = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanpercentile(boot, 100 * alpha, axis=0)
        hi = np.nanpercentile(boot, 100 * (1 - alpha), axis=0)
    return lo, hi


def _grouped_sums(
    dialogue: np.ndarray, group: np.ndarray, n_dialogues: int, n_groups: int, columns: Sequence
) -> np.ndarray:
    """Sum each column per (dialogue, group): ``(n_dialogues, n_groups, len(columns))``."""
    keep = group >= 0
    idx = dialogue[keep] * n_groups + group[keep]
    out = np.empty((n_dialogues * n_groups, len(columns)))
    for j, col in enumerate(columns):
        w = None if col is None else np.asarray(col, dtype=float)[keep]
        out[:, j] = np.bincount(idx, weights=w, minlength=n_dialogues * n_groups)
    return out.reshape(n_dialogues, n_groups, len(columns))


# --------------------------------------------------------------------------- pure formulas


def kappa_from_confusion(conf: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion matrices ``(..., K, K)``; NaN where chance agreement is 1."""
    conf = np.asarray(conf, dtype=float)
    n = conf.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(conf, axis1=-2, axis2=-1) / n
        pe = (conf.sum(axis=-1) * conf.sum(axis=-2)).sum(axis=-1) / n**2
        return np.where(pe < 1 - 1e-12, (po - pe) / (1 - pe), np.nan)


def alpha_from_coincidence(coinc: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha of coincidence matrices ``(..., K, K)``."""
    coinc = np.asarray(coinc, dtype=float)
    nc = coinc.sum(axis=-1)
    n = nc.sum(axis=-1)
    observed = coinc.sum(axis=(-2, -1)) - np.trace(coinc, axis1=-2, axis2=-1)
    expected = n**2 - (nc**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)


def fleiss_from_stats(sum_p: np.ndarray, n_units: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Fleiss' kappa from ``sum_i P_i``, the number of units and category totals ``(..., K)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = sum_p / n_units
        p = totals / totals.sum(axis=-1, keepdims=True)
        pe = (p**2).sum(axis=-1)
        return np.where(pe < 1 - 1e-12, (p_bar - pe) / (1 - pe), np.nan)


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of an ``items x categories`` count table.

    Items may have different numbers of raters (``P_i`` uses each item's own ``n_i``; items with
    fewer than two ratings are dropped); with a constant number this is Fleiss (1971) exactly.
    """
    t = np.asarray(table, dtype=float)
    n_i = t.sum(axis=1)
    t, n_i = t[n_i >= 2], n_i[n_i >= 2]
    p_i = ((t**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    return float(fleiss_from_stats(p_i.sum(), np.float64(len(t)), t.sum(axis=0)))


def collapse_matrix(n_categories: int, label_code: int | None) -> np.ndarray:
    """``K x 2`` map to a binary scheme: one label vs the rest, or (None) O vs any PII."""
    m = np.zeros((n_categories, 2))
    if label_code is None:
        m[0, 0] = 1
        m[1:, 1] = 1
    else:
        m[:, 0] = 1
        m[label_code, 0] = 0
        m[label_code, 1] = 1
    return m


def _collapse(conf: np.ndarray, m: np.ndarray) -> np.ndarray:
    return np.einsum("ki,...kl,lj->...ij", m, conf, m)


def token_labels(text: str, spans: Iterable[Span], labels: Sequence[str]) -> list[str]:
    """IO label of each word token of ``text`` (``O`` or the label of the overlapping span)."""
    toks = tokenize(text)
    out = [OUTSIDE] * len(toks)
    code = {lab: i + 1 for i, lab in enumerate(labels)}
    starts, ends = [t.start for t in toks], [t.end for t in toks]
    for s in spans:
        if s.label in code:
            for i in range(bisect_right(ends, s.start), bisect_left(starts, s.end)):
                out[i] = s.label
    return out


def match_spans(a: Sequence[Span], b: Sequence[Span], *, match: str = "exact",
                typed: bool = True) -> tuple[int, int]:
    """``(a matched, b matched)``: how many spans of each side have a partner on the other."""
    if match == "exact":
        if typed:
            common = {s.key() for s in a} & {s.key() for s in b}
            return len(common), len(common)
        common2 = {(s.start, s.end) for s in a} & {(s.start, s.end) for s in b}
        return len(common2), len(common2)
    if match != "overlap":
        raise ValueError(f"unknown match {match!r}: use 'exact' or 'overlap'")

    def hit(x: Span, ys: Sequence[Span]) -> bool:
        return any(x.overlaps(y) and (not typed or x.label == y.label) for y in ys)

    return sum(hit(x, b) for x in a), sum(hit(y, a) for y in b)


def f1_from_counts(n_a, n_b, m_a, m_b) -> np.ndarray:
    """Symmetric span F1: precision ``m_b / n_b`` (b against a), recall ``m_a / n_a``."""
    n_a, n_b, m_a, m_b = (np.asarray(x, dtype=float) for x in (n_a, n_b, m_a, m_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_b > 0, m_b / n_b, np.nan)
        r = np.where(n_a > 0, m_a / n_a, np.nan)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
        # Both sides empty: nothing to disagree about, F1 undefined.
        return np.where((n_a + n_b) > 0, np.where(np.isnan(p) | np.isnan(r), 0.0, f), np.nan)


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

    @property
    def k(self) -> int:
        return len(self.labels) + 1

    @property
    def n_dialogues(self) -> int:
        return len(self.dialogues)


def _role_code(role: str) -> int:
    return SPEAKER_ROLES.index(role) if role in SPEAKER_ROLES else SPEAKER_ROLES.index("other")


def _seg_code(segment: str | None) -> int:
    return SEGMENTS.index(segment) if segment in (MATH, NON_MATH) else 2


def _build_table(items: Sequence[AnnotatedItem], labels: Sequence[str] | None) -> _Table:
    annotators = tuple(sorted({a for it in items for a in it.annotations}))
    if labels is None:
        labels = sorted({s.label for it in items for al in it.annotations.values()
                         for s in al.spans})
    labels = tuple(labels)
    code = {lab: i + 1 for i, lab in enumerate(labels)}
    a_index = {a: i for i, a in enumerate(annotators)}
    d_index: dict[str, int] = {}
    n_items = len(items)
    item_d = np.empty(n_items, dtype=np.int64)
    item_role = np.empty(n_items, dtype=np.int64)
    item_seg = np.empty(n_items, dtype=np.int64)
    cond = np.full((len(annotators), n_items), -1, dtype=np.int8)
    counts = np.empty(n_items, dtype=np.int64)
    toks_of: list = [None] * n_items
    for m, it in enumerate(items):
        item_d[m] = d_index.setdefault(it.dialogue_id, len(d_index))
        item_role[m] = _role_code(it.role)
        item_seg[m] = _seg_code(it.segment)
        toks = tokenize(it.text)
        counts[m] = len(toks)
        for a, al in it.annotations.items():
            cond[a_index[a], m] = 1 if al.condition == AWARE else 0
            if al.spans:
                toks_of[m] = toks
    offsets = np.concatenate([[0], np.cumsum(counts)])
    tok_msg = np.repeat(np.arange(n_items), counts)
    lab = np.where(cond[:, tok_msg] >= 0, 0, -1).astype(np.int16)
    for m, toks in enumerate(toks_of):
        if toks is None:
            continue
        starts, ends = [t.start for t in toks], [t.end for t in toks]
        for a, al in items[m].annotations.items():
            row = lab[a_index[a]]
            for s in al.spans:
                c = code.get(s.label)
                if c is None:
                    continue
                i0, i1 = bisect_right(ends, s.start), bisect_left(starts, s.end)
                row[offsets[m] + i0: offsets[m] + i1] = c
    return _Table(
        annotators=annotators, labels=labels, dialogues=list(d_index), tok_d=item_d[tok_msg],
        tok_msg=tok_msg, tok_role=item_role[tok_msg], tok_seg=item_seg[tok_msg], lab=lab,
        cond=cond, item_d=item_d, item_role=item_role, item_seg=item_seg,
    )


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


def _breakdowns(t: _Table) -> list[tuple[str, tuple[str, ...], np.ndarray]]:
    return [("all", ("all",), np.zeros_like(t.tok_d)),
            ("role", SPEAKER_ROLES, t.tok_role),
            ("segment", SEGMENTS, t.tok_seg)]


def _token_kappa_block(out: _Emitter, t: _Table, w: np.ndarray, metric: str, pair: str,
                       counts: np.ndarray, by: str, groups: tuple[str, ...], fn) -> None:
    """``counts``: (D, G, K, K) per-dialogue matrices; emit typed, untyped and per-label rows."""
    k = t.k
    d, g = counts.shape[:2]
    point = counts.sum(axis=0)  # (G, K, K)
    boot = (w @ counts.reshape(d, -1)).reshape(-1, g, k, k)
    n = point.sum(axis=(-2, -1))  # tokens compared (kappa) or pairable values (alpha)
    common = {"metric": metric, "level": "token", "pair": pair, "by": by}
    out.add(fn(point), fn(boot), n, scheme="typed", groups=groups, **common)
    m = collapse_matrix(k, None)
    out.add(fn(_collapse(point, m)), fn(_collapse(boot, m)), n, scheme="untyped",
            groups=groups, **common)
    if by == "all":
        ms = np.stack([collapse_matrix(k, c) for c in range(1, k)])  # (L, K, 2)
        p_l = np.einsum("lki,gkm,lmj->glij", ms, point, ms)[0]  # (L, 2, 2)
        b_l = np.einsum("lki,bgkm,lmj->bglij", ms, boot, ms)[:, 0]
        n_l = p_l[:, 1, :].sum(-1) + p_l[:, :, 1].sum(-1) - p_l[:, 1, 1]  # tokens either marked
        out.add(fn(p_l), fn(b_l), n_l, metric=metric, level="token", scheme="typed", pair=pair,
                by="label", groups=t.labels)


def _pair_confusions(t: _Table, a: int, b: int, group: np.ndarray, n_groups: int,
                     weight: np.ndarray | None = None) -> np.ndarray:
    la, lb = t.lab[a], t.lab[b]
    keep = np.nonzero((la >= 0) & (lb >= 0) & (group >= 0))[0]
    k = t.k
    idx = ((t.tok_d[keep] * n_groups + group[keep]) * k + la[keep]) * k + lb[keep]
    wts = None if weight is None else weight[keep]
    flat = np.bincount(idx, weights=wts, minlength=t.n_dialogues * n_groups * k * k)
    return flat.reshape(t.n_dialogues, n_groups, k, k)


def _cohen(out: _Emitter, t: _Table, w: np.ndarray) -> None:
    for a, b in combinations(range(len(t.annotators)), 2):
        pair = f"{t.annotators[a]}~{t.annotators[b]}"
        pair_cond = np.full(len(t.item_d), -1)
        ca, cb = t.cond[a], t.cond[b]
        both = (ca >= 0) & (cb >= 0)
        pair_cond[both & (ca == 0) & (cb == 0)] = 0
        pair_cond[both & (ca == 1) & (cb == 1)] = 1
        pair_cond[both & (ca != cb)] = 2
        for by, groups, code in [*_breakdowns(t),
                                 ("condition", PAIR_CONDITIONS, pair_cond[t.tok_msg])]:
            conf = _pair_confusions(t, a, b, code, len(groups))
            _token_kappa_block(out, t, w, "cohen_kappa", pair, conf, by, groups,
                               kappa_from_confusion)


def _all_rater(out: _Emitter, t: _Table, w: np.ndarray) -> None:
    """Fleiss' kappa and Krippendorff's alpha across all annotators, per breakdown."""
    n_a, k = len(t.annotators), t.k
    full_lab = t.lab
    cond_sets = [(None, None)] + [(c, i) for i, c in enumerate(CONDITIONS)]
    for cond_name, cond_code in cond_sets:
        lab = full_lab if cond_code is None else np.where(
            t.cond[:, t.tok_msg] == cond_code, full_lab, -1).astype(np.int16)
        present = (lab >= 0).sum(axis=0)
        units = np.nonzero(present >= 2)[0]
        if len(units) == 0:
            continue
        sub = lab[:, units]
        m_u = present[units].astype(float)
        # category counts per unit
        cnt = np.zeros((len(units), k))
        for r in range(n_a):
            ok = np.nonzero(sub[r] >= 0)[0]
            cnt[ok, sub[r][ok]] += 1  # one rater adds at most 1 per unit: no collisions
        breakdowns = _breakdowns(t)
        if cond_name is not None:
            breakdowns = [("condition", (cond_name,), np.zeros_like(t.tok_d))]
        p_typed = ((cnt**2).sum(1) - m_u) / (m_u * (m_u - 1))
        pii = cnt[:, 1:].sum(1)
        p_untyped = (pii**2 + cnt[:, 0] ** 2 - m_u) / (m_u * (m_u - 1))
        p_label = ((cnt[:, 1:] ** 2 + (m_u[:, None] - cnt[:, 1:]) ** 2) - m_u[:, None]) / (
            m_u[:, None] * (m_u[:, None] - 1))
        weight = np.zeros(lab.shape[1])
        weight[units] = 1.0 / (m_u - 1)
        t_sub = replace(t, lab=lab)
        for by, groups, code in breakdowns:
            g = len(groups)
            cols = [p_typed, p_untyped, *p_label.T, None, *cnt.T]
            stats = _grouped_sums(t.tok_d[units], code[units], t.n_dialogues, g, cols)
            point, boot = stats.sum(0), (w @ stats.reshape(t.n_dialogues, -1)).reshape(-1, g,
                                                                                       len(cols))
            _fleiss_rows(out, t, by, groups, point, boot)
            coinc = np.zeros((t.n_dialogues, g, k, k))
            for a, b in combinations(range(n_a), 2):
                c = _pair_confusions(t_sub, a, b, code, g, weight)
                coinc += c + np.swapaxes(c, -1, -2)
            _token_kappa_block(out, t, w, "krippendorff_alpha", "*", coinc, by, groups,
                               alpha_from_coincidence)


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


def _span_level(out: _Emitter, items: Sequence[AnnotatedItem], t: _Table,
                w: np.ndarray) -> None:
    lab_index = {lab: i for i, lab in enumerate(t.labels)}
    for a, b in combinations(t.annotators, 2):
        rows: list[tuple[int, ...]] = []
        for m, it in enumerate(items):
            ann = it.annotations
            if a not in ann or b not in ann:
                continue
            sa = [s for s in ann[a].spans if s.label in lab_index]
            sb = [s for s in ann[b].spans if s.label in lab_index]
            if not sa and not sb:
                continue
            ca, cb = ann[a].condition, ann[b].condition
            pc = 2 if ca != cb else (1 if ca == AWARE else 0)
            for lab in {s.label for s in sa} | {s.label for s in sb}:
                xa = [s for s in sa if s.label == lab]
                xb = [s for s in sb if s.label == lab]
                ex, _ = match_spans(xa, xb, match="exact")
                oa, ob = match_spans(xa, xb, match="overlap")
                rows.append((m, lab_index[lab], pc, len(xa), len(xb), ex, oa, ob))
        if not rows:
            continue
        r = np.asarray(rows, dtype=np.int64)
        msg, lab_c, pc = r[:, 0], r[:, 1], r[:, 2]
        cols = [r[:, 3], r[:, 4], r[:, 5], r[:, 6], r[:, 7]]
        pair = f"{a}~{b}"
        for by, groups, code in [("all", ("all",), np.zeros_like(msg)),
                                 ("label", t.labels, lab_c),
                                 ("role", SPEAKER_ROLES, t.item_role[msg]),
                                 ("segment", SEGMENTS, t.item_seg[msg]),
                                 ("condition", PAIR_CONDITIONS, pc)]:
            g = len(groups)
            stats = _grouped_sums(t.item_d[msg], code, t.n_dialogues, g, cols)
            point = stats.sum(0)
            boot = (w @ stats.reshape(t.n_dialogues, -1)).reshape(-1, g, 5)
            n = point[:, 0] + point[:, 1]
            for scheme, (ma, mb) in (("exact", (2, 2)), ("overlap", (3, 4))):
                out.add(f1_from_counts(point[:, 0], point[:, 1], point[:, ma], point[:, mb]),
                        f1_from_counts(boot[..., 0], boot[..., 1], boot[..., ma], boot[..., mb]),
                        n, metric="span_f1", level="span", scheme=scheme, pair=pair, by=by,
                        groups=groups)


def agreement_report(
    items: Sequence[AnnotatedItem],
    *,
    labels: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgreementReport:
    """Every agreement figure of ``items`` with dialogue-bootstrap confidence intervals.

    ``labels`` fixes the taxonomy (spans with other labels are ignored); by default it is the set
    of labels annotators used.
    """
    items = list(items)
    t = _build_table(items, labels)
    w = bootstrap_weights(t.n_dialogues, n_boot, seed)
    out = _Emitter(confidence)
    if len(t.annotators) >= 2:
        _cohen(out, t, w)
        _all_rater(out, t, w)
        _span_level(out, items, t, w)
    return AgreementReport(
        annotators=t.annotators, labels=t.labels, n_items=len(items),
        n_dialogues=t.n_dialogues, n_tokens=int(t.lab.shape[1]), n_boot=n_boot,
        confidence=confidence, seed=seed, figures=out.figures,
    )
