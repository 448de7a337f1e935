"""The model in the loop's pure parts: the retraining set, the decision, the learning-curve point."""

from __future__ import annotations

import pytest

from pipeline.metrics.comparison import compare_versions
from pipeline.tagger.retrain import (
    ACTIVATED,
    BLOCKED,
    GENERATED_PER_GOLD,
    NOT_BETTER,
    decide,
    learning_point,
    retraining_set,
)
from pipeline.tagger.training.config import TrainingError
from pipeline.types import Dialogue, Message, Span


def _gold(n: int, prefix: str = "g") -> list[Dialogue]:
    return [Dialogue(id=f"{prefix}{k}", messages=(
        Message(f"Hi Ann{k}", index=0, spans=(Span(3, 6 + len(str(k)), "NAME"),)),
        Message("ok", index=1),
    )) for k in range(n)]


def _fake_generate(calls):
    def generate(n, seed):
        calls.append((n, seed))
        return [Dialogue(id=f"synth:{k}", messages=(Message("hello", index=0),)) for k in range(n)]

    return generate


def test_dev_comes_from_gold_only_and_generated_data_follows_the_ratio():
    calls = []
    data = retraining_set(_gold(40), generate=_fake_generate(calls))
    gold_train = [d for d in data.train if not d.id.startswith("synth:")]
    assert data.dev and all(d.id.startswith("g") for d in data.dev)
    assert not {d.id for d in gold_train} & {d.id for d in data.dev}
    assert len(gold_train) + len(data.dev) == 40 == data.summary()["gold_dialogues"]
    assert data.generated == round(GENERATED_PER_GOLD * len(gold_train)) == calls[0][0]
    assert data.summary()["gold_messages"] == 80
    # growing the gold never moves a dev dialogue to train (a fair comparison with older versions)
    bigger = retraining_set([*_gold(40), *_gold(30, "h")], generate=_fake_generate([]))
    assert {d.id for d in data.dev} <= {d.id for d in bigger.dev}


def test_no_generated_data_when_the_ratio_is_zero_and_errors_are_clear():
    data = retraining_set(_gold(40), generated_per_gold=0, generate=_fake_generate(calls := []))
    assert data.generated == 0 and not calls
    with pytest.raises(TrainingError, match="not enough complete gold dialogues to retrain: 1 so far"):
        retraining_set(_gold(1), generate=_fake_generate([]))
    with pytest.raises(TrainingError, match="unique"):
        retraining_set([*_gold(3), *_gold(3)], generate=_fake_generate([]))
    with pytest.raises(TrainingError, match="negative"):
        retraining_set(_gold(10), generated_per_gold=-1)


def test_decide_activates_only_a_better_unblocked_version():
    dev = _gold(30)
    gold = {(d.id, m.index): list(m.spans) for d in dev for m in d.messages}
    half = {k: v for k, v in gold.items() if int(k[0][1:]) % 2 == 0}
    better = compare_versions(dev, gold, half, n_boot=200)
    same = compare_versions(dev, gold, gold, n_boot=200)
    assert decide(better, []) == (ACTIVATED, better.reasons[0])
    decision, reason = decide(same, [])
    assert decision == NOT_BETTER and "interval reaches 0" in reason
    assert decide(better, ["training stopped early", "x"]) == (BLOCKED, "training stopped early; x")
    assert decide(None, [])[0] == NOT_BETTER


def test_learning_point_reads_the_activation_entry():
    entry = {"decision": "not better", "data": {"gold_messages": 120},
             "comparison": {"new": {"f2": 0.8, "name_recall": 0.9}}}
    assert learning_point(entry) == {"gold_messages": 120, "f2": 0.8, "name_recall": 0.9,
                                     "decision": "not better"}
    assert learning_point({}) is None
    assert learning_point({"data": {"gold_messages": 3}, "comparison": None}) is None
