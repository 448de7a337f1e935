"""Every project starts with the day-one model. A new project's tagger is the
deployment's default version until the project trains its own, where that version was trained on
generated dialogues only (it carries no project's gold, so sharing it crosses no boundary); a
version trained on a project's gold stays in that project. The Tagger page and
``tagger_versions`` say which model a project runs and where it came from."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import DetectorRun, Project
from annotator.selectors import tagger as tagger_selectors
from annotator.services import runs, tagger, tagger_retrain
from annotator.services.projects import project_create
from pipeline.tagger.store import gold_free
from tests.annotator.tagger.test_retrain import fake_version

pytestmark = pytest.mark.django_db

TINY = {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0}
GENERATED = {"sources": {"gold": 0, "file": 0, "generated": 100}}
GOLD = {"sources": {"gold": 40, "file": 0, "generated": 100}}


def run(name: str, *args, **opts) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO(), **opts)
    return out.getvalue()


def _default(settings, hyper: dict, name: str = "demo", version: str = "20260101-000000-aaaa", **extra):
    """A stored version of project ``name``, made the deployment's default."""
    if not Project.objects.filter(slug=name).exists():
        project_create(name=name.title(), slug=name)
    info = fake_version(settings, version, name=name, hyper=hyper, **extra)
    tagger.tagger_default_set(version=info.full_version)
    return info


# ------------------------------------------------------------------------ which versions are shared


@pytest.mark.parametrize(("hyper", "free"), [
    (GENERATED, True),
    (GOLD, False),
    ({"sources": {"gold": 0, "file": 12, "generated": 100}}, False),  # a labelled file may be someone's gold
    ({"sources": {"gold": 0, "file": 0, "generated": 0}}, False),
    ({"data_options": {"use_gold": False, "jsonl": None, "synthetic": 100, "seed": 1}}, True),  # recorded before sources
    ({"data_options": {"use_gold": True, "jsonl": None, "synthetic": 100, "seed": 1}}, False),
    ({}, False),  # nothing recorded: counted as gold
], ids=["generated", "gold", "file", "nothing", "legacy generated", "legacy gold", "unknown"])
def test_a_version_is_gold_free_only_when_its_training_data_was_generated(settings, hyper, free):
    assert gold_free(fake_version(settings, "20260101-000000-aaaa", hyper=hyper)) is free


def test_a_student_or_warm_start_is_gold_free_only_with_its_parent(settings):
    teacher = fake_version(settings, "20260101-000000-aaaa", hyper=GENERATED)
    gold_teacher = fake_version(settings, "20260101-000000-bbbb", hyper=GOLD)
    found = {v.full_version: v for v in (teacher, gold_teacher)}
    for field in ("distilled_from", "warm_started_from"):
        child = fake_version(settings, f"20260102-000000-{field[:4]}", hyper=GENERATED,
                             **{field: teacher.full_version})
        assert gold_free(child, found.get)
        assert not gold_free(child)  # a parent that cannot be found counts as gold
        other = fake_version(settings, f"20260103-000000-{field[:4]}", hyper=GENERATED,
                             **{field: gold_teacher.full_version})
        assert not gold_free(other, found.get)


# ------------------------------------------------------------------------------ a new project


def test_a_new_project_runs_the_generated_default_until_it_trains_its_own(settings, project):
    default = _default(settings, GENERATED)
    runs_on = tagger_selectors.project_tagger(project)
    assert (runs_on.version, runs_on.source) == (default.full_version, "default")
    assert "generated dialogues only" in runs_on.note
    cfg = runs.detector_config(project=project, detector="tagger", config={})
    assert cfg["model_path"] == str(settings.BLINDSPOT_MODELS_DIR / default.full_version)
    assert runs.detector_config(project=project, detector="ensemble", config={})["tagger"]["model_path"] == cfg["model_path"]
    # a run may name it, and the admin may make it active here (pinned, whatever the default becomes)
    assert runs.detector_config(project=project, detector="tagger",
                                config={"version": default.full_version})["model_path"] == cfg["model_path"]
    tagger.tagger_activate(project=project, version=default.full_version)
    assert tagger_selectors.project_tagger(project).source == "shared"
    # once it trains its own, its own runs
    own = fake_version(settings, "20260301-000000-cccc")
    tagger.tagger_activate(project=project, version=own.full_version)
    assert tagger_selectors.project_tagger(project).version == own.full_version


def test_a_default_trained_on_a_projects_gold_stays_in_that_project(settings, project, members, client):
    default = _default(settings, GOLD, name="other")
    runs_on = tagger_selectors.project_tagger(project)
    assert not runs_on and "trained on another project's gold" in runs_on.note
    assert "other/" not in runs_on.note  # another project's version is not named to this one
    with pytest.raises(runs.RunError, match=r"has no active tagger \(the deployment's default version was trained on "
                                            r"another project's gold"):
        runs.run_start(project=project, detector="tagger")
    for ref in (default.full_version, "other/20991231-000000-ffff"):  # existing or not: the same answer
        with pytest.raises(tagger.TaggerError, match=f"{ref} is not a version of test's tagger"):
            tagger.tagger_activate(project=project, version=ref)
        with pytest.raises(runs.RunError, match="is not a version of test's tagger"):
            runs.run_start(project=project, detector="tagger", config={"version": ref})
    # the project that trained it runs it as ever
    other = Project.objects.get(slug="other")
    assert tagger_selectors.project_tagger(other).version == default.full_version


def test_without_a_default_a_new_project_is_told_to_train(project):
    runs_on = tagger_selectors.project_tagger(project)
    assert not runs_on and runs_on.note == "the deployment has no default version"
    with pytest.raises(runs.RunError, match="has no active tagger .*: train one"):
        runs.run_start(project=project, detector="tagger")


def test_a_blocked_default_is_not_run(settings, project):
    from tests.annotator.tagger.test_retrain import CUT

    info = fake_version(settings, "20260101-000000-aaaa", name="demo", hyper=GENERATED)
    tagger.tagger_default_set(version=info.full_version)
    fake_version(settings, "20260101-000000-aaaa", training=CUT, name="demo2", hyper=GENERATED)
    (settings.BLINDSPOT_MODELS_DIR / "default.json").write_text(json.dumps({"version": "demo2/20260101-000000-aaaa"}))
    runs_on = tagger_selectors.project_tagger(project)
    assert not runs_on and "cannot run: training stopped early" in runs_on.note


def test_the_page_and_the_command_say_which_model_runs_and_where_it_came_from(settings, project, members, client):
    default = _default(settings, GENERATED)
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert f"This project's tagger runs <span class=\"mono\">{default.full_version}</span>" in page
    assert "the deployment&#x27;s default version, trained on generated dialogues only" in page
    out = run("tagger_versions", project="test")
    assert (f"test: 0 versions, active: none\n  Runs {default.full_version}: the deployment's default version, "
            "trained on generated dialogues only (no project's gold), until this project trains its own.") in out
    said = run("tagger_activate", default.full_version, project="test")
    assert f"{default.full_version} is now the active tagger of test" in said
    assert (f"Runs {default.full_version}: a version trained on generated dialogues only (no project's gold), "
            "made active here.") in run("tagger_versions", project="test")


# --------------------------------------------------------------- the repro, with a real tiny model


@pytest.mark.slow
def test_create_import_and_run_the_tagger_with_the_day_one_model(settings, tmp_path):
    """The repro: create_project, import, run_detector --detector tagger said "has no active tagger:
    train one"; tagger_activate of the default was refused. Now the new project runs the default
    (a tiny model trained on generated dialogues only, as the demo's first tagger is)."""
    demo = project_create(name="Demo", slug="demo")
    info = tagger.tagger_train(project=demo, use_gold=False, synthetic=6, options=TINY, student=False)
    assert info.hyper["sources"] == {"gold": 0, "file": 0, "generated": 6}
    tagger.tagger_default_publish(project=demo)
    run("create_project", "Tm5", slug="tm5")
    corpus = tmp_path / "chats.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "messages": [
        {"speaker": "tutor", "text": "Hi Maria, what is 3/4 of 12?"}, {"speaker": "student", "text": "9"}]}) + "\n"
        for i in range(3)))
    run("import_corpus", str(corpus), project="tm5")
    said = run("run_detector", project="tm5", detector="tagger")
    assert "succeeded" in said
    made = DetectorRun.objects.get(project__slug="tm5", detector="tagger")
    assert info.version in made.model_version
    assert made.config["model_path"] == str(settings.BLINDSPOT_MODELS_DIR / info.full_version)
    said = run("tagger_activate", info.full_version, project="tm5")
    assert f"{info.full_version} is now the active tagger of tm5" in said
    # a version trained on tm5's own gold would not be shared back
    with pytest.raises(CommandError, match="is not a version of demo's tagger"):
        fake_version(settings, "20260101-000000-aaaa", name="tm5", hyper=GOLD)
        run("tagger_activate", "tm5/20260101-000000-aaaa", project="demo")


def test_a_retrain_of_a_project_on_the_day_one_model_starts_from_it_and_must_beat_it(settings, project, monkeypatch):
    """The retrain warm-starts from the version the project runs, compares the new one with it on
    the project's dev dialogues, and activates the new one only because it is better."""
    from annotator.services.imports import corpus_import
    from pipeline.synthetic import generate_corpus
    from tests.annotator.tagger.test_retrain import GOOD as TRAINED_WELL
    from tests.annotator.tagger.test_retrain import _forced, _run_job

    corpus_import(project=project, dialogues=generate_corpus(20, 3, max_messages=4, id_prefix="g"),
                  source="gen.jsonl", spans_as="gold")
    default = _default(settings, GENERATED)
    made = _forced(monkeypatch, settings, TRAINED_WELL, better=True)  # its fake training; the real comparison:
    monkeypatch.setattr(tagger_retrain, "_compare", _REAL_COMPARE)
    compared = []

    def predictions(version, project, dev):
        compared.append(version)
        gold = {(d.id, m.index): list(m.spans) for d in dev for m in d.messages}
        return gold if version == made[-1].full_version else {k: [] for k in gold}

    monkeypatch.setattr(tagger_retrain, "_predictions", predictions)
    job = _run_job(project)
    assert job.status == "succeeded", job.error
    assert job.params["warm_from"] == default.full_version
    assert compared == [made[0].full_version, default.full_version]
    entry = tagger.version_info(job.result["version"]).activation
    assert entry["compared_with"] == default.full_version and entry["decision"] == "activated"
    assert Project.objects.get(pk=project.pk).active_tagger == made[0].full_version


_REAL_COMPARE = tagger_retrain._compare
