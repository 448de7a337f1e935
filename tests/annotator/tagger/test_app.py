"""The tagger inside the app: train from gold (+ synthetic), version, activate, run, record the version."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import BackgroundJob, DetectorRun
from annotator.selectors import tagger as tagger_selectors
from annotator.services import runs, tagger

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

TINY = {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0}  # a tiny test model may score under the floor


@pytest.fixture
def trained(corpus, settings):
    info = tagger.tagger_train(project=corpus, use_gold=True, synthetic=3, options=TINY)
    corpus.refresh_from_db()
    return corpus, info


def test_gold_dialogues_carry_gold_spans(corpus):
    dialogues = {d.id: d for d in tagger.gold_dialogues(corpus)}
    assert set(dialogues) == {"d1", "d2"}
    assert [(s.label, dialogues["d1"].messages[0].text[s.start:s.end]) for s in dialogues["d1"].messages[0].spans] \
        == [("NAME", "Maria")]


def test_train_activate_and_run(trained, settings, django_capture_on_commit_callbacks):
    project, info = trained
    assert project.active_tagger == info.full_version
    assert [v.full_version for v in tagger_selectors.tagger_versions(project)] == [info.full_version]
    assert (settings.BLINDSPOT_MODELS_DIR / info.full_version / "tagger.json").exists()
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=project, detector="tagger")
        runs.run_enqueue(run)
    run = DetectorRun.objects.get(pk=run.pk)
    assert run.status == "succeeded", run.error
    assert info.version in run.model_version
    assert run.config["policy"] == "strict"


def test_activating_an_unknown_version_is_refused(corpus):
    with pytest.raises(tagger.TaggerError):
        tagger.tagger_activate(project=corpus, version="test/nope")
    with pytest.raises(tagger.TaggerError):
        tagger.tagger_activate(project=corpus, version="../../etc")


def test_no_training_data_is_a_clear_error(project):
    with pytest.raises(CommandError, match="No training data"):
        call_command("train_tagger", project="test")


def test_tagger_page_lists_versions_and_trains_as_a_job(client, members, trained, monkeypatch,
                                                        django_capture_on_commit_callbacks):
    project, info = trained
    client.force_login(members["annotator"])
    assert client.get("/p/test/tagger/").status_code == 403
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert info.full_version in page and "active" in page
    monkeypatch.setattr(tagger, "tagger_train",
                        lambda **kw: (_ for _ in ()).throw(tagger.TaggerError("no data, for the test")))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/tagger/train/", {"use_gold": "on", "synthetic": "0"})
    job = BackgroundJob.objects.get(kind="train")
    assert response["Location"].endswith(f"/jobs/{job.pk}/")
    assert job.status == "failed" and "no data, for the test" in job.error


def test_train_command_passes_layers_and_refuses_bad_ones(project, monkeypatch):
    from annotator.management.commands import train_tagger as command

    seen = {}

    def fake_train(**kw):
        seen.update(kw["options"])
        raise tagger.TaggerError("stop here")

    monkeypatch.setattr(command, "tagger_train", fake_train)
    with pytest.raises(CommandError, match="stop here"):
        call_command("train_tagger", project="test", synthetic=1, layers=3, epochs=2)
    assert seen == {"num_layers": 3, "epochs": 2}
    with pytest.raises(CommandError, match="layers"):
        call_command("train_tagger", "--project", "test", "--layers", "0")
