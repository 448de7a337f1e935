"""Token-level agreement over the token table: Cohen's kappa per pair of annotators, Fleiss' kappa
and Krippendorff's alpha across all of them, each per breakdown (all, role, segment, condition,
label), summed per dialogue a block at a time and folded over dialogues and bootstrap resamples."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from pipeline.metrics.agreement.figures import Emitter
from pipeline.metrics.agreement.items import CONDITIONS, PAIR_CONDITIONS, SEGMENTS
from pipeline.metrics.agreement.table import Block, Table, token_blocks
from pipeline.metrics.coefficients import (
    alpha_from_coincidence,
    collapse,
    collapse_matrix,
    fleiss_from_stats,
    grouped_sums,
    kappa_from_confusion,
    resampled_sums,
)
from pipeline.types import SPEAKER_ROLES

UNIT_BLOCK = 1 << 16  # marked units counted at once (each takes a row per category and label)

Breakdown = tuple[str, tuple[str, ...], np.ndarray, np.ndarray]  # by, groups, code per token row, per item


def _breakdowns(t: Table) -> list[Breakdown]:
    return [("all", ("all",), np.zeros(len(t.tok_d), dtype=np.int8), np.zeros(len(t.item_d), dtype=np.int8)),
            ("role", SPEAKER_ROLES, t.tok_role, t.item_role),
            ("segment", SEGMENTS, t.tok_seg, t.item_seg)]


def _token_kappa_block(out: Emitter, t: Table, w: np.ndarray, metric: str, pair: str,
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


def _pair_confusions(t: Table, a: int, b: int, group: np.ndarray, item_group: np.ndarray,
                     n_groups: int, w: np.ndarray) -> _Folded:
    """Per (dialogue, group) confusion matrices of raters a and b over dialogues and resamples,
    a block of dialogues at a time (the whole table's temporaries took 600 MB at a million
    messages): their tokens, then their items nobody marked, whose tokens both raters
    labelled add to their group's O-O cell."""
    k = t.k
    folded = _Folded(w, n_groups * k * k)
    for block in t.blocks:
        sums = _CellSums(block.n, n_groups * k * k)
        for blk in token_blocks(block.rows):
            _add_pairs(sums, t.tok_d[blk] - block.first, group[blk], t.lab[a, blk], t.lab[b, blk], k)
        m = t.plain_m[block.plain]
        g = item_group[m]
        ok = (t.cond[a, m] >= 0) & (t.cond[b, m] >= 0) & (g >= 0)
        sums.add(t.item_d[m[ok]] - block.first, g[ok].astype(np.int64) * k * k, t.plain_n[block.plain][ok].astype(float))
        sums.fold_into(folded, block.first)
    return folded


def cohen_figures(out: Emitter, t: Table, w: np.ndarray) -> None:
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


def _units(t: Table, block: Block, cond_code: int | None,
           breakdowns: list[Breakdown]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The units (tokens at least two raters labelled, in one condition or all) of a block of
    dialogues, read a block of tokens at a time: the indices of those someone marked (few), and
    per breakdown, the units every rater called O and their ratings, per (dialogue of the block,
    group): ``(n, G, 2)`` (the tokens of the items nobody marked counted per item)."""
    n_d = block.n
    busy_parts = [np.zeros(0, dtype=np.int64)]
    easy = {by: np.zeros((n_d, len(groups), 2)) for by, groups, _code, _item in breakdowns}
    for blk in token_blocks(block.rows):
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


def all_rater_figures(out: Emitter, t: Table, w: np.ndarray) -> None:
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


def _all_rater_block(t: Table, block: Block, cond_code: int | None, breakdowns: list[Breakdown], n_cols: int,
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


def _fleiss_rows(out: Emitter, t: Table, by: str, groups, point, boot) -> None:
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
