"""The circularity report on hand-made items and on a simulated study with known bias."""

from __future__ import annotations

import pytest

from pipeline.metrics.agreement import AnnotatedItem, AnnotatorLabels
from pipeline.metrics.circularity import (
    CircularityItem,
    circularity_report,
    condition_gold,
    vote_gold,
    with_predictions,
)
from pipeline.simulate import SimulatedAnnotator, StudyConfig, simulate_study
from pipeline.types import Span

MAYA = Span(0, 4, "NAME")
ALEX = Span(9, 13, "NAME")
TEXT = "Maya and Alex"


def item(d, blind, aware, seconds=None):
    return AnnotatedItem(d, 0, TEXT, annotations={
        "b": AnnotatorLabels(tuple(blind), "blind", seconds),
        "a": AnnotatorLabels(tuple(aware), "aware", seconds),
    })


def test_hand_made_inflation():
    # The model predicts MAYA (right) and ALEX (wrong). Blind annotators mark MAYA only; aware
    # annotators accept both suggestions.
    items = [item(f"d{i}", [MAYA], [MAYA, ALEX], seconds=10) for i in range(5)]
    preds = {it.key: (MAYA, ALEX) for it in items}
    rep = circularity_report(with_predictions(items, preds), n_boot=50, run="rules@1")
    assert rep.n_paired_items == 5
    assert rep.blind.precision.value == pytest.approx(0.5)
    assert rep.blind.recall.value == pytest.approx(1.0)
    assert rep.blind.f1.value == pytest.approx(2 / 3)
    assert rep.aware.f1.value == pytest.approx(1.0)
    assert rep.delta_f1.value == pytest.approx(1 / 3)
    assert rep.flagged and rep.significant
    assert rep.accept_without_edit == {"blind": 0.0, "aware": 1.0}
    assert rep.median_seconds == {"blind": 10.0, "aware": 10.0}
    assert "rules@1" in rep.summary and "exceeds the 0.02 threshold" in rep.summary
    d = rep.to_dict()
    assert d["delta_f1"]["value"] == pytest.approx(1 / 3, abs=1e-6) and d["flagged"] is True
    assert {r["figure"] for r in rep.csv_rows()} >= {"delta_f1", "blind_gold_f1"}


def test_no_paired_items_says_so():
    it = AnnotatedItem("d", 0, TEXT, annotations={"b": AnnotatorLabels((MAYA,), "blind")})
    rep = circularity_report(with_predictions([it], {it.key: (MAYA,)}), n_boot=10)
    assert rep.delta_f1 is None and not rep.flagged
    assert "randomized" in rep.summary


def test_settled_items_are_counted():
    it = AnnotatedItem("d", 0, TEXT, annotations={"x": AnnotatorLabels((MAYA,), "blind"),
                                                   "y": AnnotatorLabels((), "aware")})
    rep = circularity_report(with_predictions([it], {it.key: (MAYA,)}, {it.key: (MAYA,)}), n_boot=10)
    assert rep.adjudication["disputed"] == 1 and rep.adjudication["settled_for_model"] == 1
    assert "went the way the model had them" in rep.summary


def test_vote_gold_keeps_ties_and_resolves_overlaps():
    assert vote_gold({"x": [MAYA], "y": []}) == (MAYA,)
    assert vote_gold({"x": [MAYA], "y": [], "z": []}) == ()
    longer = Span(0, 8, "NAME")
    assert vote_gold({"x": [MAYA], "y": [MAYA], "z": [longer]}) == (MAYA,)
    it = AnnotatedItem("d", 0, TEXT, annotations={"x": AnnotatorLabels((MAYA,), "aware")})
    assert condition_gold(it, "blind") is None and condition_gold(it, "aware") == (MAYA,)


def study(anchoring: float, seed: int):
    annotators = (
        SimulatedAnnotator("A1", miss_rate=0.10, false_alarm_rate=0.05, anchoring=anchoring),
        SimulatedAnnotator("A2", miss_rate=0.15, false_alarm_rate=0.03, anchoring=anchoring),
        SimulatedAnnotator("A3", miss_rate=0.05, false_alarm_rate=0.08, anchoring=anchoring),
        SimulatedAnnotator("A4", miss_rate=0.10, false_alarm_rate=0.05, anchoring=anchoring),
    )
    return simulate_study(StudyConfig(n_dialogues=500, annotators=annotators, seed=seed))


def test_simulated_study_recovers_injected_inflation():
    sim = study(anchoring=0.4, seed=1)
    assert sim.expected_delta_f1 > 0.05
    rep = circularity_report(with_predictions(sim.items, sim.predictions), n_boot=400, seed=1)
    assert rep.delta_f1.contains(sim.expected_delta_f1), (rep.delta_f1, sim.expected_delta_f1)
    assert rep.blind.f1.contains(sim.expected["blind_f1"])
    assert rep.aware.f1.contains(sim.expected["aware_f1"])
    assert rep.flagged and rep.significant
    assert rep.accept_without_edit["aware"] > rep.accept_without_edit["blind"]
    assert rep.agreement_by_condition["aware"].value > rep.agreement_by_condition["blind"].value


def test_simulated_study_without_bias_reports_no_inflation():
    sim = study(anchoring=0.0, seed=1)
    assert sim.expected_delta_f1 == pytest.approx(0.0, abs=0.005)  # annotators differ a little
    rep = circularity_report(with_predictions(sim.items, sim.predictions), n_boot=400, seed=1)
    assert rep.delta_f1.contains(0.0), rep.delta_f1
    assert not rep.flagged and not rep.significant
    assert "no sign" in rep.summary or "cannot be ruled out" in rep.summary


def test_simulation_is_randomized_and_balanced():
    sim = study(anchoring=0.0, seed=2)
    per: dict[str, dict[str, int]] = {}
    for it in sim.items:
        assert len(it.annotations) == 2
        for a, al in it.annotations.items():
            per.setdefault(a, {"blind": 0, "aware": 0})[al.condition] += 1
    for counts in per.values():
        assert abs(counts["blind"] - counts["aware"]) <= 1


@pytest.mark.parametrize("match,level", [("exact", "span_exact"), ("overlap", "span_overlap")])
def test_scores_agree_with_the_evaluation_module(match, level):
    from pipeline.metrics.circularity import condition_gold
    from pipeline.metrics.evaluation import evaluate

    sim = study(anchoring=0.3, seed=4)
    rep = circularity_report(with_predictions(sim.items, sim.predictions), match=match, n_boot=0)
    paired = [it for it in sim.items
              if condition_gold(it, "blind") is not None and condition_gold(it, "aware") is not None]
    texts = {it.key: it.text for it in paired}
    pred = {k: sim.predictions[k] for k in texts}
    for cond, scores in (("blind", rep.blind), ("aware", rep.aware)):
        gold = {it.key: condition_gold(it, cond) for it in paired}
        ev = getattr(evaluate(texts=texts, gold=gold, pred=pred, n_boot=0), level)
        assert scores.precision.value == pytest.approx(ev.precision)
        assert scores.recall.value == pytest.approx(ev.recall)
        assert scores.f1.value == pytest.approx(ev.f1)


# --- audit samples weighted by the design; the flag decided on the interval ---------------------


def audit_sample(sim, rate: float, seed: int):
    """Flagged = the model predicted something; plus a random share of the rest. Weights 1 and 1/p."""
    import random

    rng = random.Random(seed)
    flagged = [it for it in sim.items if sim.predictions[it.key]]
    rest = [it for it in sim.items if not sim.predictions[it.key]]
    audit = rng.sample(rest, round(rate * len(rest)))
    p = len(audit) / len(rest)
    return flagged + audit, {**{it.key: 1.0 for it in flagged}, **{it.key: 1 / p for it in audit}}


def perfect_study(seed: int):
    """Annotators who never miss nor over-mark: blind gold is the truth, so recall is known."""
    perfect = tuple(SimulatedAnnotator(f"A{i}", miss_rate=0.0, false_alarm_rate=0.0) for i in range(4))
    return simulate_study(StudyConfig(n_dialogues=400, annotators=perfect, pii_per_message=0.5,
                                      model_recall=0.6, model_false_alarm_rate=0.3, seed=seed))


def corpus_recall(sim) -> float:
    found = total = 0
    for key, truth in sim.truth.items():
        pred = {s.key() for s in sim.predictions[key]}
        total += len(truth)
        found += sum(s.key() in pred for s in truth)
    return found / total


def test_weighted_recall_recovers_the_corpus_recall():
    sim = perfect_study(seed=5)
    known = corpus_recall(sim)
    items, weights = audit_sample(sim, 0.1, seed=3)
    naive = circularity_report(with_predictions(items, sim.predictions), n_boot=300, seed=1)
    weighted = circularity_report(with_predictions(items, sim.predictions), weights=weights, n_boot=300, seed=1)
    assert naive.blind.recall.value > known + 0.1  # counting every item once overstates recall
    assert not naive.blind.recall.contains(known)
    assert weighted.blind.recall.contains(known), (weighted.blind.recall, known)
    assert weighted.blind.recall.value == pytest.approx(known, abs=0.03)
    assert weighted.weighting["weighted"] and not naive.weighting["weighted"]
    assert weighted.weighting["items_weighted"] == sum(w != 1 for w in weights.values())
    assert "weighted" in weighted.summary and "1/" in weighted.summary
    assert weighted.to_dict()["weighting"]["weighted"] is True


def test_weighted_evaluation_recovers_the_corpus_recall():
    from pipeline.metrics.evaluation import evaluate

    sim = perfect_study(seed=6)
    known = corpus_recall(sim)
    items, weights = audit_sample(sim, 0.1, seed=4)
    texts = {it.key: it.text for it in items}
    gold = {k: sim.truth[k] for k in texts}
    pred = {k: sim.predictions[k] for k in texts}
    naive = evaluate(texts=texts, gold=gold, pred=pred, n_boot=200)
    weighted = evaluate(texts=texts, gold=gold, pred=pred, weights=weights, n_boot=200)
    assert naive.span_exact.recall > known + 0.1
    assert weighted.span_exact.recall == pytest.approx(known, abs=0.03)
    lo, hi = weighted.span_exact.ci["recall"]
    assert lo <= known <= hi
    assert weighted.weighted and not naive.weighted
    assert weighted.to_dict()["weighted"] is True and "weighted" in weighted.format_table()
    # unit weights change nothing
    same = evaluate(texts=texts, gold=gold, pred=pred, weights={k: 1.0 for k in texts}, n_boot=0)
    assert same.span_exact.recall == naive.span_exact.recall


def test_flag_needs_the_interval_above_zero():
    # 3 dialogues where aware annotators take a wrong suggestion, 2 where they drop a right one:
    # the point estimate is above the threshold, the interval is not above zero.
    items = [item(f"up{i}", [MAYA], [MAYA, ALEX]) for i in range(3)]
    items += [item(f"down{i}", [MAYA, ALEX], [MAYA]) for i in range(2)]
    preds = {it.key: (MAYA, ALEX) for it in items}
    rep = circularity_report(with_predictions(items, preds), n_boot=300, seed=2)
    assert rep.delta_f1.value > 0.02 and rep.delta_f1.ci_low <= 0
    assert not rep.flagged and not rep.significant
    assert "not flagged" in rep.summary or "does not flag" in rep.summary


# --- cross-condition exposure, measured ----------------------------------------------------------


def test_exposure_is_measured_on_the_items():
    exposed = AnnotatedItem("d", 1, TEXT, annotations={"a": AnnotatorLabels((MAYA,), "blind"),
                                                       "b": AnnotatorLabels((MAYA,), "aware")})
    seen = AnnotatedItem("d", 0, TEXT, annotations={"a": AnnotatorLabels((MAYA,), "aware"),
                                                    "b": AnnotatorLabels((MAYA,), "aware")})
    clean = item("e", [MAYA], [MAYA])
    rep = circularity_report(with_predictions([seen, exposed, clean], {}), n_boot=10, randomization_unit="item")
    assert rep.exposure["exposed"] == 1 and rep.exposure["blind"] == 2
    assert rep.randomization_unit == "item" and rep.cluster_unit == "dialogue"
    d = rep.to_dict()
    assert d["exposure"]["exposed"] == 1 and d["randomization_unit"] == "item"
    assert "saw the model's suggestions" in rep.summary
    sim = study(anchoring=0.0, seed=2)
    assert circularity_report(with_predictions(sim.items[:40], sim.predictions), n_boot=0).exposure["blind"] > 0


def test_items_of_a_dialogue_that_do_not_come_together_are_refused():
    """The check keeps a few counts per dialogue, not the items: a dialogue that comes back after
    another began would be counted as two, so it is refused, not miscounted."""
    rows = [CircularityItem(item(d, [MAYA], [MAYA])) for d in ("d1", "d2", "d1")]
    with pytest.raises(ValueError, match="do not come together"):
        circularity_report(rows, n_boot=0)


def test_items_in_memory_are_grouped_by_dialogue_and_give_the_same_figures():
    sim = study(anchoring=0.6, seed=3)
    shuffled = sim.items[1::2] + sim.items[::2]
    a = circularity_report(with_predictions(sim.items, sim.predictions), n_boot=100, seed=1).to_dict()
    b = circularity_report(with_predictions(shuffled, sim.predictions), n_boot=100, seed=1).to_dict()
    assert a["n_items"] == b["n_items"] == len(sim.items)
    assert a["exposure"] == b["exposure"] and a["blind_gold"] == b["blind_gold"]


def _stream(n_dialogues: int, per_dialogue: int = 10):
    words = " ".join(["so", "Maya", "has", "3/4", "of", "the", "pizza"] * 6)
    for d in range(n_dialogues):
        for i in range(per_dialogue):
            it = AnnotatedItem(f"d{d}", i, f"{words} {d} {i}", annotations={
                "b": AnnotatorLabels((Span(3, 7, "NAME"),), "blind", 4.0),
                "a": AnnotatorLabels((Span(3, 7, "NAME"), Span(0, 2, "NAME")), "aware", 3.0),
            })
            yield CircularityItem(it, (Span(3, 7, "NAME"),), (Span(3, 7, "NAME"),) if i == 0 else None)


def test_the_check_holds_no_item_it_has_read():
    """At a million messages, listing the items took 1.3 GB of a worker. The check keeps
    a few numbers per dialogue and per decision (tens of bytes an item), never the items (about
    a kilobyte each here): what 9,000 more items add is measured, after a first run that warms
    the caches."""
    import tracemalloc

    def peak(n_dialogues: int) -> int:
        tracemalloc.start()
        rep = circularity_report(_stream(n_dialogues), n_boot=0)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert rep.n_items == 10 * n_dialogues and rep.adjudication["disputed"] == n_dialogues
        return top

    peak(30)
    per_item = (peak(1200) - peak(300)) / 9000
    assert per_item < 200, f"{per_item:.0f} bytes kept per item read"
