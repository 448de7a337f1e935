"""``manage.py train_tagger --distill-from NAME/VERSION``: a smaller student of a saved version."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

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

    student = tagger.tagger_versions(corpus)[0]
    assert student.full_version != teacher.full_version
    assert student.distilled_from == teacher.full_version
    assert student.hyper["num_layers"] == 1 and student.hyper["distillation"]["kept_layers"] == [0]


def test_distill_from_takes_the_student_recipe_and_a_directory(teacher, monkeypatch):
    from annotator.management.commands import train_tagger as command

    seen = {}

    def fake_train(**kw):
        seen.update(kw["options"])
        raise tagger.TaggerError("stop here")

    monkeypatch.setattr(command, "tagger_train", fake_train)
    for ref in (teacher.full_version, teacher.path):
        with pytest.raises(CommandError, match="stop here"):
            call_command("train_tagger", project="test", synthetic=1, distill_from=ref)
        assert seen == {"teacher": str(teacher.path), "num_layers": 2, "epochs": 5, "patience": 2}
    with pytest.raises(CommandError, match="stop here"):
        call_command("train_tagger", project="test", synthetic=1, distill_from=teacher.path, epochs=1)
    assert seen["epochs"] == 1  # what is given wins


def test_an_unknown_teacher_is_a_clear_error(corpus):
    with pytest.raises(CommandError, match="--distill-from"):
        call_command("train_tagger", project="test", synthetic=1, distill_from="test/nope")
