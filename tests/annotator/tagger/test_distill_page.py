"""The Tagger page's "Distil a faster student": the command's distillation as a background job."""

import pytest
from django.utils.html import escape

from annotator.models import BackgroundJob
from annotator.selectors import tagger as tagger_selectors
from annotator.services import tagger

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

pytest.importorskip("torch")

TINY = {"epochs": 1, "num_layers": 2, "check_precision": False, "min_dev_score": 0.0}
BUTTON = 'name="teacher"'


@pytest.fixture
def teacher(corpus):
    return tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=TINY)


@pytest.fixture
def tiny_recipe(monkeypatch):
    """The student recipe the service distils with, shrunk so the job trains in seconds (the page
    passes no options)."""
    monkeypatch.setattr(tagger, "STUDENT_DEFAULTS", {**TINY, "num_layers": 1})


def test_only_an_admin_distils_from_the_page_and_the_student_appears_with_its_check(
        teacher, tiny_recipe, corpus, client, members, django_capture_on_commit_callbacks):
    assert teacher.hyper["data_options"] == {"use_gold": True, "jsonl": None, "synthetic": 3, "seed": 1234}
    for role in ("annotator", "adjudicator"):
        client.force_login(members[role])
        assert client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version}).status_code == 403
    assert not BackgroundJob.objects.exists()

    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert page.count(BUTTON) == 1 and f'{BUTTON} value="{teacher.full_version}"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version})
    job = BackgroundJob.objects.get()
    assert response["Location"].endswith(f"/jobs/{job.pk}/")
    assert job.status == "succeeded", job.error
    assert job.params == {"distill_from": teacher.full_version, **teacher.hyper["data_options"]}

    student = tagger_selectors.tagger_versions(corpus)[0]
    assert student.distilled_from == teacher.full_version == job.result["distilled_from"]
    assert student.hyper["num_layers"] == 1
    # The teacher's data: its dev dialogue is found, so the check ran on the teacher's dev.
    assert student.dev_ids == teacher.dev_ids
    assert student.hyper["distillation"]["check"]["dev"] == "teacher"
    page = client.get("/p/test/tagger/").content.decode()
    assert f"distilled from <span class=\"mono\">{teacher.full_version}</span>" in page
    assert escape(tagger_selectors.distillation_summary(student)) in page
    assert page.count(BUTTON) == 1  # a student is not offered for distillation
    corpus.refresh_from_db()  # activated as after any training: only when nothing blocks it
    blocked = bool(tagger_selectors.version_blockers(student))
    assert corpus.active_tagger == (teacher.full_version if blocked else student.full_version)


def test_a_second_click_while_one_is_queued_starts_nothing_new(teacher, client, members):
    client.force_login(members["admin"])
    first = client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version})  # queued: its task runs on commit
    second = client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version}, follow=True)
    job = BackgroundJob.objects.get()
    assert first["Location"] == second.redirect_chain[0][0] == f"/p/test/jobs/{job.pk}/"
    assert "A distillation is already queued; no second one was started." in second.content.decode()
    assert "A distillation is queued: " in client.get("/p/test/tagger/").content.decode()


def test_a_lost_distillation_does_not_block_the_next_for_good(teacher, corpus, members):
    from django.utils import timezone

    from annotator.services import jobs

    lost, created = tagger.tagger_distil_job_start(project=corpus, user=members["admin"], teacher=teacher.full_version)
    assert created
    BackgroundJob.objects.filter(pk=lost.pk).update(status="running", started_at=timezone.now() - jobs.STALE_AFTER * 2)
    job, created = tagger.tagger_distil_job_start(project=corpus, user=members["admin"], teacher=teacher.full_version)
    assert created and job.pk != lost.pk
    lost.refresh_from_db()
    assert lost.status == "failed" and "No worker finished this distillation" in lost.error


def test_a_version_without_dev_ids_is_not_offered_and_is_refused(teacher, corpus, client, members):
    from pipeline.tagger.store import update_info

    update_info(teacher.path, dev_ids=[])
    client.force_login(members["admin"])
    assert BUTTON not in client.get("/p/test/tagger/").content.decode()
    response = client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version}, follow=True)
    assert response.redirect_chain[-1][0] == "/p/test/tagger/"
    assert (f"{teacher.full_version} cannot be distilled: it recorded no dev dialogue ids"
            in response.content.decode())
    assert not BackgroundJob.objects.exists()


def test_a_teacher_whose_dev_is_not_in_its_data_fails_the_job_with_its_message_and_saves_nothing(
        teacher, tiny_recipe, corpus, client, members, django_capture_on_commit_callbacks):
    from pipeline.tagger.store import update_info

    update_info(teacher.path, dev_ids=["nowhere-1"])
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/p/test/tagger/distil/", {"teacher": teacher.full_version})
    job = BackgroundJob.objects.get()
    assert job.status == "failed"
    assert job.error.startswith(f"teacher {teacher.full_version}: none of its dev dialogues (1, e.g. 'nowhere-1')")
    assert "\n" not in job.error
    assert escape(job.error) in client.get(f"/p/test/jobs/{job.pk}/").content.decode()
    assert [v.full_version for v in tagger_selectors.tagger_versions(corpus)] == [teacher.full_version]


def test_a_teacher_trained_before_data_options_were_recorded_takes_its_training_jobs(teacher, corpus):
    from pipeline.tagger.store import update_info

    hyper = {k: v for k, v in teacher.hyper.items() if k != "data_options"}
    older = update_info(teacher.path, hyper=hyper)
    assert tagger.teacher_data_options(corpus, older) == {"use_gold": True, "jsonl": None, "synthetic": 0,
                                                          "seed": 1234}
    BackgroundJob.objects.create(project=corpus, kind="train", status="succeeded",
                                 params={"synthetic": 3, "use_gold": False},
                                 result={"version": teacher.full_version})
    assert tagger.teacher_data_options(corpus, older) == {"use_gold": False, "jsonl": None, "synthetic": 3,
                                                          "seed": 1234}


def test_the_page_says_which_thresholds_a_student_lowered():
    from types import SimpleNamespace

    def student(chosen):
        return SimpleNamespace(hyper={"distillation": {"thresholds": chosen}})

    lowered = {"NAME": {"own": 0.45, "kept": 0.2}}
    assert tagger_selectors.threshold_note(student({"rule": "imitate", "lowered": lowered})) == (
        "thresholds lowered to those at which it best reproduces its teacher's spans where its own tuned "
        "on dev were higher: NAME 0.45 → 0.2")
    assert "to its teacher's own where" in tagger_selectors.threshold_note(student({"rule": "lower", "lowered": lowered}))
    assert tagger_selectors.threshold_note(student({"rule": "imitate", "lowered": {}})) == ""
    assert tagger_selectors.threshold_note(SimpleNamespace(hyper={})) == ""  # not a student
