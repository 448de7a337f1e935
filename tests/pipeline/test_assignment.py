"""Sampling plans and overlap assignment (pure: no database)."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline import assignment as algo


def corpus(n_dialogues=20, per=10, flag_every=3):
    return [algo.Item(dialogue_id=d, position=p, message_id=d * 100 + p, flagged=(d * per + p) % flag_every == 0)
            for d in range(n_dialogues) for p in range(per)]


def test_flagged_takes_every_flagged_item_in_dialogue_order():
    items = corpus()
    selected, summary = algo.select_items(reversed(items), strategy="flagged", seed=1)
    assert selected == sorted(it for it in items if it.flagged)
    assert summary["flagged"] == len(selected) and summary["unflagged_pool"] == len(items) - len(selected)


def test_audit_sample_is_the_stated_share_and_reproducible():
    items = corpus()
    unflagged = sum(not it.flagged for it in items)
    a, summary = algo.select_items(items, strategy="flagged_audit", seed=3, audit_rate=0.1)
    b, _ = algo.select_items(items, strategy="flagged_audit", seed=3, audit_rate=0.1)
    c, _ = algo.select_items(items, strategy="flagged_audit", seed=4, audit_rate=0.1)
    assert a == b and a != c
    assert summary["audit_sampled"] == round(0.1 * unflagged) == sum(not it.flagged for it in a)
    assert a == sorted(a)


def test_dialogue_sample_takes_whole_dialogues():
    items = corpus()
    selected, summary = algo.select_items(items, strategy="dialogues", seed=2, n_dialogues=5)
    assert summary["dialogues"] == 5 and len(selected) == 50
    assert all(c == 10 for c in Counter(it.dialogue_id for it in selected).values())


@pytest.mark.parametrize("kwargs,match", [
    ({"strategy": "nope"}, "Unknown strategy"),
    ({"strategy": "dialogues", "n_dialogues": 0}, "number of dialogues"),
    ({"strategy": "dialogues", "n_dialogues": 99}, "Only 20"),
    ({"strategy": "flagged_audit", "audit_rate": 0}, "audit rate"),
    ({"strategy": "flagged_audit", "audit_rate": 1.5}, "audit rate"),
])
def test_bad_plans_say_why(kwargs, match):
    with pytest.raises(algo.PlanError, match=match):
        algo.select_items(corpus(), seed=1, **kwargs)


@pytest.mark.parametrize("k,people", [(1, 3), (2, 3), (2, 5), (3, 4)])
def test_each_item_goes_to_k_distinct_annotators_balanced(k, people):
    items = corpus()
    annotators = [f"a{i}" for i in range(people)]
    pairs, summary = algo.distribute(items, annotators, k=k, seed=9)
    per_item = Counter(it.message_id for it, _ in pairs)
    assert set(per_item.values()) == {k}
    assert all(len({a for it2, a in pairs if it2 == it}) == k for it in items[:30])
    load = Counter(a for _, a in pairs)
    assert max(load.values()) - min(load.values()) <= 1
    assert summary["assignments"] == k * len(items) and summary["items_short_of_k"] == 0


def test_distribution_is_reproducible_and_depends_on_the_seed():
    items, people = corpus(), ["x", "y", "z"]
    assert algo.distribute(items, people, k=2, seed=1) == algo.distribute(items, people, k=2, seed=1)
    assert algo.distribute(items, people, k=2, seed=1)[0] != algo.distribute(items, people, k=2, seed=2)[0]


def test_existing_annotators_count_and_are_never_repeated():
    items = corpus(2, 5)
    existing = {items[0].message_id: ["x"], items[1].message_id: ["x", "y"]}
    pairs, summary = algo.distribute(items, ["x", "y", "z"], k=2, seed=1, existing=existing)
    got = {it.message_id: [] for it in items}
    for it, a in pairs:
        got[it.message_id].append(a)
    assert "x" not in got[items[0].message_id] and len(got[items[0].message_id]) == 1
    assert got[items[1].message_id] == [] and summary["items_already_covered"] == 1


def test_too_few_annotators_is_reported():
    pairs, summary = algo.distribute(corpus(1, 4), ["x"], k=2, seed=1)
    assert len(pairs) == 4 and summary["items_short_of_k"] == 4


def test_load_from_earlier_plans_is_balanced_out():
    pairs, _ = algo.distribute(corpus(1, 10), ["x", "y"], k=1, seed=1, load={"x": 6})
    load = Counter(a for _, a in pairs)
    assert load == {"y": 8, "x": 2}


def test_randomized_conditions_are_balanced_per_annotator():
    items = corpus()
    pairs, _ = algo.distribute(items, ["x", "y", "z"], k=2, seed=5)
    result = algo.assign_conditions(pairs, mode="randomized", seed=5)
    for who in "xyz":
        c = Counter(p.condition for p in result if p.annotator == who)
        # whole dialogues are the unit: balanced to within one dialogue's share of items
        largest = max(Counter(p.item.dialogue_id for p in result if p.annotator == who).values())
        assert abs(c["blind"] - c["aware"]) <= largest
    assert result == algo.assign_conditions(pairs, mode="randomized", seed=5)
    assert {p.condition for p in algo.assign_conditions(pairs, mode="aware", seed=5)} == {"aware"}


def test_make_plan_summarises_per_annotator():
    result = algo.make_plan(corpus(), ["x", "y"], strategy="dialogues", n_dialogues=3, k=2, seed=1, mode="randomized")
    assert result.summary["per_annotator"]["x"]["items"] == 30
    assert result.summary["seed"] == 1 and result.summary["mode"] == "randomized"


def test_rebalance_never_gives_an_item_to_someone_who_has_it():
    out = algo.rebalance([1, 2, 3], ["y", "z"], seed=0, existing={1: ["y"], 2: ["y", "z"]})
    assert out[1] == "z" and out[2] is None and out[3] in ("y", "z")


# --- the unit of randomization is (annotator, dialogue) ----------------------------------------


def demo_like_plan(seed=7):
    """Like the demo: whole dialogues of ~12 messages, 3 annotators, 2 per message."""
    items = [algo.Item(dialogue_id=d, position=p, message_id=d * 100 + p)
             for d in range(40) for p in range(8 + d % 9)]
    pairs, _ = algo.distribute(items, ["a1", "a2", "a3"], k=2, seed=seed)
    return pairs


def per_item_rule(pairs, seed):
    """The old rule, for comparison: blind or aware per (annotator, item), balanced per annotator."""
    import random

    rng = random.Random(seed)
    out = []
    for who in sorted({a for _, a in pairs}):
        mine = [(it, a) for it, a in pairs if a == who]
        conds = (["blind", "aware"] * len(mine))[: len(mine)]
        rng.shuffle(conds)
        out += [algo.Pair(it, a, c) for (it, a), c in zip(mine, conds, strict=True)]
    return out


def test_exposure_is_measured_and_the_per_item_rule_had_it():
    pairs = demo_like_plan()
    old = algo.cross_condition_exposure((p.annotator, p.item.dialogue_id, p.condition) for p in per_item_rule(pairs, 1))
    assert old["blind"] > 0 and old["exposed"] > 0.3 * old["blind"]
    new = algo.assign_conditions(pairs, mode="randomized", seed=1)
    exp = algo.cross_condition_exposure((p.annotator, p.item.dialogue_id, p.condition) for p in new)
    assert exp["blind"] > 0 and exp["exposed"] == 0 and exp["mixed_clusters"] == 0


def test_one_condition_per_annotator_and_dialogue_balanced_and_paired():
    pairs = demo_like_plan()
    new = algo.assign_conditions(pairs, mode="randomized", seed=3)
    assert new == algo.assign_conditions(pairs, mode="randomized", seed=3)
    assert new != algo.assign_conditions(pairs, mode="randomized", seed=4)
    cluster: dict = {}
    for p in new:
        assert cluster.setdefault((p.annotator, p.item.dialogue_id), p.condition) == p.condition
    for who in ("a1", "a2", "a3"):
        c = Counter(cond for (a, _), cond in cluster.items() if a == who)
        assert abs(c["blind"] - c["aware"]) <= 2, c  # dialogues, per annotator
        items = Counter(p.condition for p in new if p.annotator == who)
        assert abs(items["blind"] - items["aware"]) <= 0.1 * sum(items.values()), items
    # every dialogue has both conditions, and most items get a blind and an aware annotator
    by_dialogue: dict = {}
    for (_a, d), cond in cluster.items():
        by_dialogue.setdefault(d, set()).add(cond)
    assert all(v == {"blind", "aware"} for v in by_dialogue.values())
    per_item: dict = {}
    for p in new:
        per_item.setdefault(p.item.message_id, set()).add(p.condition)
    paired = sum(v == {"blind", "aware"} for v in per_item.values())
    assert paired >= 0.55 * len(per_item)


def test_conditions_from_earlier_plans_are_kept():
    pairs = demo_like_plan()
    fixed = {("a1", 0): "aware", ("a2", 0): "aware", ("a3", 5): "blind"}
    new = algo.assign_conditions(pairs, mode="randomized", seed=3, fixed=fixed)
    for p in new:
        if (p.annotator, p.item.dialogue_id) in fixed:
            assert p.condition == fixed[(p.annotator, p.item.dialogue_id)]


def test_make_plan_records_the_unit_and_the_exposure():
    result = algo.make_plan(corpus(), ["x", "y", "z"], strategy="dialogues", n_dialogues=6, k=2, seed=1,
                            mode="randomized")
    assert result.summary["condition_unit"] == "annotator_dialogue"
    assert result.summary["exposure"]["exposed"] == 0 and result.summary["exposure"]["blind"] > 0
    assert result.summary["paired_items"] > 0


# --- inclusion probabilities of the sampling design ----------------------------------------------


def test_inclusion_probability_of_each_design():
    items = corpus()
    unflagged = sum(not it.flagged for it in items)
    result = algo.make_plan(items, ["x", "y"], strategy="flagged_audit", audit_rate=0.1, k=1, seed=2,
                            mode="blind")
    n_audit = result.summary["audit_sampled"]
    for p in result.pairs:
        want = 1.0 if p.item.flagged else n_audit / unflagged
        assert result.inclusion[p.item.message_id] == pytest.approx(want)
    assert result.summary["audit_inclusion_probability"] == pytest.approx(n_audit / unflagged)
    sample = algo.make_plan(items, ["x"], strategy="dialogues", n_dialogues=5, k=1, seed=2, mode="blind")
    assert set(sample.inclusion.values()) == {5 / 20}
    flagged = algo.make_plan(items, ["x"], strategy="flagged", k=1, seed=2, mode="blind")
    assert set(flagged.inclusion.values()) == {1.0}


# --- where the model is least sure ---------------------------------------------------------------


def scored(n_dialogues=20, per=10, flag_every=3):
    """The corpus with a margin per item, all distinct, unrelated to dialogue order."""
    return [algo.Item(it.dialogue_id, it.position, it.message_id, it.flagged, margin=((it.message_id * 37) % 211) / 422)
            for it in corpus(n_dialogues, per, flag_every)]


def test_uncertain_takes_the_smallest_margins_then_audits_unflagged():
    items = scored()
    selected, summary = algo.select_items(items, strategy="uncertain", seed=5, budget=30, audit_share=0.2)
    audit = [it for it in selected if it.audit]
    top = [it for it in selected if not it.audit]
    assert len(selected) == 30 and len(audit) == 6 and len(top) == 24
    assert {it.message_id for it in top} == {it.message_id for it in sorted(items, key=lambda i: i.margin)[:24]}
    assert all(not it.flagged for it in audit) and not {it.message_id for it in audit} & {it.message_id for it in top}
    assert selected == sorted(selected)  # queued in dialogue order, never by margin
    assert summary["uncertain"] == 24 and summary["audit_sampled"] == 6
    assert summary["audit_pool"] == sum(not it.flagged for it in items) - sum(not it.flagged for it in top)
    assert summary["margin_max"] == round(max(it.margin for it in top), 4) < summary["margin_next"]
    assert summary["uncertain_flagged"] == sum(it.flagged for it in top)


def test_uncertain_is_reproducible_from_the_seed_and_breaks_ties_at_random():
    items = [algo.Item(it.dialogue_id, it.position, it.message_id, it.flagged, margin=0.1) for it in corpus()]
    a, _ = algo.select_items(items, strategy="uncertain", seed=3, budget=20, audit_share=0.25)
    b, _ = algo.select_items(list(reversed(items)), strategy="uncertain", seed=3, budget=20, audit_share=0.25)
    c, _ = algo.select_items(items, strategy="uncertain", seed=4, budget=20, audit_share=0.25)
    ids = [[(it.message_id, it.audit) for it in s] for s in (a, b, c)]
    assert ids[0] == ids[1] and ids[0] != ids[2]
    assert a[:10] != sorted(items)[:10]  # equal margins: not simply the first messages


def test_uncertain_leaves_assigned_and_unscored_items_out_of_the_ranking():
    items = scored()
    best = sorted(items, key=lambda i: i.margin)
    items = [algo.Item(it.dialogue_id, it.position, it.message_id, it.flagged,
                       margin=None if it == best[1] else it.margin) for it in items]
    selected, summary = algo.select_items(items, strategy="uncertain", seed=1, budget=3, audit_share=0,
                                          skip=[best[0].message_id])
    assert [it.message_id for it in selected] == sorted(it.message_id for it in best[2:5])
    assert summary["skipped_assigned"] == 1 and summary["scored"] == len(items) - 1
    assert summary["audit_sampled"] == 0


def test_uncertain_inclusion_probabilities_follow_the_design():
    items = scored()
    result = algo.make_plan(items, ["x", "y"], strategy="uncertain", budget=40, audit_share=0.25, k=1, seed=2,
                            mode="blind")
    s = result.summary
    assert s["audit_inclusion_probability"] == pytest.approx(10 / s["audit_pool"])
    for p in result.pairs:
        want = 10 / s["audit_pool"] if p.item.audit else 1.0
        assert result.inclusion[p.item.message_id] == pytest.approx(want)
    assert sum(p.item.audit for p in result.pairs) == 10


def test_a_second_uncertain_plan_takes_the_next_least_sure():
    items = scored()
    first = algo.make_plan(items, ["x"], strategy="uncertain", budget=10, audit_share=0, k=1, seed=2, mode="blind")
    existing = {p.item.message_id: ["x"] for p in first.pairs}
    second = algo.make_plan(items, ["x"], strategy="uncertain", budget=10, audit_share=0, k=1, seed=2,
                            mode="blind", existing=existing)
    ranked = [it.message_id for it in sorted(items, key=lambda i: i.margin)]
    assert {p.item.message_id for p in second.pairs} == set(ranked[10:20])
    assert second.summary["items_already_covered"] == 0


@pytest.mark.parametrize("kwargs,match", [
    ({"budget": 0}, "budget"),
    ({"budget": 5, "audit_share": 1}, "audit share"),
    ({"budget": 5, "audit_share": -0.1}, "audit share"),
])
def test_bad_uncertain_plans_say_why(kwargs, match):
    with pytest.raises(algo.PlanError, match=match):
        algo.select_items(scored(), strategy="uncertain", seed=1, **kwargs)


def test_uncertain_without_scores_says_to_run_the_tagger():
    with pytest.raises(algo.PlanError, match="run the tagger"):
        algo.select_items(corpus(), strategy="uncertain", seed=1, budget=5)
