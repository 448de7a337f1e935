"""The warm-started retrain: which gold it trains on, and a tiny tagger that starts from its parent's
weights, stops early or at its step budget, and refuses a parent with other labels."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.tagger.retrain import (
    MAX_TUNE_DIALOGUES,
    new_and_old,
    retraining_set,
    warm_retraining_set,
)
from pipeline.tagger.training.config import TrainingError
from tests.pipeline.test_retrain import _fake_generate, _gold
from tests.pipeline.test_tagger import dialogue, msg


def test_warm_set_trains_on_the_new_gold_a_sample_of_the_old_and_keeps_the_dev_split():
    gold = [*_gold(40), *_gold(30, "h")]
    full = retraining_set(gold, generate=_fake_generate([]))
    first = retraining_set(_gold(40), generate=_fake_generate([]))
    seen = {d.id for d in first.train}  # what a version trained on the first 40 saw
    calls = []
    warm = warm_retraining_set(gold, seen, parent="p/v1", old_per_new=0.5, generated_per_gold=0.25,
                               generate=_fake_generate(calls))
    assert {d.id for d in warm.dev} == {d.id for d in full.dev}  # judged on the same split
    gold_used = [d for d in [*warm.train, *warm.tune] if not d.id.startswith("synth:")]
    new, old = new_and_old(gold_used, seen)
    expected_new = [d for d in full.train if d.id.startswith("h")]
    assert {d.id for d in new} == {d.id for d in expected_new}  # every new one, nothing from dev
    assert len(old) == min(len(seen), -(-len(new) // 2))  # ceil(0.5 x new)
    assert not {d.id for d in warm.tune} & {d.id for d in warm.train}
    assert 1 <= len(warm.tune) <= MAX_TUNE_DIALOGUES
    fit = len(gold_used) - len(warm.tune)
    assert warm.generated == round(0.25 * fit) == calls[0][0]
    summary = warm.summary()["warm_start"]
    assert summary["parent"] == "p/v1" and summary["new_gold_dialogues"] == len(new)
    assert summary["old_gold_dialogues"] == len(old) and "warm_start" not in full.summary()
    # seeded: the same inputs give the same set (a redelivered job decides on the same data)
    again = warm_retraining_set(gold, seen, parent="p/v1", generate=_fake_generate([]))
    assert [d.id for d in again.train] == [d.id for d in warm.train]


def test_warm_set_without_new_gold_or_with_a_bad_ratio_says_what_to_do():
    gold = _gold(40)
    seen = {d.id for d in gold}
    with pytest.raises(TrainingError, match="no new gold since p/v1.*retrain_tagger --full"):
        warm_retraining_set(gold, seen, parent="p/v1", generate=_fake_generate([]))
    with pytest.raises(TrainingError, match="negative"):
        warm_retraining_set(gold, set(), old_per_new=-1)
    everything_new = warm_retraining_set(gold, set(), generate=_fake_generate([]))
    assert everything_new.warm["old_gold_dialogues"] == 0  # a parent that recorded no gold


# ------------------------------------------------------------------------ a tiny real tagger


def _dialogues(n: int, prefix: str = "t"):
    names = ["Maria", "Tom", "Ana", "Luis", "Priya", "Chen"]
    out = []
    for k in range(n):
        a, b = names[k % 6], names[(k + 1) % 6]
        out.append(dialogue(
            msg(f"Hi {a}! I'm Mr. {b}.", (a, "NAME"), (b, "NAME")),
            msg(f"hi mr {b.lower()}", (b.lower(), "NAME"), role="student"),
            msg("What is 3/4 of 12?"),
            msg("9", role="student"),
            msg(f"good job {a.lower()}", (a.lower(), "NAME")),
            did=f"{prefix}{k}",
        ))
    return out


TINY = {"num_layers": 1, "seed": 1, "check_precision": False, "export_onnx": False, "min_dev_score": 0.0}


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    pytest.importorskip("torch")
    from pipeline.tagger import TrainConfig, train_tagger

    out = tmp_path_factory.mktemp("models")
    return train_tagger(TrainConfig(_dialogues(8), name="tiny", out_dir=out, epochs=1, dev_fraction=0.25, **TINY))


def _warm(parent, tmp_path, **options):
    from pipeline.tagger import TrainConfig, train_tagger

    data = _dialogues(6, "n")
    return train_tagger(TrainConfig(data[:4], data[4:], name="tiny", out_dir=tmp_path, init_from=parent.path,
                                    **{**TINY, "epochs": 2, **options}))


def test_the_parent_records_what_it_trained_on(parent):
    assert len(parent.train_ids) == 6 and not set(parent.train_ids) & set(parent.dev_ids)
    assert parent.warm_started_from == ""


def test_a_warm_start_with_no_steps_is_its_parent(parent, tmp_path):
    from pipeline.tagger import activation_blockers, load_model

    child = _warm(parent, tmp_path, max_steps=0)
    assert child.warm_started_from == parent.full_version
    assert child.training["steps"] == 0 and child.training["stopped"] == "step budget"
    assert not activation_blockers(child)  # a step budget is a planned stop, not a cut-off
    probe = _dialogues(2, "p")
    for a, b in zip(load_model(parent.path, precision="fp32").predict(probe),
                    load_model(child.path, precision="fp32").predict(probe), strict=True):
        for pa, pb in zip(a, b, strict=True):
            np.testing.assert_allclose(pa.probs, pb.probs, atol=1e-6)


def test_a_warm_start_trains_from_its_parent_and_stops_at_its_budget(parent, tmp_path):
    from pipeline.tagger import load_model

    child = _warm(parent, tmp_path, max_steps=2, lr=1e-3, batch_size=1)
    assert child.training["steps"] == 2 == child.training["planned_steps"]
    assert child.hyper["max_steps"] == 2 and child.warm_started_from == parent.full_version
    assert child.training["stopped"] == "step budget"
    history = child.dev_metrics["history"]
    assert history[0]["step"] == 0 and "dev" in history[0]  # the parent's weights scored first
    probe = _dialogues(1, "p")
    before = load_model(parent.path, precision="fp32").predict(probe)[0][0].probs
    after = load_model(child.path, precision="fp32").predict(probe)[0][0].probs
    best = max(history, key=lambda e: e.get("dev", {}).get("f2", -1))
    assert (best["step"] == 0) == np.allclose(before, after, atol=1e-6)  # the best scoring is kept


def test_early_stopping_ends_a_warm_start_mid_epoch(parent, tmp_path):
    child = _warm(parent, tmp_path, lr=1e-12, eval_every=1, patience=1, batch_size=1)  # nothing improves
    assert child.training["stopped"] == "early stopping"
    assert child.training["steps"] == 1 < child.training["planned_steps"]
    assert child.training["best_step"] == 0


def test_a_parent_with_other_labels_is_refused(parent, tmp_path):
    with pytest.raises(TrainingError, match="cannot warm-start from tiny/.*retrain_tagger --full"):
        _warm(parent, tmp_path, labels=("NAME",))
    with pytest.raises(TrainingError, match="not both"):
        _warm(parent, tmp_path, teacher=parent.path)
