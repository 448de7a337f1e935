"""Sampling plans and overlap assignment: pure, seeded, reproducible (no Django here).

A plan picks *items* (messages) and gives each to ``k`` distinct annotators, balanced across
annotators. The same inputs and seed always give the same assignment, so a plan can be shown,
re-run and audited. In ``randomized`` visibility mode the unit of randomization is
(annotator, dialogue): every message of one dialogue that one annotator gets has one condition, so
nobody labels a message blind after seeing the model's suggestions on its neighbours.

Each plan also knows every item's *inclusion probability* under its design (1 for flagged items,
the audit share for audit items, n/N for a dialogue sample), so scores can weight items by its
inverse (Horvitz–Thompson) instead of overstating recall on an audit sample.

The ``uncertain`` strategy is uncertainty sampling (as in Prodigy's teach recipes): the messages
whose model sat nearest its decision thresholds teach it most per label. Ranking by the model's
own scores is a deliberate bias, so it comes with an audit sample of unflagged messages drawn at
random with recorded weights, and the chosen items are queued in dialogue order, never by score.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

FLAGGED = "flagged"
FLAGGED_AUDIT = "flagged_audit"
DIALOGUES = "dialogues"
UNCERTAIN = "uncertain"
STRATEGIES = (FLAGGED, FLAGGED_AUDIT, DIALOGUES, UNCERTAIN)

BLIND = "blind"
AWARE = "aware"
RANDOMIZED = "randomized"

# The unit of randomization in randomized mode, recorded on every plan. Plans made before it was
# recorded randomized each (annotator, item) pair on its own ("item").
UNIT_CLUSTER = "annotator_dialogue"
UNIT_ITEM = "item"
_MAX_ENUMERATED = 10  # annotators of one dialogue whose conditions are chosen jointly


class PlanError(ValueError):
    """A sampling plan that cannot be carried out as asked."""


@dataclass(frozen=True, slots=True, order=True)
class Item:
    """One message that can be assigned, in dialogue order (the sort order).

    ``margin``: how near the model came to another call on it (smaller: less sure; None: not
    scored). ``audit``: set by :func:`select_items` on items it drew into an audit sample.
    """

    dialogue_id: int
    position: int
    message_id: int
    flagged: bool = field(default=False, compare=False)
    margin: float | None = field(default=None, compare=False)
    audit: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class Pair:
    item: Item
    annotator: Hashable
    condition: str


@dataclass(slots=True)
class PlanResult:
    pairs: list[Pair]
    summary: dict
    inclusion: dict[int, float] = field(default_factory=dict)  # message id -> P(sampled)


def select_items(
    items: Iterable[Item],
    *,
    strategy: str,
    seed: int,
    audit_rate: float = 0.0,
    n_dialogues: int = 0,
    budget: int = 0,
    audit_share: float = 0.0,
    skip: Collection[int] = (),
) -> tuple[list[Item], dict]:
    """The items a plan covers, in dialogue order, and the figures that describe the sample.

    - ``flagged``: every item any chosen run flagged;
    - ``flagged_audit``: those plus ``round(audit_rate * unflagged)`` unflagged items drawn at
      random, so misses are found and recall can be estimated (weight audit items by 1/rate);
    - ``dialogues``: every message of ``n_dialogues`` dialogues drawn at random;
    - ``uncertain``: ``budget`` items, of which ``round(audit_share * budget)`` are an audit
      sample of unflagged items and the rest the scored items of smallest ``margin`` (see
      :func:`_select_uncertain`); ``skip`` (message ids already assigned) is left out of the ranking.
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
    elif strategy == UNCERTAIN:
        selected = _select_uncertain(pool, rng, summary, budget=budget, audit_share=audit_share, skip=skip)
    else:
        selected = list(flagged)
        summary.update(flagged=len(flagged), unflagged_pool=len(unflagged))
        if strategy == FLAGGED_AUDIT:
            if not 0 < audit_rate <= 1:
                raise PlanError("The audit rate must be above 0 and at most 1 (e.g. 0.05 for 5%).")
            n_audit = round(audit_rate * len(unflagged))
            audit = [replace(it, audit=True) for it in rng.sample(unflagged, n_audit)]
            selected = sorted(selected + audit)
            summary.update(audit_rate=audit_rate, audit_sampled=n_audit)
    summary["items"] = len(selected)
    return selected, summary


def _select_uncertain(pool: list[Item], rng: random.Random, summary: dict, *, budget: int,
                      audit_share: float, skip: Collection[int]) -> list[Item]:
    """The ``uncertain`` sample: the least-sure scored items, plus an audit of unflagged ones.

    Scored items not in ``skip`` are ranked by margin (ties in a seeded random order) and the
    first ``budget - n_audit`` taken: given the model's scores they are taken with certainty
    (inclusion probability 1). The audit draws ``n_audit`` items uniformly from the unflagged
    items the ranking did not take, so each has probability ``n_audit / audit_pool`` — the
    weight that lets misses in the rest of the corpus be estimated. Flagged items outside the
    ranking are not sampled at all: pair this plan with a flagged one to estimate precision.
    ``summary`` gets the figures that say what was chosen and why.
    """
    if budget < 1:
        raise PlanError("Give the number of messages to plan (the budget, at least 1).")
    if not 0 <= audit_share < 1:
        raise PlanError("The audit share must be at least 0 and below 1 (e.g. 0.2 for a fifth of the budget).")
    skip = set(skip)
    scored = [it for it in pool if it.margin is not None]
    if not scored:
        raise PlanError("No message has an uncertainty score: run the tagger over the project and choose that run.")
    candidates = [it for it in scored if it.message_id not in skip]
    n_audit = round(audit_share * budget)
    ranked = sorted(candidates, key=lambda it: (it.margin, rng.random()))
    top = ranked[:budget - n_audit]
    taken = {it.message_id for it in top}
    audit_pool = [it for it in pool if not it.flagged and it.message_id not in taken]
    n_audit = min(n_audit, len(audit_pool))
    audit = [replace(it, audit=True) for it in rng.sample(audit_pool, n_audit)]
    summary.update(
        budget=budget, audit_share=audit_share, flagged=sum(it.flagged for it in pool),
        unflagged_pool=sum(not it.flagged for it in pool), scored=len(scored),
        skipped_assigned=len(scored) - len(candidates), uncertain=len(top),
        uncertain_flagged=sum(it.flagged for it in top),
        margin_max=round(top[-1].margin, 4) if top else None,
        margin_next=round(ranked[len(top)].margin, 4) if len(ranked) > len(top) else None,
        audit_pool=len(audit_pool), audit_sampled=n_audit,
    )
    return sorted(top + audit)


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


def inclusion_probabilities(selected: Iterable[Item], summary: Mapping) -> dict[int, float]:
    """Each selected item's probability of being selected under the plan's design.

    Flagged items (and the least-sure items of an ``uncertain`` plan) are taken with certainty
    (1); audit items with the realised audit share ``audit_sampled / audit_pool`` (the rate, after
    rounding to whole items; the pool is every unflagged item, less the least-sure ones in an
    ``uncertain`` plan); every item of a dialogue sample with ``dialogues / pool_dialogues``.
    Weight an item by ``1 / p``.
    """
    strategy = summary.get("strategy")
    pool = summary.get("audit_pool", summary.get("unflagged_pool"))
    audit = summary.get("audit_sampled", 0) / pool if pool else 1.0
    share = (summary["dialogues"] / summary["pool_dialogues"]) if summary.get("pool_dialogues") else 1.0
    out: dict[int, float] = {}
    for it in selected:
        if strategy == DIALOGUES:
            out[it.message_id] = share
        elif it.audit:
            out[it.message_id] = audit
        else:
            out[it.message_id] = 1.0
    return out


def cross_condition_exposure(rows: Iterable[tuple[Hashable, Hashable, str]]) -> dict[str, int]:
    """How far the blind condition is contaminated: ``rows`` are ``(annotator, dialogue, condition)``
    per labelled item. ``exposed`` counts blind items whose annotator has aware items in the same
    dialogue (and so may have seen the model's call on a name the blind item repeats);
    ``mixed_clusters`` counts (annotator, dialogue) pairs with both conditions."""
    per: dict[tuple[Hashable, Hashable], dict[str, int]] = defaultdict(lambda: {BLIND: 0, AWARE: 0})
    for annotator, dialogue, condition in rows:
        if condition in (BLIND, AWARE):
            per[(annotator, dialogue)][condition] += 1
    mixed = [c for c in per.values() if c[BLIND] and c[AWARE]]
    return {
        "blind": sum(c[BLIND] for c in per.values()),
        "exposed": sum(c[BLIND] for c in mixed),
        "mixed_clusters": len(mixed),
        "clusters": len(per),
    }


def assign_conditions(
    pairs: Sequence[tuple[Item, Hashable]],
    *,
    mode: str,
    seed: int,
    fixed: Mapping[tuple[Hashable, Hashable], str] | None = None,
) -> list[Pair]:
    """Blind or aware per pair: fixed by the project's mode, or in randomized mode one condition
    per (annotator, dialogue), chosen at random and balanced.

    ``fixed`` maps (annotator, dialogue id) to the condition an earlier plan gave it, which stays.
    Dialogues are visited in a seeded random order; for each, the conditions of its annotators are
    chosen jointly to give as many items as possible one blind and one aware annotator (the
    circularity check needs both) while keeping each annotator's blind and aware item counts
    close; ties are broken at random.
    """
    if mode in (BLIND, AWARE):
        return [Pair(item, a, mode) for item, a in pairs]
    if mode != RANDOMIZED:
        raise PlanError(f"Unknown visibility mode {mode!r}.")
    rng = random.Random(f"conditions:{seed}")
    fixed = dict(fixed or {})
    size: dict[tuple[Hashable, Hashable], int] = defaultdict(int)
    who: dict[Hashable, dict[int, list[Hashable]]] = defaultdict(lambda: defaultdict(list))
    for item, a in pairs:
        size[(a, item.dialogue_id)] += 1
        who[item.dialogue_id][item.message_id].append(a)
    balance: dict[Hashable, int] = defaultdict(int)  # aware items − blind items, this plan
    for (a, _d), n in size.items():
        if (a, _d) in fixed:
            balance[a] += n if fixed[(a, _d)] == AWARE else -n
    chosen: dict[tuple[Hashable, Hashable], str] = {}
    dialogues = sorted(who, key=repr)
    rng.shuffle(dialogues)
    for d in dialogues:
        people = sorted({a for group in who[d].values() for a in group}, key=repr)
        free = [a for a in people if (a, d) not in fixed]
        if not free:
            continue
        if len(free) > _MAX_ENUMERATED:  # too many to enumerate: the most aware-heavy go blind
            order = sorted(free, key=lambda a: (balance[a], rng.random()))
            half = len(order) // 2 + (rng.random() < 0.5 if len(order) % 2 else 0)
            options = [tuple(AWARE if a in order[:half] else BLIND for a in free)]
        else:
            options = list(itertools.product((BLIND, AWARE), repeat=len(free)))
        best, best_key = options[0], None
        for option in options:
            cond = {a: fixed[(a, d)] for a in people if (a, d) in fixed}
            cond.update(zip(free, option, strict=True))
            paired = sum(len({cond[a] for a in group}) == 2 for group in who[d].values())
            imbalance = sum(abs(balance[a] + (size[(a, d)] if c == AWARE else -size[(a, d)]))
                            for a, c in zip(free, option, strict=True))
            key = (2 * paired - imbalance, rng.random())
            if best_key is None or key > best_key:
                best, best_key = option, key
        for a, c in zip(free, best, strict=True):
            chosen[(a, d)] = c
            balance[a] += size[(a, d)] if c == AWARE else -size[(a, d)]
    chosen.update({k: v for k, v in fixed.items() if k in size})
    return [Pair(item, a, chosen[(a, item.dialogue_id)]) for item, a in pairs]


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
    budget: int = 0,
    audit_share: float = 0.0,
    existing: Mapping[int, Iterable[Hashable]] | None = None,
    load: Mapping[Hashable, int] | None = None,
    fixed: Mapping[tuple[Hashable, Hashable], str] | None = None,
) -> PlanResult:
    """Select, distribute and set conditions in one reproducible step.

    ``fixed`` maps (annotator, dialogue id) to the condition earlier plans gave it. An
    ``uncertain`` plan ranks only items nobody has yet (``existing``), so the next plan takes the
    next least-sure items instead of finding its choice already covered.
    """
    selected, summary = select_items(
        items, strategy=strategy, seed=seed, audit_rate=audit_rate, n_dialogues=n_dialogues,
        budget=budget, audit_share=audit_share, skip=[m for m, who in (existing or {}).items() if who],
    )
    pairs, dist = distribute(selected, annotators, k=k, seed=seed, existing=existing, load=load)
    with_conditions = assign_conditions(pairs, mode=mode, seed=seed, fixed=fixed)
    per_annotator: dict[str, dict[str, int]] = {}
    for p in with_conditions:
        row = per_annotator.setdefault(str(p.annotator), {"items": 0, BLIND: 0, AWARE: 0})
        row["items"] += 1
        row[p.condition] += 1
    summary.update(dist, mode=mode, seed=seed, per_annotator=per_annotator)
    inclusion = inclusion_probabilities(selected, summary)
    if summary["strategy"] in (FLAGGED_AUDIT, UNCERTAIN):
        pool = summary.get("audit_pool", summary["unflagged_pool"])
        summary["audit_inclusion_probability"] = summary["audit_sampled"] / pool if pool else None
    if mode == RANDOMIZED:
        summary["condition_unit"] = UNIT_CLUSTER
        rows = [(p.annotator, p.item.dialogue_id, p.condition) for p in with_conditions]
        rows += [(a, d, c) for (a, d), c in (fixed or {}).items()]
        summary["exposure"] = cross_condition_exposure(rows)
        conds: dict[int, set[str]] = defaultdict(set)
        for p in with_conditions:
            conds[p.item.message_id].add(p.condition)
        summary["paired_items"] = sum(len(c) == 2 for c in conds.values())
    return PlanResult(pairs=with_conditions, summary=summary, inclusion=inclusion)


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
