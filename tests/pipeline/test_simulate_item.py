"""The simulated annotator and model of the demo's first round: known rates, seeded."""

import random

from pipeline.simulate import SimulatedAnnotator, simulate_item, simulate_predictions
from pipeline.types import Span

TRUTH = (Span(0, 4, "NAME"), Span(10, 16, "SCHOOL"))
WRONG = Span(20, 25, "NAME")  # a word-problem character the model flags


def test_a_perfect_blind_annotator_marks_the_truth_and_no_suggestion():
    who = SimulatedAnnotator("a", miss_rate=0.0, false_alarm_rate=0.0, anchoring=1.0)
    acts = simulate_item(who, truth=TRUTH, predictions=(*TRUTH, WRONG), aware=False, rng=random.Random(0))
    assert acts.spans == TRUTH and acts.accept == acts.reject == ()


def test_aware_anchoring_decides_the_wrong_suggestion():
    anchored = SimulatedAnnotator("a", miss_rate=0.0, false_alarm_rate=0.0, anchoring=1.0)
    immune = SimulatedAnnotator("b", miss_rate=0.0, false_alarm_rate=0.0, anchoring=0.0)
    preds = (TRUTH[0], WRONG)
    acts = simulate_item(anchored, truth=TRUTH, predictions=preds, aware=True, rng=random.Random(0))
    assert acts.accept == (TRUTH[0], WRONG) and acts.add == (TRUTH[1],) and acts.reject == ()
    acts = simulate_item(immune, truth=TRUTH, predictions=preds, aware=True, rng=random.Random(0))
    assert acts.accept == (TRUTH[0],) and acts.reject == (WRONG,) and acts.spans == TRUTH


def test_the_anchoring_rate_is_what_it_says():
    who = SimulatedAnnotator("a", miss_rate=0.0, false_alarm_rate=0.0, anchoring=0.3)
    rng = random.Random(1)
    taken = sum(WRONG in simulate_item(who, truth=TRUTH, predictions=(WRONG,), aware=True, rng=rng).accept
                for _ in range(4000))
    assert abs(taken / 4000 - 0.3) < 0.03


def test_the_simulated_model_never_flags_a_distractor_over_a_true_span():
    overlapping = Span(0, 2, "NAME")
    for seed in range(50):
        pred = simulate_predictions(TRUTH, (overlapping, WRONG), recall=0.5, false_alarm_rate=1.0,
                                    rng=random.Random(seed))
        assert overlapping not in pred and WRONG in pred and set(pred) <= {*TRUTH, WRONG}
