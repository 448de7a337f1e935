"""``manage.py train_tagger --distill-from NAME/VERSION``: a smaller student of a saved version."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.selectors import tagger as tagger_selectors
from annotator.services import tagger

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

pytest.importorskip("torch")

TINY = {"epochs": 1, "num_layers": 2, "check_precision": False, "min_dev_score": 0.0}


@pytest.fixture
def teacher(corpus):
    return tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=TINY)


def test_distill_from_a_version_trains_a_student_that_names_its_teacher(teacher, corpus):
    call_command("train_tagger", project="test", synthetic=3, distill_from=teacher.full_version,
                 layers=1, epochs=1, min_dev_score=0)

    student = tagger_selectors.tagger_versions(corpus)[0]
    assert student.full_version != teacher.full_version
    assert student.distilled_from == teacher.full_version
    assert student.hyper["num_layers"] == 1 and student.hyper["distillation"]["kept_layers"] == [0]


def test_distill_from_takes_the_student_recipe_and_a_directory(teacher, monkeypatch):
    seen = {}

    def fake_train(**kw):
        seen.update(kw["options"])
        raise tagger.TaggerError("stop here")

    monkeypatch.setattr(tagger, "tagger_train", fake_train)  # the workflow the page's job shares
    for ref in (teacher.full_version, teacher.path):
        with pytest.raises(CommandError, match="stop here"):
            call_command("train_tagger", project="test", synthetic=1, distill_from=ref)
        assert seen == {"teacher": str(teacher.path), "num_layers": 2, "student_feed_forward": 768,
                        "student_generated": 300, "epochs": 5, "patience": 2}
    with pytest.raises(CommandError, match="stop here"):
        call_command("train_tagger", project="test", synthetic=1, distill_from=teacher.path, epochs=1)
    assert seen["epochs"] == 1  # what is given wins
    with pytest.raises(CommandError, match="stop here"):
        call_command("train_tagger", project="test", synthetic=1, distill_from=teacher.path, feed_forward=768)
    assert seen["student_feed_forward"] == 768


def test_feed_forward_without_a_teacher_is_a_clear_error(corpus):
    with pytest.raises(CommandError, match="--feed-forward narrows a student: give --distill-from"):
        call_command("train_tagger", project="test", synthetic=1, feed_forward=768)


def test_an_unknown_teacher_is_a_clear_error(corpus):
    with pytest.raises(CommandError, match="--distill-from"):
        call_command("train_tagger", project="test", synthetic=1, distill_from="test/nope")


def test_the_check_against_the_teacher_is_printed_shown_and_blocks_a_student_behind(teacher, corpus, client,
                                                                                    members):
    from io import StringIO

    from django.utils.html import escape

    from pipeline.tagger.store import update_info

    out = StringIO()
    call_command("train_tagger", project="test", synthetic=3, distill_from=teacher.full_version,
                 layers=1, epochs=1, min_dev_score=0, stdout=out)
    student = tagger_selectors.tagger_versions(corpus)[0]
    distillation = student.hyper["distillation"]
    check = distillation["check"]
    # The same data options as the teacher's: the teacher's dev dialogue, which neither trained on.
    assert student.dev_ids == teacher.dev_ids and len(teacher.dev_ids) == 1
    assert (check["dev"], check["dev_dialogues"], check["teacher_dev_dialogues"]) == ("teacher", 1, 1)
    shown = (f"check against the teacher on its 1 dev dialogue {'passed' if check['passed'] else 'FAILED'}: "
             f"F2 {check['student']['f2']:.3f} vs {check['teacher']['f2']:.3f}, recall "
             f"{check['student']['recall']:.3f} vs {check['teacher']['recall']:.3f} "
             "(student vs teacher, tolerance 0.01)")
    assert f"Distilled from {teacher.full_version}: {shown}." in out.getvalue()
    client.force_login(members["admin"])
    assert shown in client.get("/p/test/tagger/").content.decode()

    behind = {**check, "teacher": {"f2": 0.876, "recall": 0.95}, "student": {"f2": 0.861, "recall": 0.95},
              "passed": False}
    update_info(student.path, hyper={**student.hyper, "distillation": {**distillation, "check": behind}})
    reason = "the student's dev F2 0.861 is 0.015 under its teacher's 0.876 (tolerance 0.01)"
    page = client.get("/p/test/tagger/").content.decode()
    assert f"Cannot become active: {escape(reason)}" in page
    assert "its 1 dev dialogue FAILED: F2 0.861 vs 0.876, recall 0.950 vs 0.950" in page
    with pytest.raises(tagger.TaggerError, match="0.015 under its teacher's"):
        tagger.tagger_activate(project=corpus, version=student.full_version)
    assert student.full_version not in [v.full_version for v in tagger_selectors.usable_versions(corpus)]


def test_a_teacher_whose_dev_is_not_in_the_data_is_refused_unless_dev_dialogues_are_given(
        corpus, corpus_bytes, settings, tmp_path):
    from pipeline.synthetic import generate_corpus
    from pipeline.tagger import TrainConfig, train_tagger

    teacher = train_tagger(TrainConfig(generate_corpus(4, seed=99, id_prefix="elsewhere"), name="bench", labels=corpus.labels,
                           out_dir=settings.BLINDSPOT_MODELS_DIR, base_model=settings.BLINDSPOT_TAGGER_BASE or None,
                           **TINY))
    with pytest.raises(CommandError, match=r"none of its dev dialogues \(1, e.g. 'elsewhere-99-000\d\d'\) is in the data.* \(--dev-jsonl PATH\)$"):
        call_command("train_tagger", project="test", synthetic=3, distill_from=teacher.path, epochs=1,
                     min_dev_score=0)
    assert [v.full_version for v in tagger_selectors.tagger_versions(corpus)] == []

    dev = tmp_path / "dev.jsonl"
    dev.write_bytes(corpus_bytes)
    call_command("train_tagger", project="test", no_gold=True, synthetic=3, distill_from=teacher.path,
                 dev_jsonl=str(dev), layers=1, epochs=1, min_dev_score=0)
    student = tagger_selectors.tagger_versions(corpus)[0]
    check = student.hyper["distillation"]["check"]
    assert (check["dev"], check["dev_dialogues"]) == ("caller", student.data["dev"]["dialogues"])
    assert tagger_selectors.distillation_summary(student).startswith(
        f"check against the teacher on {check['dev_dialogues']} dev dialogues given for dev ")
