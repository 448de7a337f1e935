"""The model in the loop: what a retrain trains on, and whether its version replaces the active one.

A project's gold is split by dialogue with :func:`~pipeline.tagger.training.data.stable_dev_split` (a
seeded hash of each dialogue id, so a dialogue never changes side as gold grows). The dev side is
held out entirely: the new version never sees it, not even to stop early or tune thresholds
(``train_tagger`` splits its own tuning set off the training side), so the comparison with the
active version on it is fair to both. The training side is the gold-train dialogues plus
``GENERATED_PER_GOLD`` generated dialogues for each of them.

A retrain starts from the active version when there is one (a warm start,
:func:`warm_retraining_set`): it trains on the gold training dialogues that version did not
train on (``ModelInfo.train_ids``; those it only tuned on count as new), ``OLD_GOLD_PER_NEW``
old gold dialogues and ``GENERATED_REPLAY`` generated ones per gold dialogue (replayed so it does
not forget), with
``WARM_START``'s shorter schedule, and stops early on a tuning set of that gold held back from
its training (``tune``), never on the project's dev dialogues. A full retrain from the base model
(:func:`retraining_set`) stays available, and both are judged on the same dev split.

A new version becomes active only when :func:`decide` says so: free of
``store.activation_blockers`` and better than the active version by
:func:`pipeline.metrics.comparison.compare_versions` (paired-bootstrap F2 interval above zero, no
more numbers removed, no more numeric false positives). Everything here is pure: the app's
retrain job reads gold, calls these, and records the outcome.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.metrics.comparison import Comparison
from pipeline.tagger.training.config import RETRAIN_SYNTHETIC_SEED, TrainingError
from pipeline.tagger.training.data import split_by_dialogue, stable_dev_split
from pipeline.types import Dialogue, Span

# Generated dialogues added per gold training dialogue. Generated data has hit its ceiling (10x
# more of it lowered real classroom recall), so gold leads and generated data fills in
# the maths traps and rare identifiers a small gold set lacks. bench/ may tune this value.
GENERATED_PER_GOLD = 2
DEV_FRACTION = 0.2  # of the project's gold dialogues, held out to compare versions
DEV_SEED = 16  # the stable split's seed: changing it moves dialogues between train and dev
MIN_DEV_DIALOGUES = 1
MIN_TRAIN_DIALOGUES = 1

# A warm start's data and schedule (bench/retrain_bench.py --warm measures them against a full
# retrain on the same split). Old gold and generated dialogues are replayed beside the new gold
# so the version does not forget what it knew; the tuning set (gold held back from the warm
# run's training) is capped to keep each scoring short.
OLD_GOLD_PER_NEW = 0.5
GENERATED_REPLAY = 0.25  # generated dialogues per gold dialogue trained on
TUNE_FRACTION = 0.1
TUNE_SEED = 23
MAX_TUNE_DIALOGUES = 8
WARM_START: dict[str, Any] = {
    "epochs": 2, "lr": 1e-4, "patience": 2, "max_steps": 500, "eval_every": 125,
    "empty_window_share": 0.3,
}

Key = tuple[str, int]
Generate = Callable[[int, int], list[Dialogue]]  # (n, seed) -> generated dialogues

ACTIVATED = "activated"
NOT_BETTER = "not better"
BLOCKED = "blocked"


@dataclass(frozen=True)
class RetrainingSet:
    """The dialogues one retrain trains on and the project-gold dev set it is judged on."""

    train: list[Dialogue]
    dev: list[Dialogue]
    gold_train: int  # gold dialogues in ``train``
    generated: int  # generated dialogues in ``train``
    gold_messages: int  # messages of the whole gold set (the learning curve's x)
    # A warm start's: the gold held back from ``train`` to stop early on (None: a full retrain,
    # whose training splits its own), and how many of ``gold_train`` are new and old.
    tune: list[Dialogue] | None = None
    warm: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "gold_dialogues": self.gold_train + len(self.dev),
            "gold_messages": self.gold_messages,
            "gold_train_dialogues": self.gold_train,
            "dev_dialogues": len(self.dev),
            "dev_messages": sum(len(d.messages) for d in self.dev),
            "generated_dialogues": self.generated,
            **({"warm_start": self.warm} if self.tune is not None else {}),
        }


def gold_split(
    gold: Sequence[Dialogue], *, dev_fraction: float = DEV_FRACTION, seed: int = DEV_SEED
) -> tuple[list[Dialogue], list[Dialogue]]:
    """(train, dev) of a project's gold dialogues: the one split every gold-trained version uses
    (a retrain, and the app's plain training too), so no version is compared with another on
    dialogues it trained on."""
    return stable_dev_split([d for d in gold if d.messages], dev_fraction, seed)


def _generate(n: int, seed: int, policy: str) -> list[Dialogue]:
    from pipeline.synthetic import generate_corpus

    return generate_corpus(n, seed, policy=policy, id_prefix="synth")


def retraining_set(
    gold: Sequence[Dialogue],
    *,
    generated_per_gold: float = GENERATED_PER_GOLD,
    dev_fraction: float = DEV_FRACTION,
    seed: int = DEV_SEED,
    policy: str = "strict",
    synthetic_seed: int = RETRAIN_SYNTHETIC_SEED,
    generate: Generate | None = None,
) -> RetrainingSet:
    """Split the project's ``gold`` dialogues by dialogue into train and dev, and add
    ``generated_per_gold`` generated dialogues (``policy``'s labels) per gold training dialogue.

    Raises :class:`TrainingError` when the gold is too small to have both sides."""
    gold, train, dev = _checked_split(gold, generated_per_gold, dev_fraction, seed)
    n_generated = round(generated_per_gold * len(train))
    generated = (
        (generate or (lambda n, s: _generate(n, s, policy)))(n_generated, synthetic_seed)
        if n_generated
        else []
    )
    return RetrainingSet(
        train=[*train, *generated],
        dev=dev,
        gold_train=len(train),
        generated=len(generated),
        gold_messages=sum(len(d.messages) for d in gold),
    )


def _checked_split(
    gold: Sequence[Dialogue], generated_per_gold: float, dev_fraction: float, seed: int
) -> tuple[list[Dialogue], list[Dialogue], list[Dialogue]]:
    """``(gold, train, dev)``: the complete gold and its split, checked for a retrain."""
    if generated_per_gold < 0:
        raise TrainingError(f"generated_per_gold {generated_per_gold} must not be negative")
    gold = [d for d in gold if d.messages]
    ids = [d.id for d in gold]
    if len(set(ids)) != len(ids):
        raise TrainingError("gold dialogue ids must be unique")
    train, dev = gold_split(gold, dev_fraction=dev_fraction, seed=seed)
    if len(dev) < MIN_DEV_DIALOGUES or len(train) < MIN_TRAIN_DIALOGUES:
        raise TrainingError(
            f"not enough complete gold dialogues to retrain: {len(gold)} so far, {len(train)} for "
            f"training and {len(dev)} held out to compare versions; each side needs at least one "
            "(about 10 complete dialogues usually give both)"
        )
    return gold, train, dev


def new_and_old(train: Sequence[Dialogue], seen: Collection[str]) -> tuple[list[Dialogue], list[Dialogue]]:
    """The gold training dialogues a version has not seen (by id) and those it has."""
    return [d for d in train if d.id not in seen], [d for d in train if d.id in seen]


def warm_retraining_set(
    gold: Sequence[Dialogue],
    seen: Collection[str],
    *,
    parent: str = "",
    old_per_new: float = OLD_GOLD_PER_NEW,
    generated_per_gold: float = GENERATED_REPLAY,
    dev_fraction: float = DEV_FRACTION,
    seed: int = DEV_SEED,
    policy: str = "strict",
    synthetic_seed: int = RETRAIN_SYNTHETIC_SEED,
    generate: Generate | None = None,
) -> RetrainingSet:
    """A warm start's set from the project's ``gold``: the same dev split as
    :func:`retraining_set`; for training, every gold training dialogue whose id is not in
    ``seen`` (what ``parent``, the version warm-started from, trained on), a seeded
    sample of ``old_per_new`` seen ones per new one, and ``generated_per_gold`` generated
    dialogues per gold one; ``tune`` is a share of that gold held back from training to stop
    early on. Raises :class:`TrainingError` when there is no new gold to learn from."""
    if old_per_new < 0:
        raise TrainingError(f"old_per_new {old_per_new} must not be negative")
    gold, train, dev = _checked_split(gold, generated_per_gold, dev_fraction, seed)
    new, old = new_and_old(train, set(seen))
    if not new:
        raise TrainingError(
            f"no new gold since {parent or 'the active version'}: it trained on all {len(train)} gold "
            "training dialogues; adjudicate more, or retrain from the base model (retrain_tagger --full)"
        )
    old_sample = random.Random(seed).sample(sorted(old, key=lambda d: d.id),
                                            min(len(old), math.ceil(old_per_new * len(new))))
    fit, tune = split_by_dialogue([*new, *old_sample], TUNE_FRACTION, TUNE_SEED)
    fit, tune = fit + tune[MAX_TUNE_DIALOGUES:], tune[:MAX_TUNE_DIALOGUES]
    n_generated = round(generated_per_gold * len(fit))
    generated = (
        (generate or (lambda n, s: _generate(n, s, policy)))(n_generated, synthetic_seed)
        if n_generated else []
    )
    return RetrainingSet(
        train=[*fit, *generated], dev=dev, gold_train=len(fit) + len(tune), generated=len(generated),
        gold_messages=sum(len(d.messages) for d in gold), tune=tune,
        warm={"parent": parent, "new_gold_dialogues": len(new), "old_gold_dialogues": len(old_sample),
              "old_gold_seen": len(old), "tune_dialogues": len(tune)},
    )


def detector_predictions(detector: Any, dialogues: Sequence[Dialogue]) -> dict[Key, list[Span]]:
    """``(dialogue id, message index) -> spans`` of a detector (as runs use it) on ``dialogues``."""
    out: dict[Key, list[Span]] = {}
    for d, detections in zip(dialogues, detector.detect_many(dialogues), strict=True):
        for det in detections:
            out[(d.id, det.index)] = list(det.spans)
    return out


def decide(comparison: Comparison | None, blockers: Sequence[str]) -> tuple[str, str]:
    """``(decision, reason)``: ``activated`` only for a version with no blockers that the
    comparison found better; ``blocked`` (with its blockers) or ``not better`` (with the
    comparison's reasons) otherwise."""
    if blockers:
        return BLOCKED, "; ".join(blockers)
    if comparison is None:
        return NOT_BETTER, "no comparison on the project's dev dialogues"
    reason = "; ".join(comparison.reasons)
    return (ACTIVATED, reason) if comparison.better else (NOT_BETTER, reason)


def learning_point(info_activation: Mapping[str, Any]) -> dict[str, Any] | None:
    """One version's point on the learning curve from its ``activation`` entry: gold messages,
    dev F2 and name recall on the project's dev split, and the decision; ``None`` if unscored."""
    comparison = info_activation.get("comparison") or {}
    new = comparison.get("new") or {}
    size = (info_activation.get("data") or {}).get("gold_messages")
    if size is None or new.get("f2") is None:
        return None
    return {
        "gold_messages": size,
        "f2": new["f2"],
        "name_recall": new.get("name_recall"),
        "decision": info_activation.get("decision"),
    }
