"""A simulated annotation study with known error rates and a known anchoring bias.

Used to test that the circularity report finds an inflation that is there and none that is not.
Every message holds true PII words and *distractors* (word-problem characters, which the strict
policy does not count as PII). The model finds true spans with a known recall and flags
distractors with a known rate; annotators miss true spans and flag distractors at their own known
rates, and, when aware, accept a wrong suggestion with probability ``anchoring``. Everything is
seeded; text is synthetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pipeline.metrics.agreement import AWARE, BLIND, AnnotatedItem, AnnotatorLabels
from pipeline.types import MATH, NON_MATH, Span

FILLER = ("so", "what", "do", "we", "get", "when", "multiply", "both", "sides", "by", "3",
          "the", "answer", "is", "x", "=", "7", "nice", "work", "try", "next", "one")
PII_WORDS = (("Maya", "NAME"), ("Jordan", "NAME"), ("Priya", "NAME"), ("Westfield", "SCHOOL"),
             ("Denver", "LOCATION"), ("mathwiz99", "USERNAME"))
DISTRACTORS = (("Alex", "NAME"), ("Sam", "NAME"), ("Springfield", "LOCATION"))


@dataclass(frozen=True, slots=True)
class SimulatedAnnotator:
    id: str
    miss_rate: float = 0.1  # P(skip a true span)
    false_alarm_rate: float = 0.05  # P(mark a distractor) on one's own
    anchoring: float = 0.0  # P(accept a wrong suggestion) when aware
    seconds: float = 20.0  # median decision time blind; aware accepts are faster


@dataclass(frozen=True, slots=True)
class StudyConfig:
    n_dialogues: int = 200
    messages_per_dialogue: int = 20
    pii_per_message: float = 0.3
    distractors_per_message: float = 0.3
    model_recall: float = 0.85
    model_false_alarm_rate: float = 0.4
    annotators: tuple[SimulatedAnnotator, ...] = (
        SimulatedAnnotator("A1"), SimulatedAnnotator("A2"), SimulatedAnnotator("A3"),
        SimulatedAnnotator("A4"),
    )
    overlap: int = 2
    seed: int = 0


@dataclass
class SimulatedStudy:
    items: list[AnnotatedItem]
    predictions: dict[tuple[str, int], tuple[Span, ...]]
    truth: dict[tuple[str, int], tuple[Span, ...]]
    expected: dict[str, float] = field(default_factory=dict)

    @property
    def expected_delta_f1(self) -> float:
        return self.expected["aware_f1"] - self.expected["blind_f1"]


def _f1(tp: float, n_pred: float, n_gold: float) -> float:
    return 2 * tp / (n_pred + n_gold) if n_pred + n_gold else float("nan")


def simulate_study(config: StudyConfig = StudyConfig()) -> SimulatedStudy:
    """Label a synthetic corpus in randomized mode; also return the expected blind/aware F1.

    The expectation is computed from the realised corpus and model output and the annotators'
    known rates, for the items that got both a blind and an aware annotation (exact matching).
    """
    if config.overlap != 2:
        raise ValueError("the expected inflation is derived for two annotators per item")
    rng = random.Random(config.seed)
    anns = config.annotators
    n_items = config.n_dialogues * config.messages_per_dialogue
    assign = _assign_pairs(rng, anns, n_items, config.overlap)
    cond = _conditions(rng, anns, assign)
    by_id = {a.id: a for a in anns}

    items: list[AnnotatedItem] = []
    predictions: dict[tuple[str, int], tuple[Span, ...]] = {}
    truth: dict[tuple[str, int], tuple[Span, ...]] = {}
    exp = {"blind_tp": 0.0, "blind_gold": 0.0, "aware_tp": 0.0, "aware_gold": 0.0, "pred": 0.0}
    for i in range(n_items):
        d, idx = divmod(i, config.messages_per_dialogue)
        did = f"sim{d:04d}"
        text, cands = _message(rng, config)
        true_spans = tuple(sorted(s for s, real in cands if real))
        pred_of = {}
        for s, real in cands:
            p = config.model_recall if real else config.model_false_alarm_rate
            pred_of[s.key()] = rng.random() < p
        pred = tuple(sorted(s for s, _ in cands if pred_of[s.key()]))
        annotations = {
            a_id: _annotate(rng, by_id[a_id], cond[(i, a_id)], cands, pred_of, bool(pred)) for a_id in assign[i]
        }
        segment = MATH if any(not real for _, real in cands) or rng.random() < 0.4 else NON_MATH
        items.append(AnnotatedItem(did, idx, text, "student" if idx % 2 else "tutor", segment,
                                   annotations))
        predictions[(did, idx)] = pred
        truth[(did, idx)] = true_spans
        # Expected counts on items that have one blind and one aware annotation.
        conds = {cond[(i, a)]: by_id[a] for a in assign[i]}
        if len(conds) == 2:
            _add_expected(exp, conds, cands, pred_of, len(pred))
    expected = {
        f"{c}_f1": _f1(exp[f"{c}_tp"], exp["pred"], exp[f"{c}_gold"]) for c in (BLIND, AWARE)
    }
    return SimulatedStudy(items, predictions, truth, expected)


def _assign_pairs(rng: random.Random, anns, n_items: int, overlap: int) -> list[tuple[str, ...]]:
    """Balanced assignment: item i goes to a rotating group of distinct annotators."""
    order = [a.id for a in anns]
    assign: list[tuple[str, ...]] = []
    for i in range(n_items):
        if i % len(order) == 0:
            rng.shuffle(order)
        j = i % len(order)
        assign.append(tuple(order[(j + t) % len(order)] for t in range(overlap)))
    return assign


def _conditions(rng: random.Random, anns, assign: list[tuple[str, ...]]) -> dict[tuple[int, str], str]:
    """Randomized condition, balanced per annotator: half their items blind, half aware."""
    cond: dict[tuple[int, str], str] = {}
    per_ann: dict[str, list[int]] = {a.id: [] for a in anns}
    for i, who in enumerate(assign):
        for a in who:
            per_ann[a].append(i)
    for a, its in per_ann.items():
        labels = [BLIND, AWARE] * (len(its) // 2 + 1)
        labels = labels[: len(its)]
        rng.shuffle(labels)
        for i, c in zip(its, labels, strict=True):
            cond[(i, a)] = c
    return cond


def _message(rng: random.Random, config: StudyConfig) -> tuple[str, list[tuple[Span, bool]]]:
    """Filler words with PII words and distractors inserted; the candidate spans and which are PII."""
    words = [rng.choice(FILLER) for _ in range(rng.randint(4, 12))]
    kinds: list[tuple[int, str, bool]] = []  # (word position, label, is true PII)
    for pool, rate, real in ((PII_WORDS, config.pii_per_message, True),
                             (DISTRACTORS, config.distractors_per_message, False)):
        while rng.random() < rate / (1 + rate):
            surface, label = rng.choice(pool)
            pos = rng.randrange(len(words) + 1)
            words.insert(pos, surface)
            kinds = [(p + (p >= pos), lab, r) for p, lab, r in kinds]
            kinds.append((pos, label, real))
    starts, off = [], 0
    for w in words:
        starts.append(off)
        off += len(w) + 1
    cands = [(Span(starts[p], starts[p] + len(words[p]), lab), real) for p, lab, real in kinds]
    return " ".join(words), cands


def _annotate(rng: random.Random, a, c: str, cands: list[tuple[Span, bool]], pred_of: dict,
              any_pred: bool) -> AnnotatorLabels:
    """One annotator's spans and time in condition ``c`` (anchoring on suggestions when aware)."""
    spans = []
    accepted_all = True
    for s, real in cands:
        suggested = c == AWARE and pred_of[s.key()]
        if real:
            mark = rng.random() >= a.miss_rate
        else:
            mark = rng.random() < a.false_alarm_rate or (suggested and rng.random() < a.anchoring)
        if mark:
            spans.append(s)
        if mark != pred_of[s.key()]:
            accepted_all = False
    fast = c == AWARE and any_pred and accepted_all
    secs = a.seconds * (0.5 if fast else 1.0) * rng.lognormvariate(0, 0.3)
    return AnnotatorLabels(tuple(sorted(spans)), c, round(secs, 2))


def _add_expected(exp: dict[str, float], conds: dict, cands: list[tuple[Span, bool]], pred_of: dict,
                  n_pred: int) -> None:
    """Add one item's expected marks per condition (from the annotators' known rates) to ``exp``."""
    exp["pred"] += n_pred
    for c, a in conds.items():
        for s, real in cands:
            is_pred = pred_of[s.key()]
            if real:
                p_mark = 1 - a.miss_rate
            else:
                p_mark = a.false_alarm_rate
                if c == AWARE and is_pred:
                    p_mark += (1 - a.false_alarm_rate) * a.anchoring
            exp[f"{c}_gold"] += p_mark
            if is_pred:
                exp[f"{c}_tp"] += p_mark


# ----------------------------------------------------------------------------------- one real item


@dataclass(frozen=True, slots=True)
class ItemActions:
    """What one simulated annotator does on one item, in the workspace's own terms: suggestions
    accepted or rejected as they are (aware only), and spans marked on one's own."""

    accept: tuple[Span, ...] = ()
    reject: tuple[Span, ...] = ()
    add: tuple[Span, ...] = ()

    @property
    def spans(self) -> tuple[Span, ...]:
        return tuple(sorted((*self.accept, *self.add)))


def simulate_item(annotator: SimulatedAnnotator, *, truth: tuple[Span, ...], predictions: tuple[Span, ...],
                  aware: bool, rng: random.Random) -> ItemActions:
    """Label one item of a real corpus whose true spans are known, with the annotator's rates.

    The model's wrong predictions are the distractors. Blind, the annotator marks a true span
    unless they miss it (``miss_rate``) and a distractor at ``false_alarm_rate``. Aware, every
    prediction is a suggestion to accept or reject: a correct one is accepted unless missed, a
    wrong one is accepted at ``false_alarm_rate`` plus ``anchoring`` of the rest (the bias the
    circularity report must find); true spans the model did not suggest are marked as when blind.
    Overlapping marks are skipped, as the workspace refuses them.
    """
    true_keys = {s.key() for s in truth}
    accept: list[Span] = []
    reject: list[Span] = []
    add: list[Span] = []

    def free(s: Span) -> bool:
        return not any(s.overlaps(o) for o in (*accept, *add))

    if aware:
        for p in sorted(predictions):
            if p.key() in true_keys:
                take = rng.random() >= annotator.miss_rate
            else:
                take = rng.random() < annotator.false_alarm_rate + (
                    1 - annotator.false_alarm_rate) * annotator.anchoring
            (accept if take and free(p) else reject).append(p)
    decided = {p.key() for p in (*accept, *reject)}
    for s in sorted(truth):
        if s.key() not in decided and rng.random() >= annotator.miss_rate and free(s):
            add.append(s)
    if not aware:
        for p in sorted(predictions):
            if p.key() not in true_keys and rng.random() < annotator.false_alarm_rate and free(p):
                add.append(p)
    return ItemActions(tuple(accept), tuple(reject), tuple(add))


def simulate_predictions(truth: tuple[Span, ...], distractors: tuple[Span, ...], *, recall: float,
                         false_alarm_rate: float, rng: random.Random) -> tuple[Span, ...]:
    """A model with a known recall on the true spans and a known rate of flagging distractors
    (the study's model, for a real corpus whose true spans and distractors are known)."""
    found = [s for s in sorted(truth) if rng.random() < recall]
    for d in sorted(distractors):
        if rng.random() < false_alarm_rate and not any(d.overlaps(s) for s in (*truth, *found)):
            found.append(d)
    return tuple(sorted(found))
