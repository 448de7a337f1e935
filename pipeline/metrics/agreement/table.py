"""The token table: every annotator's label on every word token someone marked, read from the items
in one pass, with the span matches of each pair of annotators, and the dialogues in blocks for
counting it a block at a time."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

import numpy as np

from pipeline.metrics.agreement.items import AWARE, SEGMENTS, AnnotatedItem
from pipeline.metrics.coefficients import match_spans
from pipeline.text import count_tokens, tokenize
from pipeline.types import MATH, NON_MATH, SPEAKER_ROLES


@dataclass
class Table:
    """Every annotator's category code on each token row of the items someone marked, with each
    item's dialogue, role, segment and conditions (codes in the smallest integers that hold them)."""

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
    def blocks(self) -> list[Block]:
        """The table's dialogues in blocks (:func:`_dialogue_blocks`), worked out once for every
        pair, breakdown and condition that reads them."""
        return _dialogue_blocks(self.tok_d, self.item_d, self.plain_m, self.n_dialogues)


CHUNK_SPANS = 65_536  # spans turned into Python numbers at once when the table is filled
TOKEN_BLOCK = 1 << 20  # tokens whose temporaries exist at once when the table is counted


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


def build_table(
    items: Iterable[AnnotatedItem], labels: Sequence[str] | None
) -> tuple[Table, dict[tuple[str, str], np.ndarray]]:
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
    table = Table(
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


def token_blocks(rows: slice) -> Iterator[slice]:
    return (slice(s, min(s + TOKEN_BLOCK, rows.stop)) for s in range(rows.start, rows.stop, TOKEN_BLOCK))


@dataclass(frozen=True)
class Block:
    """Consecutive dialogues ``first`` to ``end`` (excluded): their token rows and their items
    nobody marked (slices of ``plain_m``), never a dialogue cut in two."""

    first: int
    end: int
    rows: slice
    plain: slice

    @property
    def n(self) -> int:
        return self.end - self.first


def _dialogue_blocks(tok_d: np.ndarray, item_d: np.ndarray, plain_m: np.ndarray, n_dialogues: int) -> list[Block]:
    """The dialogues in blocks of about :data:`TOKEN_BLOCK` token rows (a longer dialogue is a
    block of its own): everything per dialogue is summed a block at a time, then folded."""
    rows = np.bincount(tok_d, minlength=n_dialogues).cumsum()
    plain = np.bincount(item_d[plain_m], minlength=n_dialogues).cumsum()
    blocks, first = [], 0
    while first < n_dialogues:
        start = int(rows[first - 1]) if first else 0
        end = min(max(first + 1, int(np.searchsorted(rows, start + TOKEN_BLOCK, side="right"))), n_dialogues)
        blocks.append(Block(first, end, slice(start, int(rows[end - 1])),
                             slice(int(plain[first - 1]) if first else 0, int(plain[end - 1]))))
        first = end
    return blocks
