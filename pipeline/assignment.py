"""Sampling plans and overlap assignment: pure, seeded, reproducible (no Django here).

A plan picks *items* (messages) and gives each to ``k`` distinct annotators, balanced across
annotators. The same inputs and seed always give the same assignment, so a plan can be shown,
re-run and audited. In ``randomized`` visibility mode each (annotator, item) pair is blind or
aware at random, balanced per annotator.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

FLAGGED = "flagged"
FLAGGED_AUDIT = "flagged_audit"
DIALOGUES = "dialogues"
STRATEGIES = (FLAGGED, FLAGGED_AUDIT, DIALOGUES)

BLIND = "blind"
AWARE = "aware"
RANDOMIZED = "randomized"


class PlanError(ValueError):
    """A sampling plan that cannot be carried out as asked."""


@dataclass(frozen=True, slots=True, order=True)
class Item:
    """One message that can be assigned, in dialogue order (the sort order)."""

    dialogue_id: int
    position: int
    message_id: int
    flagged: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class Pair:
    item: Item
    annotator: Hashable
    condition: str


@dataclass(slots=True)
class PlanResult:
    pairs: list[Pair]
    summary: dict


def select_items(
    items: Iterable[Item],
    *,
    strategy: str,
    seed: int,
    audit_rate: float = 0.0,
    n_dialogues: int = 0,
) -> tuple[list[Item], dict]:
    """The items a plan covers, in dialogue order, and the figures that describe the sample.

    - ``flagged``: every item any chosen run flagged;
    - ``flagged_audit``: those plus ``round(audit_rate * unflagged)`` unflagged items drawn at
      random, so misses are found and recall can be estimated (weight audit items by 1/rate);
    - ``dialogues``: every message of ``n_dialogues`` dialogues drawn at random.
    """
    if strategy not in STRATEGIES:
        raise PlanError(f"Unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    rng = random.Random(f"select:{seed}")
    pool = sorted(items)
    flagged = [it for it in pool if it.flagged]
    unflagged = [it for it in pool if not it.flagged]
    summary: dict = {"strategy": strategy, "pool_items": len(pool)}
    if strategy == DIALOGUES:
        dialogues = sorted({it.dialogue_id for it in pool})
        if n_dialogues < 1:
            raise PlanError("Give the number of dialogues to sample (at least 1).")
        if n_dialogues > len(dialogues):
            raise PlanError(f"Only {len(dialogues)} dialogues are available, {n_dialogues} were asked for.")
        chosen = set(rng.sample(dialogues, n_dialogues))
        selected = [it for it in pool if it.dialogue_id in chosen]
        summary.update(pool_dialogues=len(dialogues), dialogues=len(chosen), flagged=sum(it.flagged for it in selected))
    else:
        selected = list(flagged)
        summary.update(flagged=len(flagged), unflagged_pool=len(unflagged))
        if strategy == FLAGGED_AUDIT:
            if not 0 < audit_rate <= 1:
                raise PlanError("The audit rate must be above 0 and at most 1 (e.g. 0.05 for 5%).")
            n_audit = round(audit_rate * len(unflagged))
            audit = rng.sample(unflagged, n_audit)
            selected = sorted(selected + audit)
            summary.update(audit_rate=audit_rate, audit_sampled=n_audit)
    summary["items"] = len(selected)
    return selected, summary


def distribute(
    items: Sequence[Item],
    annotators: Sequence[Hashable],
    *,
    k: int,
    seed: int,
    existing: Mapping[int, Iterable[Hashable]] | None = None,
    load: Mapping[Hashable, int] | None = None,
) -> tuple[list[tuple[Item, Hashable]], dict]:
    """Give each item to ``k`` distinct annotators, least-loaded first (ties broken at random).

    ``existing`` maps a message id to annotators who already have it: they are never given it
    again and count towards its ``k``. ``load`` is each annotator's current queue size, so a
    second plan keeps queues balanced. Within one plan queue sizes differ by at most one when
    every annotator is eligible for every item.
    """
    if k < 1:
        raise PlanError("Each item needs at least one annotator (k >= 1).")
    annotators = list(dict.fromkeys(annotators))
    if not annotators:
        raise PlanError("Choose at least one annotator.")
    existing = existing or {}
    rng = random.Random(f"distribute:{seed}")
    current = {a: int((load or {}).get(a, 0)) for a in annotators}
    pairs: list[tuple[Item, Hashable]] = []
    short = 0
    already_full = 0
    for item in items:
        have = set(existing.get(item.message_id, ()))
        need = k - len(have)
        if need <= 0:
            already_full += 1
            continue
        eligible = [a for a in annotators if a not in have]
        eligible.sort(key=lambda a: (current[a], rng.random()))
        chosen = eligible[:need]
        if len(chosen) < need:
            short += 1
        for a in chosen:
            current[a] += 1
            pairs.append((item, a))
    summary = {
        "k": k,
        "annotators": len(annotators),
        "assignments": len(pairs),
        "items_short_of_k": short,
        "items_already_covered": already_full,
    }
    return pairs, summary


def assign_conditions(
    pairs: Sequence[tuple[Item, Hashable]], *, mode: str, seed: int
) -> list[Pair]:
    """Blind or aware per pair: fixed by the project's mode, or balanced at random per annotator."""
    if mode in (BLIND, AWARE):
        return [Pair(item, a, mode) for item, a in pairs]
    if mode != RANDOMIZED:
        raise PlanError(f"Unknown visibility mode {mode!r}.")
    rng = random.Random(f"conditions:{seed}")
    by_annotator: dict[Hashable, list[int]] = defaultdict(list)
    for i, (_, a) in enumerate(pairs):
        by_annotator[a].append(i)
    conditions = [BLIND] * len(pairs)
    for a in sorted(by_annotator, key=repr):
        idx = by_annotator[a]
        half = len(idx) // 2 + (rng.random() < 0.5 if len(idx) % 2 else 0)
        shuffled = list(idx)
        rng.shuffle(shuffled)
        for i in shuffled[:half]:
            conditions[i] = AWARE
    return [Pair(item, a, c) for (item, a), c in zip(pairs, conditions, strict=True)]


def make_plan(
    items: Iterable[Item],
    annotators: Sequence[Hashable],
    *,
    strategy: str,
    k: int,
    seed: int,
    mode: str,
    audit_rate: float = 0.0,
    n_dialogues: int = 0,
    existing: Mapping[int, Iterable[Hashable]] | None = None,
    load: Mapping[Hashable, int] | None = None,
) -> PlanResult:
    """Select, distribute and set conditions in one reproducible step."""
    selected, summary = select_items(
        items, strategy=strategy, seed=seed, audit_rate=audit_rate, n_dialogues=n_dialogues
    )
    pairs, dist = distribute(selected, annotators, k=k, seed=seed, existing=existing, load=load)
    with_conditions = assign_conditions(pairs, mode=mode, seed=seed)
    per_annotator: dict[str, dict[str, int]] = {}
    for p in with_conditions:
        row = per_annotator.setdefault(str(p.annotator), {"items": 0, BLIND: 0, AWARE: 0})
        row["items"] += 1
        row[p.condition] += 1
    summary.update(dist, mode=mode, seed=seed, per_annotator=per_annotator)
    return PlanResult(pairs=with_conditions, summary=summary)


def rebalance(
    message_ids: Sequence[int],
    annotators: Sequence[Hashable],
    *,
    seed: int,
    existing: Mapping[int, Iterable[Hashable]],
    load: Mapping[Hashable, int] | None = None,
) -> dict[int, Hashable | None]:
    """Reassign items (message ids) to one annotator each, least-loaded first, never to someone
    who already has the item. ``None`` when nobody is eligible."""
    rng = random.Random(f"rebalance:{seed}")
    current = {a: int((load or {}).get(a, 0)) for a in annotators}
    out: dict[int, Hashable | None] = {}
    for mid in message_ids:
        have = set(existing.get(mid, ()))
        eligible = sorted((a for a in annotators if a not in have), key=lambda a: (current[a], rng.random()))
        if eligible:
            current[eligible[0]] += 1
            out[mid] = eligible[0]
        else:
            out[mid] = None
    return out
