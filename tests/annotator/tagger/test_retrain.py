"""The model in the loop inside the app: activation refused for blocked versions, retrains queued
once per project by gold growth or on demand, decisions recorded both ways, the Tagger page."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotator.models import AuditEvent, BackgroundJob, Project
from annotator.selectors import tagger as tagger_selectors
from annotator.services import jobs, runs, tagger, tagger_retrain
from annotator.services.adjudication import adjudication_submit, gold_merge_ready
from pipeline.metrics.comparison import compare_versions
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db

GOOD = {"steps": 40, "planned_steps": 40, "warmup_steps": 2, "stopped": "epochs", "max_seconds": None,
        "diverged_at_step": None, "dev_metric": "f2", "dev_score": 0.9, "min_dev_score": 0.5}
CUT = {**GOOD, "steps": 3, "stopped": "time limit", "max_seconds": 20}


def fake_version(settings, version: str, training=GOOD, name: str = "test", **extra):
    """A version's tagger.json without weights: enough for listing, blockers and activation."""
    path = settings.BLINDSPOT_MODELS_DIR / name / version
    path.mkdir(parents=True)
    meta = {"name": name, "version": version, "base_model": "x", "scheme": "bio", "labels": ["NAME"],
            "data_hash": "ab" * 32, "created_at": "2026-01-01T00:00:00+00:00", "training_seconds": 1.0,
            "training": training, **extra}
    (path / "tagger.json").write_text(json.dumps(meta))
    from pipeline.tagger import read_info

    return read_info(path)


# ------------------------------------------------------------------------ never a worse model


def test_activation_refuses_a_blocked_version_with_its_reasons(project, settings):
    cut = fake_version(settings, "20260101-000000-aaaa", CUT)
    with pytest.raises(tagger.TaggerError, match="cannot become the active tagger: training stopped early.*3 of 40"):
        tagger.tagger_activate(project=project, version=cut.full_version)
    old = fake_version(settings, "20250101-000000-bbbb", {})
    with pytest.raises(tagger.TaggerError, match="no 'training' entry"):
        tagger.tagger_activate(project=project, version=old.full_version)
    project.refresh_from_db()
    assert project.active_tagger == ""
    good = fake_version(settings, "20260101-000000-cccc")
    tagger.tagger_activate(project=project, version=good.full_version)
    assert Project.objects.get(pk=project.pk).active_tagger == good.full_version
    assert [v.full_version for v in tagger_selectors.usable_versions(project)] == [good.full_version]


def test_a_run_uses_the_active_version_never_the_newest(corpus, settings):
    fake_version(settings, "20260101-000000-aaaa")
    with pytest.raises(runs.RunError, match="no active tagger"):
        runs.run_start(project=corpus, detector="tagger")
    older = fake_version(settings, "20250101-000000-bbbb")
    tagger.tagger_activate(project=corpus, version=older.full_version)
    cfg = runs.detector_config(project=corpus, detector="tagger", config={})
    assert cfg["model_path"].endswith(older.full_version)


# ------------------------------------------------------------------------------ the trigger


def _and_its_events(capture, write):
    """Run ``write``, then the tasks it queued on commit (eagerly, as without a broker): gold
    growing queues ``retrain_check``, which queues the retrain (left queued here, never run)."""
    with capture() as queued:
        result = write()
    for send in queued:
        send()
    return result


def test_two_merges_queue_one_retrain_and_the_next_waits_for_new_gold(study, members,
                                                                      django_capture_on_commit_callbacks):
    def merge(**kw):
        return _and_its_events(django_capture_on_commit_callbacks, lambda: gold_merge_ready(project=study, **kw))

    Project.objects.filter(pk=study.pk).update(retrain_every=1)
    assert merge(message_ids=[msg(study, "d1", 0).pk])["merged"] == 1
    assert merge(message_ids=[msg(study, "d1", 1).pk])["merged"] == 1
    (job,) = BackgroundJob.objects.filter(project=study, kind="retrain")
    assert job.status == "queued" and job.params == {"trigger": "every 1 gold messages", "gold_messages": 1}
    assert Project.objects.get(pk=study.pk).retrain_gold_mark == 1
    merge()  # nothing new merges
    again, created = tagger_retrain.tagger_retrain_request(project=study)  # "Retrain now" while one is queued
    assert (again, created) == (job, False)
    jobs.job_start(job)
    jobs.job_finish(job, result={})
    item = study.adjudication_items.filter(status="open").first()  # an adjudication adds gold
    _and_its_events(django_capture_on_commit_callbacks, lambda: adjudication_submit(
        item=item, user=members["adjudicator"], spans=[], version=item.version, confirm_drop=True))
    assert BackgroundJob.objects.filter(project=study, kind="retrain").count() == 2
    assert AuditEvent.objects.filter(action="tagger.retrain.queue").count() == 2


def test_merging_gold_queues_the_retrain_check_and_never_retrains_itself(study, django_capture_on_commit_callbacks):
    Project.objects.filter(pk=study.pk).update(retrain_every=1)
    with django_capture_on_commit_callbacks() as queued:
        assert gold_merge_ready(project=study)["merged"] >= 1
    assert not BackgroundJob.objects.filter(kind="retrain").exists()  # only an event so far
    assert len(queued) == 1
    queued[0]()  # the dispatcher sends annotator.tagger.retrain_check (eagerly here)
    assert BackgroundJob.objects.filter(project=study, kind="retrain").count() == 1


def test_no_retrain_below_the_setting_or_when_it_is_off(study, django_capture_on_commit_callbacks):
    _and_its_events(django_capture_on_commit_callbacks, lambda: gold_merge_ready(project=study))  # 0 by default
    assert not BackgroundJob.objects.filter(kind="retrain").exists()
    Project.objects.filter(pk=study.pk).update(retrain_every=5)
    assert tagger_retrain.tagger_retrain_if_due(project=study) is None  # 2 gold messages < 0 + 5


def test_the_database_allows_one_open_retrain_per_project(project):
    from django.db import IntegrityError, transaction

    BackgroundJob.objects.create(project=project, kind="retrain")
    with pytest.raises(IntegrityError), transaction.atomic():
        BackgroundJob.objects.create(project=project, kind="retrain", status="running")
    BackgroundJob.objects.create(project=project, kind="retrain", status="failed")  # finished ones may pile up


# ---------------------------------------------------------------- the job's decision, forced


@pytest.fixture
def gold_project(project):
    """Twenty short generated dialogues imported as gold: enough for a train side and a dev side."""
    from annotator.services.imports import corpus_import
    from pipeline.synthetic import generate_corpus

    corpus_import(project=project, dialogues=generate_corpus(20, 3, max_messages=4, id_prefix="g"),
                  source="gen.jsonl", spans_as="gold")
    return project


def _forced(monkeypatch, settings, training, better: bool):
    """The job with training replaced by a fake version and the comparison by crafted predictions."""
    made = []

    def fake_train(job, project, data, progress):
        n = len(list((settings.BLINDSPOT_MODELS_DIR / "test").glob("2026030*")))
        info = fake_version(settings, f"20260301-00000{n}-ffff", training)
        made.append(info)
        BackgroundJob.objects.filter(pk=job.pk).update(params={**job.params, "trained_version": info.full_version})
        return info

    def fake_compare(project, info, dev, say):
        gold = {(d.id, m.index): list(m.spans) for d in dev for m in d.messages}
        none = {k: [] for k in gold}
        new, old = (gold, none) if better else (none, gold)
        return compare_versions(dev, new, old if project.active_tagger else None, n_boot=200), \
            project.active_tagger or None

    monkeypatch.setattr(tagger_retrain, "_train", fake_train)
    monkeypatch.setattr(tagger_retrain, "_compare", fake_compare)
    return made


def _run_job(project, user=None) -> BackgroundJob:
    job, created = tagger_retrain.tagger_retrain_request(project=project, user=user)
    assert created
    tagger_retrain.tagger_retrain_job_run(job)
    job.refresh_from_db()
    return job


def test_a_better_version_is_activated_and_a_worse_one_kept_as_not_better(gold_project, settings, monkeypatch):
    from pipeline.tagger import read_info

    active = fake_version(settings, "20260201-000000-aaaa")
    tagger.tagger_activate(project=gold_project, version=active.full_version)
    made = _forced(monkeypatch, settings, GOOD, better=True)
    job = _run_job(gold_project)
    assert job.status == "succeeded", job.error
    assert job.result["decision"] == "activated" and job.result["activated"]
    assert Project.objects.get(pk=gold_project.pk).active_tagger == made[0].full_version
    entry = read_info(made[0].path).activation
    assert entry["compared_with"] == active.full_version and entry["job"] == job.pk
    assert entry["data"]["dev_dialogues"] >= 1 and entry["data"]["generated_per_gold"] >= 0
    assert entry["comparison"]["new"]["f2"] == 1.0

    gold_project.refresh_from_db()
    made = _forced(monkeypatch, settings, GOOD, better=False)
    job = _run_job(gold_project)
    assert job.result["decision"] == "not better" and not job.result["activated"]
    assert "not better, the interval reaches 0" in job.result["reason"]
    assert Project.objects.get(pk=gold_project.pk).active_tagger != made[0].full_version
    assert read_info(made[0].path).activation["decision"] == "not better"
    assert AuditEvent.objects.filter(action="tagger.retrain.decide").count() == 2


def test_a_blocked_version_is_never_activated_even_if_it_scores_better(gold_project, settings, monkeypatch):
    made = _forced(monkeypatch, settings, CUT, better=True)
    job = _run_job(gold_project)
    assert job.result["decision"] == "blocked" and "stopped early" in job.result["reason"]
    assert Project.objects.get(pk=gold_project.pk).active_tagger == ""
    assert made


def test_a_redelivered_job_does_not_train_again(gold_project, settings, monkeypatch):
    made = _forced(monkeypatch, settings, GOOD, better=True)
    job, _ = tagger_retrain.tagger_retrain_request(project=gold_project)
    trained = fake_version(settings, "20260301-000009-eeee")
    BackgroundJob.objects.filter(pk=job.pk).update(params={**job.params, "trained_version": trained.full_version},
                                                   status="running")
    job.refresh_from_db()
    tagger_retrain.tagger_retrain_job_run(job)  # the task arrives again after training had finished
    job.refresh_from_db()
    assert not made and job.result["version"] == trained.full_version
    tagger_retrain.tagger_retrain_job_run(job)  # and once more after it finished: nothing happens
    assert AuditEvent.objects.filter(action="tagger.retrain.decide").count() == 1


def test_a_retrain_warm_starts_from_the_active_version_unless_asked_for_a_full_one(gold_project, settings,
                                                                                   monkeypatch):
    from pipeline.tagger.retrain import gold_split

    seen = ["g-3-00000", "g-3-00001", "g-3-00002"]
    active = fake_version(settings, "20260201-000000-aaaa", train_ids=seen)
    tagger.tagger_activate(project=gold_project, version=active.full_version)
    _forced(monkeypatch, settings, GOOD, better=True)
    trained = []
    fake_train = tagger_retrain._train
    monkeypatch.setattr(tagger_retrain, "_train", lambda job, project, data, progress: trained.append(data)
                        or fake_train(job, project, data, progress))
    job = _run_job(gold_project)
    assert job.status == "succeeded", job.error
    assert job.params["warm_from"] == active.full_version
    warm = trained[0]
    assert warm.tune and warm.warm["parent"] == active.full_version
    train_side, dev = gold_split(tagger.gold_dialogues(gold_project))
    new = {d.id for d in train_side} - set(seen)
    used = {d.id for d in [*warm.train, *warm.tune] if d.id.startswith("g-")}
    assert new <= used and warm.warm["new_gold_dialogues"] == len(new)
    assert {d.id for d in warm.dev} == {d.id for d in dev}
    entry = tagger.version_info(job.result["version"]).activation
    assert entry["data"]["warm_start"]["parent"] == active.full_version
    assert entry["decision"] == "activated" and entry["comparison"]["better"]  # the same rule decides

    gold_project.refresh_from_db()
    job, _ = tagger_retrain.tagger_retrain_request(project=gold_project, full=True)
    tagger_retrain.tagger_retrain_job_run(job)
    job.refresh_from_db()
    assert job.params["warm_from"] == "" and trained[1].tune is None
    assert "warm_start" not in tagger.version_info(job.result["version"]).activation["data"]


def test_a_warm_retrain_with_no_new_gold_fails_clearly(gold_project, settings):
    from pipeline.tagger.retrain import gold_split

    train, _ = gold_split(tagger.gold_dialogues(gold_project))
    active = fake_version(settings, "20260201-000000-aaaa", train_ids=[d.id for d in train])
    tagger.tagger_activate(project=gold_project, version=active.full_version)
    job = _run_job(gold_project)
    assert job.status == "failed" and f"no new gold since {active.full_version}" in job.error
    assert "--full" in job.error


def test_too_little_gold_fails_the_job_with_a_clear_error(project):
    job = _run_job(project)
    assert job.status == "failed" and "not enough complete gold dialogues to retrain: 0 so far" in job.error
    assert project.active_tagger == ""


# ------------------------------------------------------------------------------ the page


def test_tagger_page_shows_blockers_decisions_and_the_learning_curve(client, members, project, settings):
    fake_version(settings, "20260101-000000-aaaa", CUT)
    for k, (f2, decision) in enumerate([(0.7, "activated"), (0.75, "not better")]):
        fake_version(settings, f"20260102-00000{k}-bbbb", activation={
            "decision": decision, "reason": f"reason number {k}", "compared_with": None,
            "data": {"gold_messages": 100 * (k + 1)},
            "comparison": {"new": {"f2": f2, "name_recall": 0.9}}})
    fake_version(settings, "20260103-000000-cccc", {**GOOD, "stopped": "step budget"},
                 warm_started_from="test/20260102-000001-bbbb")
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert "warm-started from <span class=\"mono\">test/20260102-000001-bbbb</span>, 40 steps (step budget)" in page
    assert "Cannot become active: training stopped early" in page
    assert 'value="test/20260101-000000-aaaa" disabled' in page
    assert "reason number 1" in page and "not better" in page
    import xml.etree.ElementTree as ET

    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])  # well-formed SVG
    assert len(svg.findall(".//{*}circle")) == 4 and "style" not in page[page.index("<svg"):page.index("</svg>")]
    assert "Learning curve" in page
    assert "Retrain now" in page
    for who, status in (("annotator", 403), ("adjudicator", 403), ("outsider", 404)):
        client.force_login(members[who])
        assert client.get("/p/test/tagger/").status_code == status
        assert client.post("/p/test/tagger/retrain/").status_code == status
    assert not BackgroundJob.objects.filter(kind="retrain").exists()


def test_tagger_page_saves_the_setting_and_retrains_on_demand_once(client, members, project):
    client.force_login(members["admin"])
    assert client.post("/p/test/tagger/retrain/settings/", {"retrain_every": "50"}).status_code == 302
    assert Project.objects.get(pk=project.pk).retrain_every == 50
    page = client.post("/p/test/tagger/retrain/settings/", {"retrain_every": "-1"}).content.decode()
    assert "greater than or equal to 0" in page and Project.objects.get(pk=project.pk).retrain_every == 50
    first = client.post("/p/test/tagger/retrain/")
    second = client.post("/p/test/tagger/retrain/")
    (job,) = BackgroundJob.objects.filter(kind="retrain")
    assert first["Location"] == second["Location"] == f"/p/test/jobs/{job.pk}/"


def test_retrain_command_runs_the_job_and_reports_the_decision(gold_project, settings, monkeypatch, capsys,
                                                               django_capture_on_commit_callbacks):
    _forced(monkeypatch, settings, GOOD, better=True)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("retrain_tagger", project="test")
    out = capsys.readouterr().out
    assert "queued as job" in out and "activated — no active version to beat" in out
    gold_project.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("retrain_tagger", project="test", full=True, max_steps=50)
    job = BackgroundJob.objects.filter(kind="retrain").latest("pk")
    assert job.params["full"] and job.params["warm_from"] == "" and job.params["options"] == {"max_steps": 50}


# ------------------------------------------------------------- a real tagger, the real comparison


@pytest.mark.slow
def test_a_real_retrain_is_activated_then_an_identical_one_is_not_better(gold_project, monkeypatch):
    """Two real retrains of a 1-layer tagger, each scored with the tagger detector on the held-out
    gold: the first has nothing to beat; the second, trained on the same data with the same seed,
    cannot beat the first, so it is kept and marked "not better"."""
    from pipeline.tagger import retrain as plan

    monkeypatch.setattr(plan, "GENERATED_PER_GOLD", 0.5)
    tiny = {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0, "seed": 1}
    first, _ = tagger_retrain.tagger_retrain_request(project=gold_project, options=tiny)
    tagger_retrain.tagger_retrain_job_run(first)
    first.refresh_from_db()
    assert first.status == "succeeded", first.error
    assert first.result["decision"] == "activated" and first.result["reason"] == "no active version to beat"
    gold_project.refresh_from_db()
    assert gold_project.active_tagger == first.result["version"]

    second, _ = tagger_retrain.tagger_retrain_request(project=gold_project, options=tiny, full=True)
    tagger_retrain.tagger_retrain_job_run(second)
    second.refresh_from_db()
    assert second.status == "succeeded", second.error
    assert second.result["decision"] == "not better" and not second.result["activated"]
    assert "interval reaches 0" in second.result["reason"]
    assert Project.objects.get(pk=gold_project.pk).active_tagger == first.result["version"]
    entry = tagger.version_info(second.result["version"]).activation
    assert entry["compared_with"] == first.result["version"]
    data = entry["data"]
    assert data["gold_dialogues"] == 20 and data["dev_dialogues"] >= 1
    assert data["generated_dialogues"] == round(0.5 * data["gold_train_dialogues"])
    assert entry["comparison"]["dialogues"] == data["dev_dialogues"]
    assert len(tagger_selectors.learning_curve(gold_project)) == 2


def test_learning_curve_geometry():
    from annotator import charts

    points = [{"gold_messages": 100, "f2": 0.5, "name_recall": 1.0, "decision": "activated", "version": "a"},
              {"gold_messages": 300, "f2": 1.0, "name_recall": None, "decision": "not better", "version": "b"}]
    chart = charts.learning_curve(points)
    f2, recall = chart["series"]
    assert [d["x"] for d in f2["dots"]] == [56.0, 612.0]  # first and last gold size at the plot's ends
    assert [d["y"] for d in f2["dots"]] == [118.0, 12.0] and [d["filled"] for d in f2["dots"]] == [True, False]
    assert len(recall["dots"]) == 1 and recall["dots"][0]["y"] == 12.0  # no name in dev: no point
    assert [t["label"] for t in chart["x_ticks"]] == ["100", "150", "200", "250", "300"]
    single = charts.learning_curve(points[:1])
    assert single["series"][0]["dots"][0]["x"] == 334.0  # one version: in the middle


def test_a_lost_retrain_does_not_block_the_project_for_good(project):
    from django.utils import timezone

    lost, _ = tagger_retrain.tagger_retrain_request(project=project)
    BackgroundJob.objects.filter(pk=lost.pk).update(status="running",
                                                    started_at=timezone.now() - jobs.STALE_AFTER * 2)
    job, created = tagger_retrain.tagger_retrain_request(project=project)
    assert created and job.pk != lost.pk
    lost.refresh_from_db()
    assert lost.status == "failed" and "No worker finished this retrain" in lost.error
    assert tagger_retrain.tagger_retrain_request(project=project) == (job, False)  # a fresh one still counts


def test_a_training_job_whose_version_is_blocked_says_so(client, members, project, settings, monkeypatch):
    cut = fake_version(settings, "20260101-000000-aaaa", CUT)
    monkeypatch.setattr(tagger, "tagger_train", lambda **kw: cut)
    job, _ = tagger.tagger_train_job_start(project=project, user=members["admin"], synthetic=1, use_gold=False)
    tagger.tagger_train_job_run(job)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["blockers"] == tagger_selectors.version_blockers(cut)
    client.force_login(members["admin"])
    page = client.get(f"/p/test/jobs/{job.pk}/").content.decode()
    assert "It did not become the active tagger: training stopped early" in page


def test_plain_training_leaves_out_the_gold_that_versions_are_compared_on(gold_project):
    from pipeline.tagger.retrain import gold_split

    gold = tagger.gold_dialogues(gold_project)
    train_side, dev_side = gold_split(gold)
    assert train_side and dev_side
    used = {d.id for d in tagger.training_data(project=gold_project, use_gold=True, jsonl=None, synthetic=0)}
    assert used == {d.id for d in train_side} and not used & {d.id for d in dev_side}


@pytest.mark.slow
def test_a_real_warm_retrain_starts_from_the_active_version_and_learns_the_new_gold(gold_project, monkeypatch):
    """A real 1-layer version, then new gold, then a warm retrain: it starts from the active
    version, trains on the gold that version has not seen, and is decided by the same rule."""
    from annotator.services.imports import corpus_import
    from pipeline.synthetic import generate_corpus
    from pipeline.tagger import retrain as plan

    monkeypatch.setattr(plan, "GENERATED_PER_GOLD", 0.5)
    tiny = {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0, "seed": 1}
    first, _ = tagger_retrain.tagger_retrain_request(project=gold_project, options=tiny)
    tagger_retrain.tagger_retrain_job_run(first)
    first.refresh_from_db()
    parent = tagger.version_info(first.result["version"])
    assert parent.train_ids and parent.warm_started_from == ""
    corpus_import(project=gold_project, dialogues=generate_corpus(10, 4, max_messages=4, id_prefix="h"),
                  source="more.jsonl", spans_as="gold")
    gold_project.refresh_from_db()

    warm = {"check_precision": False, "min_dev_score": 0.0, "seed": 1, "max_steps": 6, "eval_every": 3}
    job, _ = tagger_retrain.tagger_retrain_request(project=gold_project, options=warm)
    tagger_retrain.tagger_retrain_job_run(job)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    info = tagger.version_info(job.result["version"])
    assert info.warm_started_from == parent.full_version
    assert info.training["steps"] <= 6 and info.training["stopped"] in ("step budget", "early stopping", "epochs")
    assert info.hyper["lr"] == plan.WARM_START["lr"]  # the warm recipe, the job's options on top
    entry = info.activation
    assert entry["compared_with"] == parent.full_version
    new_h = [i for i in info.train_ids if i.startswith("h-")]
    assert new_h and entry["data"]["warm_start"]["new_gold_dialogues"] >= len(new_h)
    blockers = tagger_selectors.version_blockers(info)
    assert (entry["decision"] == "activated") == (not blockers and entry["comparison"]["better"])


@pytest.mark.slow
@pytest.mark.parametrize("tolerance, candidate", [(1.0, "student"), (-1.0, "teacher")])
def test_a_full_retrain_distils_its_student_and_offers_it_when_it_passes(gold_project, monkeypatch, settings,
                                                                         tolerance, candidate):
    """Retraining distils the student as training does: a 2-layer teacher, then its 1-layer student;
    the student is the version the activation rule judges when it passed its check against the
    teacher, else the teacher is, and the teacher records why its student was not used."""
    from pipeline.tagger import retrain as plan
    from pipeline.tagger.training import distillation

    monkeypatch.setattr(plan, "GENERATED_PER_GOLD", 0.5)
    monkeypatch.setattr(distillation, "DISTILL_TOLERANCE", tolerance)
    settings.BLINDSPOT_TAGGER_STUDENT = {"num_layers": 1, "epochs": 1, "student_generated": 0}
    settings.BLINDSPOT_TAGGER_ONNX = False
    tiny = {"epochs": 1, "num_layers": 2, "check_precision": False, "min_dev_score": 0.0, "seed": 1}
    job, _ = tagger_retrain.tagger_retrain_request(project=gold_project, options=tiny, full=True)
    tagger_retrain.tagger_retrain_job_run(job)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    judged = tagger.version_info(job.result["version"])
    [student, teacher] = tagger_selectors.tagger_versions(gold_project)  # newest first
    assert student.distilled_from == teacher.full_version and student.hyper["num_layers"] == 1
    assert teacher.student["version"] == student.full_version
    assert judged.full_version == (student if candidate == "student" else teacher).full_version
    assert teacher.student["used"] is (candidate == "student")
    assert judged.activation["decision"] == "activated"  # nothing active to beat: the same rule
    assert job.params["trained_version"] == judged.full_version  # a redelivered job trains nothing


def test_tagger_page_counts_gold_once_per_revision(client, members, gold_project):
    """The gold size on the Tagger page joins every decision to the project's messages (a corpus
    scan at a million messages): cached per project revision, counted again after gold grows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.models import AdjudicationDecision
    from annotator.services.imports import corpus_import
    from pipeline.synthetic import generate_corpus

    n = AdjudicationDecision.objects.filter(message__project=gold_project).count()
    assert n > 0
    client.force_login(members["admin"])
    assert f"The gold set has {n} messages" in client.get("/p/test/tagger/").content.decode()
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/p/test/tagger/").content.decode()
    assert f"The gold set has {n} messages" in page
    counts = [q["sql"] for q in queries.captured_queries
              if "COUNT(" in q["sql"] and "annotator_adjudicationdecision" in q["sql"]]
    assert not counts, counts
    corpus_import(project=gold_project, dialogues=generate_corpus(2, 3, max_messages=4, id_prefix="more"),
                  source="more.jsonl", spans_as="gold")
    grown = AdjudicationDecision.objects.filter(message__project=gold_project).count()
    assert grown > n
    assert f"The gold set has {grown} messages" in client.get("/p/test/tagger/").content.decode()
