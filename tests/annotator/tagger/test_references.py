"""Every model reference is checked against the project, a reference
of any length is an error message (not a 500), and one training at a time per project."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from annotator.models import BackgroundJob, Project
from annotator.services import jobs, runs, tagger
from annotator.services.projects import project_create
from tests.annotator.tagger.test_retrain import fake_version

pytestmark = pytest.mark.django_db

VERSION = "20260101-000000-aaaa"


@pytest.fixture
def other_version(settings, db):
    """A usable version of another project's tagger (trained on that project's gold)."""
    project_create(name="Other project", slug="other")
    return fake_version(settings, VERSION, name="other")


def test_an_admin_cannot_activate_another_projects_tagger(other_version, project, members, client):
    """The repro: B's admin POSTs activate=<a version of A> and B's active tagger became A's model."""
    client.force_login(members["admin"])
    response = client.post("/p/test/tagger/activate/", {"version": other_version.full_version}, follow=True)
    assert response.status_code == 200
    assert f"{other_version.full_version} is not a version of test&#x27;s tagger" in response.content.decode()
    assert Project.objects.get(pk=project.pk).active_tagger == ""
    with pytest.raises(tagger.TaggerError, match="not a version of test's tagger"):
        tagger.tagger_activate(project=project, version=other_version.full_version)


def test_a_run_names_a_version_of_its_own_project_only(other_version, corpus, settings):
    own = fake_version(settings, VERSION)
    cfg = runs.detector_config(project=corpus, detector="tagger", config={"version": own.full_version})
    assert cfg["model_path"] == str(own.path) and "version" not in cfg
    ensemble = runs.detector_config(project=corpus, detector="ensemble", config={"tagger": {"version": own.full_version}})
    assert ensemble["tagger"]["model_path"] == str(own.path)
    for config in ({"version": other_version.full_version}, {"tagger": {"version": other_version.full_version}}):
        with pytest.raises(runs.RunError, match="not a version of test's tagger"):
            runs.run_start(project=corpus, detector="ensemble" if "tagger" in config else "tagger", config=config)


@pytest.mark.parametrize(("action", "field"), [("activate", "version"), ("distil", "teacher")])
@pytest.mark.parametrize("version", ["x" * 5000, "test/" + "x" * 5000, "test/a\x00b", "test/../other"],
                         ids=["5000 characters", "test/ and 5000", "a NUL", "a parent"])
def test_a_version_of_any_length_is_an_error_message_not_a_500(project, members, client, action, field, version):
    """The repro: a 5,000-character version gave 500 (File name too long)."""
    client.force_login(members["admin"])
    response = client.post(f"/p/test/tagger/{action}/", {field: version}, follow=True)
    assert response.status_code == 200
    assert re.search("is not a model version|is not a version of test&#x27;s tagger", response.content.decode())
    assert not BackgroundJob.objects.exists()


def test_train_queues_one_training_at_a_time(project, members, client):
    """The repro: four clicks on Train queued four trainings."""
    client.force_login(members["admin"])
    form = {"use_gold": "on", "synthetic": "20"}
    first = client.post("/p/test/tagger/train/", form)  # queued: its task runs on commit
    second = client.post("/p/test/tagger/train/", form, follow=True)
    job = BackgroundJob.objects.get()
    assert first["Location"] == second.redirect_chain[0][0] == f"/p/test/jobs/{job.pk}/"
    assert "A training is already queued; no second one was started." in second.content.decode()


def test_a_lost_training_does_not_block_the_next_for_good(project, members):
    lost, created = tagger.tagger_train_job_start(project=project, user=members["admin"], synthetic=1, use_gold=False)
    assert created
    BackgroundJob.objects.filter(pk=lost.pk).update(status="running", started_at=timezone.now() - jobs.STALE_AFTER * 2)
    job, created = tagger.tagger_train_job_start(project=project, user=members["admin"], synthetic=1, use_gold=False)
    assert created and job.pk != lost.pk
    lost.refresh_from_db()
    assert lost.status == "failed" and "No worker finished this training" in lost.error
