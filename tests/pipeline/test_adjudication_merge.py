"""Merging annotators' spans into gold and ranking disagreements by risk."""

from __future__ import annotations

import pytest

from pipeline.adjudication import (
    BOUNDARY,
    LABEL,
    LEAK,
    NONE,
    SettledItem,
    assess_risk,
    merge_candidates,
    merge_item,
    model_favour,
)
from pipeline.metrics.agreement import AnnotatorLabels
from pipeline.types import Span

MAYA = Span(6, 10, "NAME")
MAYA_SHORT = Span(6, 9, "NAME")
MAYA_AS_SCHOOL = Span(6, 10, "SCHOOL")
DENVER = Span(20, 26, "LOCATION")


def test_unanimous_agreement_merges():
    gold, risk = merge_item({"a": [MAYA, DENVER], "b": [DENVER, MAYA]})
    assert gold == (MAYA, DENVER)
    assert risk.level == NONE


def test_everyone_says_no_pii_merges_to_empty_gold():
    gold, risk = merge_item({"a": [], "b": []})
    assert gold == () and risk.level == NONE


def test_accepts_annotator_labels_objects():
    gold, _ = merge_item({"a": AnnotatorLabels((MAYA,)), "b": AnnotatorLabels((MAYA,), "aware")})
    assert gold == (MAYA,)


@pytest.mark.parametrize(
    ("annotations", "level"),
    [
        ({"a": [MAYA], "b": []}, LEAK),
        ({"a": [MAYA], "b": [MAYA_AS_SCHOOL]}, LABEL),
        ({"a": [MAYA], "b": [MAYA_SHORT]}, BOUNDARY),
        ({"a": [MAYA, DENVER], "b": [MAYA_AS_SCHOOL]}, LEAK),  # leak outranks the label clash
        ({"a": [MAYA], "b": [MAYA]}, NONE),
    ],
)
def test_risk_levels(annotations, level):
    gold, risk = merge_item(annotations, rule="unanimous")
    assert risk.level == level
    assert (gold is None) == (level != NONE)


def test_queue_order_puts_possible_leaks_first():
    items = {
        "boundary": {"a": [MAYA], "b": [MAYA_SHORT]},
        "label": {"a": [MAYA], "b": [MAYA_AS_SCHOOL]},
        "small leak": {"a": [MAYA], "b": []},
        "big leak": {"a": [MAYA, DENVER], "b": []},
    }
    order = sorted(items, key=lambda k: assess_risk(items[k]).sort_key)
    assert order == ["big leak", "small leak", "label", "boundary"]
    assert max(assess_risk(v) for v in items.values()) == assess_risk(items["big leak"])


def test_majority_with_three_annotators():
    gold, risk = merge_item({"a": [MAYA, DENVER], "b": [MAYA], "c": [MAYA, DENVER]},
                            rule="majority")
    assert gold == (MAYA, DENVER)
    assert risk.level == LEAK  # b skipped Denver: recorded even though the majority settled it
    cands = merge_candidates({"a": [MAYA, DENVER], "b": [MAYA], "c": [MAYA, DENVER]}, "majority")
    prov = {c.span: (c.provenance, c.annotators) for c in cands}
    assert prov[MAYA] == ("unanimous", ("a", "b", "c"))
    assert prov[DENVER] == ("majority", ("a", "c"))


def test_majority_drops_a_minority_span():
    gold, _ = merge_item({"a": [MAYA], "b": [], "c": []}, rule="majority")
    assert gold == ()


def test_majority_tie_goes_to_a_person():
    assert merge_item({"a": [MAYA], "b": []}, rule="majority")[0] is None
    assert merge_item({"a": [MAYA], "b": [MAYA], "c": [], "d": []}, rule="majority")[0] is None


def test_unanimous_rule_refuses_a_majority():
    assert merge_item({"a": [MAYA], "b": [MAYA], "c": []}, rule="unanimous")[0] is None


def test_unknown_rule_is_an_error():
    with pytest.raises(ValueError, match="unknown merge rule"):
        merge_item({"a": []}, rule="loudest")


def test_model_favour_counts_disputes_settled_the_models_way():
    settled = [
        # disputed MAYA: model predicted it, gold kept it -> model's way
        SettledItem({"a": [MAYA], "b": []}, model_spans=[MAYA], gold=[MAYA]),
        # disputed DENVER: model did not predict it, gold dropped it -> model's way
        SettledItem({"a": [DENVER], "b": []}, model_spans=[], gold=[]),
        # disputed MAYA: model predicted it, gold dropped it -> against the model
        SettledItem({"a": [MAYA], "b": []}, model_spans=[MAYA], gold=[]),
    ]
    out = model_favour(settled)
    assert out["disputed"] == 3 and out["settled_for_model"] == 2
    assert out["rate"] == pytest.approx(2 / 3)
    assert out["disputed_model_in"] == 2 and out["kept_model_in"] == 1
