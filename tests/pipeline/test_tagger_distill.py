"""Distilling a trained tagger into a student with fewer layers: the kept layers, the blended loss,
the record of the teacher, the refusal of a teacher whose tags differ, and the check of the student
against its teacher on the teacher's dev dialogues."""

from __future__ import annotations

import pytest

from pipeline.tagger.store import ModelInfo
from pipeline.tagger.training.config import TeacherDevError, TrainingError
from pipeline.tagger.training.data import split_by_dialogue, teacher_dev_split
from pipeline.tagger.training.distillation import spread_layers, student_thresholds
from pipeline.types import Dialogue, Message, Span


def _msg(text: str, *names: str, index: int = 0) -> Message:
    spans = tuple(Span(text.index(n), text.index(n) + len(n), "NAME") for n in names)
    return Message(text=text, speaker="tutor", role="tutor", index=index, spans=spans)


def _dialogues() -> list[Dialogue]:
    names = ["Maria", "Tom", "Ana", "Luis", "Priya", "Chen"]
    out = []
    for k in range(8):
        a, b = names[k % 6], names[(k + 1) % 6]
        msgs = (
            _msg(f"Hi {a}! I'm Mr. {b}.", a, b),
            _msg("What is 3/4 of 12?", index=1),
            _msg(f"good job {a.lower()}", a.lower(), index=2),
        )
        out.append(Dialogue(id=f"t{k}", messages=msgs, anchor="Maria buys 12 apples."))
    return out


TINY = {"epochs": 1, "seed": 1, "dev_fraction": 0.25, "check_precision": False, "min_dev_score": 0.0}
STUDENT_SEED = 3  # its own split of _dialogues() would be t0, t5; the teacher's (seed 1) is t3, t6


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    pytest.importorskip("torch")
    from pipeline.tagger import TrainConfig, train_tagger

    root = tmp_path_factory.mktemp("models")
    return train_tagger(TrainConfig(_dialogues(), name="teacher", out_dir=root, num_layers=2, **TINY))


def test_spread_layers_keeps_the_first_and_last_layer():
    assert spread_layers(3, 2) == [0, 2]
    assert spread_layers(6, 3) == [0, 2, 5]
    assert spread_layers(3, 1) == [0]
    assert spread_layers(3, 3) == [0, 1, 2]
    with pytest.raises(TrainingError, match="1 to 3"):
        spread_layers(3, 4)


def test_a_student_keeps_fewer_layers_and_records_its_teacher(teacher, tmp_path):
    from pipeline.registry import build
    from pipeline.tagger import TrainConfig, load_model, read_info, train_tagger

    student = train_tagger(TrainConfig(
        _dialogues(), name="student", out_dir=tmp_path, teacher=teacher.path, num_layers=1, **TINY
    ))
    saved = read_info(student.path)
    assert saved.distilled_from == teacher.full_version
    assert saved.hyper["num_layers"] == 1 and teacher.hyper["num_layers"] == 2
    assert saved.hyper["distillation"]["kept_layers"] == [0]
    assert saved.hyper["distillation"]["teacher"] == teacher.full_version
    assert saved.window == teacher.window  # the teacher's window unless told otherwise
    assert saved.onnx["fp32"]["verified"]  # exported and checked like any version
    assert len(load_model(student.path).model.bert.encoder.layer) == 1
    det = build("tagger", {"model_path": student.path, "precision": "fp32", "backend": "torch"})
    assert len(det.detect(_dialogues()[0])) == 3  # loads and runs like any version


def test_a_student_learns_on_generated_dialogues_of_its_own_beside_its_teachers_data(teacher, tmp_path):
    from pipeline.tagger import TrainConfig, read_info, train_tagger
    from pipeline.tagger.training.data import student_generated

    student = read_info(train_tagger(TrainConfig(
        _dialogues(), name="student", out_dir=tmp_path, teacher=teacher.path, num_layers=1,
        student_generated=2, **TINY,
    )).path)
    extra = [i for i in student.train_ids if i.startswith("student-")]
    assert len(extra) == 2 and set(student.train_ids) - set(extra) == set(teacher.train_ids)
    assert student.dev_ids == teacher.dev_ids  # judged against the teacher on the same dialogues
    assert student.hyper["student_generated"] == 2
    assert [d.id for d in student_generated([], 2)] == extra  # seeded: the same dialogues each time
    with pytest.raises(TrainingError, match="student_generated is a student's"):
        train_tagger(TrainConfig(_dialogues(), name="x", out_dir=tmp_path, student_generated=2, **TINY))
    with pytest.raises(TrainingError, match="not negative"):
        train_tagger(TrainConfig(_dialogues(), name="x", out_dir=tmp_path, teacher=teacher.path, num_layers=1,
                                 student_generated=-1, **TINY))


def test_a_students_generated_dialogues_follow_its_teachers_labelling_policy():
    from pipeline.synthetic import generate_corpus
    from pipeline.tagger.training.data import student_generated

    def policy(data):
        return {d.meta["policy"] for d in student_generated(data, 2)}

    assert policy(generate_corpus(2, seed=1, policy="recall_first")) == {"recall_first"}
    assert policy(generate_corpus(2, seed=1, policy="strict")) == {"strict"}
    assert policy(_dialogues()) == {"strict"}  # no generated dialogue to follow


def test_explicit_student_layers_take_those_teacher_weights(teacher, tmp_path):
    from pipeline.tagger import load_model
    from pipeline.tagger.training.distillation import load_student

    student, _, kept = load_student(teacher, load_model(teacher.path).window, 1, [1])
    original = load_model(teacher.path, precision="fp32").model
    assert kept == [1]
    encoder = student.model.bert.encoder
    assert len(encoder.layer) == 1
    assert encoder.layer[0].output.dense.weight.equal(original.bert.encoder.layer[1].output.dense.weight)
    assert not encoder.layer[0].output.dense.weight.equal(original.bert.encoder.layer[0].output.dense.weight)
    assert student.model.classifier.weight.equal(original.classifier.weight)  # the head too


def test_a_narrower_student_keeps_the_feed_forward_units_that_weigh_most(teacher, tmp_path):
    import torch

    from pipeline.registry import build
    from pipeline.tagger import TrainConfig, load_model, read_info, train_tagger
    from pipeline.tagger.training.distillation import load_student

    original = load_model(teacher.path, precision="fp32").model.bert.encoder.layer[1]
    full = original.intermediate.dense.out_features
    student, _, _ = load_student(teacher, load_model(teacher.path).window, 1, [1], feed_forward=full // 4)
    layer = student.model.bert.encoder.layer[0]
    assert layer.intermediate.dense.weight.shape == (full // 4, original.intermediate.dense.in_features)
    assert layer.output.dense.weight.shape == (original.output.dense.out_features, full // 4)
    weight = original.intermediate.dense.weight.norm(dim=1) * original.output.dense.weight.norm(dim=0)
    kept = torch.topk(weight, full // 4).indices.sort().values
    assert layer.intermediate.dense.weight.equal(original.intermediate.dense.weight[kept])
    assert layer.intermediate.dense.bias.equal(original.intermediate.dense.bias[kept])
    assert layer.output.dense.weight.equal(original.output.dense.weight[:, kept])
    assert layer.output.dense.bias.equal(original.output.dense.bias)
    assert weight[kept].min() == weight.sort().values[-(full // 4)]  # the heaviest quarter

    saved = train_tagger(TrainConfig(_dialogues(), name="narrow", out_dir=tmp_path, teacher=teacher.path,
                                     num_layers=1, student_feed_forward=full // 4, **TINY))
    assert read_info(saved.path).hyper["feed_forward"] == full // 4
    assert load_model(saved.path).model.bert.encoder.layer[0].intermediate.dense.out_features == full // 4
    assert saved.onnx["fp32"]["verified"]  # the narrower graph exports and matches torch
    det = build("tagger", {"model_path": saved.path, "precision": "fp32", "backend": "onnx"})
    det.detect(_dialogues()[0])
    with pytest.raises(TrainingError, match="at least 1 feed-forward unit"):
        load_student(teacher, load_model(teacher.path).window, 1, [1], feed_forward=0)
    wide, _, _ = load_student(teacher, load_model(teacher.path).window, 1, [1], feed_forward=full + 1)
    assert wide.model.bert.encoder.layer[0].intermediate.dense.weight.equal(original.intermediate.dense.weight)


@pytest.mark.parametrize(("overrides", "shown"), [({"labels": ("NAME",)}, "['NAME']"), ({"scheme": "io"}, "io")])
def test_a_teacher_with_other_tags_is_refused(teacher, tmp_path, overrides, shown):
    from pipeline.tagger import TrainConfig, train_tagger

    with pytest.raises(TrainingError, match="must keep its teacher's scheme and labels") as err:
        train_tagger(TrainConfig(_dialogues(), name="s", out_dir=tmp_path, teacher=teacher, num_layers=1,
                     **TINY, **overrides))
    assert shown in str(err.value)
    assert not any(tmp_path.iterdir())  # nothing saved


def test_the_loss_blends_the_teachers_soft_labels_with_the_gold_loss(teacher):
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from pipeline.tagger.training.distillation import Distiller

    teacher_logits = torch.tensor([[[2.0, 0.0, -1.0], [0.5, 0.5, 0.0], [9.0, 9.0, 9.0]]])
    targets = torch.tensor([[0, 2, -100]])  # the third token is no target word: ignored

    class FakeTeacher:
        def eval(self):
            return self

        def __call__(self, **batch):
            return SimpleNamespace(logits=teacher_logits)

    def distiller(alpha: float) -> Distiller:
        return Distiller(teacher, SimpleNamespace(model=FakeTeacher()), [0], alpha, 2.0)

    hard = torch.tensor(0.7)
    same = teacher_logits.clone()
    assert float(distiller(1.0).loss(torch, {}, same, targets, hard)) == pytest.approx(0.0, abs=1e-6)
    assert float(distiller(0.0).loss(torch, {}, same, targets, hard)) == pytest.approx(0.7)
    other = torch.zeros_like(teacher_logits)
    other[0, 2] = -50.0  # differs only where no target word is: still no soft loss
    other[0, :2] = teacher_logits[0, :2] + 3.0  # a shift of all logits leaves the softmax alone
    assert float(distiller(0.5).loss(torch, {}, other, targets, hard)) == pytest.approx(0.35, abs=1e-5)
    flipped = -teacher_logits
    assert float(distiller(1.0).loss(torch, {}, flipped, targets, hard)) > 0.1
    with pytest.raises(TrainingError, match="distill_alpha"):
        distiller(1.5)


def test_the_hidden_loss_pulls_each_kept_layer_towards_the_teachers_same_layer(teacher):
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from pipeline.tagger.training.distillation import Distiller

    logits = torch.zeros((1, 2, 3))
    teacher_states = tuple(torch.full((1, 2, 4), float(k)) for k in range(4))  # embeddings + 3 layers

    class FakeTeacher:
        def eval(self):
            return self

        def __call__(self, **batch):
            return SimpleNamespace(logits=logits, hidden_states=teacher_states)

    distiller = Distiller(teacher, SimpleNamespace(model=FakeTeacher()), [0, 2], 0.0, 2.0, hidden=2.0)
    batch = {"attention_mask": torch.tensor([[1, 0]])}  # the padding token is never compared
    targets, hard = torch.tensor([[0, -100]]), torch.tensor(0.5)
    # student layer 0 is teacher layer 0 (state 1), student layer 1 is teacher layer 2 (state 3)
    same = (teacher_states[0], teacher_states[1], teacher_states[3])
    assert float(distiller.loss(torch, batch, logits, targets, hard, same)) == pytest.approx(0.5)
    off = (teacher_states[0], teacher_states[1], teacher_states[3].clone())
    off[2][0, 0] += 1.0  # one unit away on the real token of the last kept layer
    off[2][0, 1] += 100.0  # padding: ignored
    assert float(distiller.loss(torch, batch, logits, targets, hard, off)) == pytest.approx(0.5 + 2.0 * 0.5)
    assert distiller.facts()["hidden"] == 2.0
    with pytest.raises(TrainingError, match="distill_hidden"):
        Distiller(teacher, SimpleNamespace(model=FakeTeacher()), [0], 0.5, 2.0, hidden=-1.0)


@pytest.fixture(scope="module")
def student(teacher, tmp_path_factory):
    from pipeline.tagger import TrainConfig, train_tagger

    root = tmp_path_factory.mktemp("students")
    return train_tagger(TrainConfig(_dialogues(), name="student", out_dir=root, teacher=teacher.path, num_layers=1,
                        **{**TINY, "seed": STUDENT_SEED}))


def test_every_version_records_its_dev_dialogue_ids(teacher):
    from pipeline.tagger import read_info

    expected = tuple(sorted(d.id for d in split_by_dialogue(_dialogues(), 0.25, 1)[1]))
    assert read_info(teacher.path).dev_ids == teacher.dev_ids == expected == ("t3", "t6")
    assert teacher.data["dev"]["dialogues"] == 2


def test_a_students_dev_is_its_teachers_and_it_does_not_train_on_it(teacher, student):
    from pipeline.tagger import read_info

    own = {d.id for d in split_by_dialogue(_dialogues(), 0.25, STUDENT_SEED)[1]}
    assert own.isdisjoint(teacher.dev_ids)  # the student's seed alone would pick other dialogues
    saved = read_info(student.path)
    assert saved.dev_ids == teacher.dev_ids
    assert saved.data["dev"]["dialogues"] == 2 and saved.data["train"]["dialogues"] == 6  # 8 in all
    # Part of the teacher's dev in the data: that part is dev, and none of it trains.
    data = [d for d in _dialogues() if d.id != "t3"]
    train, dev = teacher_dev_split(data, teacher)
    assert [d.id for d in dev] == ["t6"]
    assert [d.id for d in train] == ["t0", "t1", "t2", "t4", "t5", "t7"]


def test_a_teacher_whose_dev_dialogues_are_not_in_the_data_is_refused(teacher, tmp_path):
    from dataclasses import replace

    from pipeline.tagger import TrainConfig, train_tagger

    renamed = [replace(d, id=f"other-{d.id}") for d in _dialogues()]
    missing = r"none of its dev dialogues \(2, e.g. 't3'\) is in the data"
    with pytest.raises(TeacherDevError, match=missing) as err:
        train_tagger(TrainConfig(renamed, name="s", out_dir=tmp_path, teacher=teacher, num_layers=1, **TINY))
    assert "distil on the data the teacher was trained on" in str(err.value)
    assert "or give dev dialogues that neither model trained on" in str(err.value)
    older = replace(teacher, dev_ids=())  # trained before dev ids were recorded
    with pytest.raises(TeacherDevError, match="it recorded no dev dialogue ids"):
        train_tagger(TrainConfig(_dialogues(), name="s", out_dir=tmp_path, teacher=older, num_layers=1, **TINY))
    assert not any(tmp_path.iterdir())  # nothing saved


def test_a_student_is_checked_against_its_teacher_on_the_teachers_dev(teacher, student):
    from pipeline.tagger import read_info
    from pipeline.tagger.store import teacher_shortfalls

    saved = read_info(student.path)
    check = saved.hyper["distillation"]["check"]
    assert check["dev"] == "teacher" and saved.dev_ids == teacher.dev_ids
    assert check["dev_dialogues"] == check["teacher_dev_dialogues"] == 2
    # The teacher's own dev dialogues, scored as it scored itself: the figures it recorded.
    assert check["teacher"] == {k: teacher.dev_metrics["recall_first"][k] for k in ("f2", "recall")}
    assert check["student"] == {k: saved.dev_metrics["recall_first"][k] for k in ("f2", "recall")}
    assert check["tolerance"] == 0.01
    assert check["passed"] is (not teacher_shortfalls(check))


def test_a_student_lowers_its_own_thresholds_to_those_that_imitate_its_teacher_or_to_its_teachers():
    # Its own, tuned on 10 dev dialogues, landed high for NAME (a seed of the demo's student: 0.45
    # against its teacher's 0.1); AGE has no other threshold to take.
    own = {"NAME": 0.45, "SCHOOL": 0.2, "AGE": 0.3, "EMAIL": 0.3}
    teacher = {"NAME": 0.1, "SCHOOL": 0.4, "EMAIL": 0.3}
    imitation = {"NAME": 0.05, "SCHOOL": 0.5, "EMAIL": 0.3}
    kept, record = student_thresholds(own, teacher, "imitate", imitation)
    assert kept == {"NAME": 0.05, "SCHOOL": 0.2, "AGE": 0.3, "EMAIL": 0.3}  # never above its own
    assert record == {"rule": "imitate", "own": own, "imitation": imitation,
                      "lowered": {"NAME": {"own": 0.45, "kept": 0.05}}}
    kept, record = student_thresholds(own, teacher, "lower")
    assert kept == {"NAME": 0.1, "SCHOOL": 0.2, "AGE": 0.3, "EMAIL": 0.3}
    assert record["lowered"] == {"NAME": {"own": 0.45, "kept": 0.1}}
    assert student_thresholds(own, teacher, "own") == (own, {"rule": "own", "own": own, "lowered": {}})
    with pytest.raises(TrainingError, match="distill_thresholds"):
        student_thresholds(own, teacher, "teacher")


def test_imitation_thresholds_are_where_the_student_best_reproduces_its_teachers_spans():
    import numpy as np

    from pipeline.tagger.model import MessageProbs
    from pipeline.tagger.training.distillation import imitation_thresholds
    from pipeline.text import tokenize

    text = "so Tom and Ann met Bob"
    words = tokenize(text)
    # The student's P(NAME) per word: the teacher flags Tom, Ann and Bob, and the student is
    # sure of Tom only; "so" at 0.08 is its one false alarm below Bob's 0.12.
    p_name = {"so": 0.08, "Tom": 0.9, "Ann": 0.3, "Bob": 0.12}
    probs = np.array([[p_name.get(w.text, 0.01)] for w in words], dtype=np.float32)
    teacher_spans = [Span(text.index(n), text.index(n) + len(n), "NAME") for n in ("Tom", "Ann", "Bob")]

    class Fake:
        def predict(self, dialogues, batch_size=None):
            return [[MessageProbs(words, probs) for _ in d.messages] for d in dialogues]

        def entity_probs(self, p):
            return p, None

        def to_spans(self, text, message, thresholds):
            assert thresholds == {"NAME": 0.1}  # the teacher's own
            return teacher_spans

    dialogue = Dialogue(id="d", messages=(Message(text=text, speaker="s", role="student", index=0),))
    thresholds, report = imitation_thresholds(Fake(), Fake(), {"NAME": 0.1}, [dialogue], ("NAME",), 2.0)
    # 0.1 keeps all three of the teacher's names and drops "so"; 0.3 or above loses Bob (and Ann).
    assert thresholds == {"NAME": 0.1}
    assert report["NAME"]["support"] == 3


def test_a_student_is_checked_at_the_thresholds_it_keeps(teacher, student):
    from pipeline.tagger import read_info

    saved = read_info(student.path)
    chosen = saved.hyper["distillation"]["thresholds"]
    assert chosen["rule"] == "imitate" and set(chosen["imitation"]) == set(saved.labels)
    assert saved.thresholds == {lab: min(t, chosen["imitation"][lab]) for lab, t in chosen["own"].items()}
    assert set(chosen["lowered"]) == {lab for lab, t in chosen["own"].items() if chosen["imitation"][lab] < t}
    # The check and the recorded dev scores are those of the thresholds it ships with.
    check = saved.hyper["distillation"]["check"]
    assert check["student"] == {k: saved.dev_metrics["recall_first"][k] for k in ("f2", "recall")}


def test_a_student_threshold_rule_is_checked_before_training(teacher, tmp_path):
    from pipeline.tagger import TrainConfig, train_tagger

    with pytest.raises(TrainingError, match="distill_thresholds must be"):
        train_tagger(TrainConfig(_dialogues(), name="s", out_dir=tmp_path, teacher=teacher, num_layers=1,
                                 distill_thresholds="teacher", **TINY))
    assert not any(tmp_path.iterdir())


def test_dev_dialogues_from_the_caller_are_recorded_as_theirs(teacher, tmp_path):
    from pipeline.tagger import TrainConfig, train_tagger

    dialogues = _dialogues()
    student = train_tagger(TrainConfig(dialogues[2:], dialogues[:2], name="s", out_dir=tmp_path, teacher=teacher,
                           num_layers=1, **TINY))
    check = student.hyper["distillation"]["check"]
    assert check["dev"] == "caller" and "teacher_dev_dialogues" not in check
    assert check["dev_dialogues"] == 2 and student.dev_ids == ("t0", "t1")


def _distilled(distillation: dict | None) -> ModelInfo:
    """A version whose training was sound, with ``hyper.distillation`` (``None``: not distilled)."""
    return ModelInfo(
        name="s", version="1", path="", base_model="b", scheme="bio", labels=("NAME",), data_hash="h",
        created_at="", training_seconds=1.0, hyper={"distillation": distillation} if distillation else {},
        training={"steps": 9, "planned_steps": 9, "stopped": "epochs", "dev_score": 0.9, "min_dev_score": 0.5},
    )


def _checked(student_f2: float, student_recall: float = 0.95) -> dict:
    return {"teacher": "t/1", "check": {
        "policy": "recall_first", "dev_dialogues": 6, "teacher": {"f2": 0.876, "recall": 0.95},
        "student": {"f2": student_f2, "recall": student_recall}, "tolerance": 0.01}}  # blockers read the figures


def test_a_student_behind_its_teacher_cannot_become_active():
    from pipeline.tagger import activation_blockers

    cases = [
        (None, []),  # not distilled: unaffected
        (_checked(0.866), []),  # exactly the tolerance under: kept
        (_checked(0.88, 0.96), []),
        (_checked(0.861), ["the student's dev F2 0.861 is 0.015 under its teacher's 0.876 (tolerance 0.01)"]),
        (_checked(0.876, 0.93), ["the student's dev recall 0.930 is 0.020 under its teacher's 0.950 (tolerance 0.01)"]),
        ({"teacher": "t/1"}, ["it was distilled without a check against its teacher on dev (distilled before "
                              "the check was recorded, or with no dev split); retrain it"]),
    ]
    assert [activation_blockers(_distilled(d)) for d, _ in cases] == [b for _, b in cases]


def test_a_student_behind_its_teacher_cannot_be_the_default(student, tmp_path):
    import shutil

    from pipeline.tagger import ModelNotFoundError, read_info, resolve, set_default
    from pipeline.tagger.store import update_info

    copy = tmp_path / "student" / student.version
    shutil.copytree(student.path, copy)
    distillation = student.hyper["distillation"]
    teacher_f2 = distillation["check"]["teacher"]["f2"]
    behind = {**distillation["check"], "student": {"f2": teacher_f2 - 0.02, "recall": 1.0}}
    update_info(copy, hyper={**student.hyper, "distillation": {**distillation, "check": behind}})
    with pytest.raises(ModelNotFoundError, match="the student's dev F2 .* under its teacher's"):
        set_default(tmp_path, read_info(copy), by="test")
    level = {**distillation["check"], "student": dict(distillation["check"]["teacher"])}
    update_info(copy, hyper={**student.hyper, "distillation": {**distillation, "check": level}})
    set_default(tmp_path, read_info(copy), by="test")
    assert resolve(root=tmp_path).version == student.version
