"""Training distils a faster student after the teacher, in the same call (the
command, the Tagger page's job, the demo), and activates it when it passes its check against the
teacher; otherwise the teacher stays active and the page says why. Tiny models: the teacher keeps
2 layers, its student 1, one epoch each; the check's tolerance is set to make the outcome certain."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from annotator.models import BackgroundJob, Project
from annotator.selectors import tagger as tagger_selectors
from annotator.services import tagger
from pipeline.tagger.training import distillation

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

pytest.importorskip("torch")

TINY = {"epochs": 1, "num_layers": 2, "check_precision": False, "min_dev_score": 0.0}


@pytest.fixture
def tiny_student(settings):
    settings.BLINDSPOT_TAGGER_STUDENT = {"num_layers": 1, "epochs": 1, "student_generated": 0}
    settings.BLINDSPOT_TAGGER_ONNX = False


def _tolerance(monkeypatch, value: float) -> None:
    """The check's tolerance: 1 lets any student pass, -1 fails every one (its gap is over -1)."""
    monkeypatch.setattr(distillation, "DISTILL_TOLERANCE", value)


def test_a_student_that_passes_its_check_becomes_active_in_its_teachers_place(corpus, tiny_student, monkeypatch):
    _tolerance(monkeypatch, 1.0)
    teacher = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=TINY)
    student = tagger.version_info(teacher.student["version"])
    assert teacher.student == {"version": student.full_version, "used": True, "reason": ""}
    assert student.distilled_from == teacher.full_version and student.hyper["num_layers"] == 1
    assert student.hyper["distillation"]["check"]["dev"] == "teacher"  # scored on the teacher's dev
    assert student.hyper["data_options"] == teacher.hyper["data_options"]
    assert Project.objects.get(pk=corpus.pk).active_tagger == student.full_version
    note = tagger_selectors.student_note(tagger.version_info(teacher.full_version))
    assert note == f"its student {student.full_version} is used in its place (passed its check)"


def test_a_student_that_fails_its_check_leaves_the_teacher_active_and_the_page_says_why(
        corpus, tiny_student, monkeypatch, client, members):
    _tolerance(monkeypatch, -1.0)
    out = StringIO()
    call_command("train_tagger", project="test", synthetic=3, epochs=1, layers=2, min_dev_score=0, stdout=out,
                 stderr=StringIO())
    [student, teacher] = tagger_selectors.tagger_versions(corpus)  # newest first
    assert teacher.student["version"] == student.full_version and not teacher.student["used"]
    assert "the student's dev F2" in teacher.student["reason"] and "(tolerance -1)" in teacher.student["reason"]
    assert Project.objects.get(pk=corpus.pk).active_tagger == teacher.full_version
    text = out.getvalue()
    assert f"Student not used: {teacher.student['reason']}." in text
    assert f"{teacher.full_version} is now the active tagger of test." in text
    assert f"{teacher.full_version} is now the default tagger of commands without a project" in text
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert f"student not used ({student.full_version}): the student&#x27;s dev F2" in page


def test_no_student_skips_it_and_a_teacher_too_small_to_shrink_says_so(corpus, tiny_student):
    call_command("train_tagger", project="test", synthetic=3, epochs=1, layers=2, min_dev_score=0, no_student=True,
                 stdout=StringIO(), stderr=StringIO())
    [only] = tagger_selectors.tagger_versions(corpus)
    assert only.student == {}
    teacher = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options={**TINY, "num_layers": 1})
    assert teacher.student == {"version": None, "used": False,
                               "reason": "the teacher has 1 encoder layer, no more than a student's 1"}
    assert Project.objects.get(pk=corpus.pk).active_tagger == teacher.full_version


def test_the_pages_training_job_distils_the_student_in_the_same_job(corpus, tiny_student, monkeypatch, settings):
    _tolerance(monkeypatch, 1.0)
    seen = []
    real = tagger.tagger_train

    def small(**kw):  # the page's job with the tiny options, the rest as it calls it
        seen.append(kw.get("student", True))
        return real(**{**kw, "options": TINY})

    monkeypatch.setattr(tagger, "tagger_train", small)
    job = BackgroundJob.objects.create(project=corpus, kind=BackgroundJob.Kind.TRAIN,
                                       params={"synthetic": 3, "use_gold": True})
    tagger.tagger_train_job_run(job)
    job.refresh_from_db()
    assert job.status == "succeeded" and seen == [True]
    assert job.result["student"]["used"] and job.result["active"] == job.result["student"]["version"]
    assert job.result["version"] != job.result["active"]  # the teacher's version, the student active
    # the active version's runtime is measured in the job: the project's first run reads it
    from annotator.selectors.tagger import stored_info
    from pipeline.tagger.backends import cached_choice

    chosen = cached_choice(stored_info(job.result["active"]))
    assert chosen is not None and job.result["runtime"] == chosen["reason"]
