import pytest
from django.core.management import call_command

from annotator.models import (
    AdjudicationItem,
    Annotation,
    Assignment,
    AuditEvent,
    BackgroundJob,
    CandidateDecision,
    DetectorRun,
    Dialogue,
    Export,
    GoldSpan,
    Project,
)
from annotator.selectors.exports import export_is_stale
from annotator.selectors.release_review import review_counts

pytestmark = pytest.mark.django_db


def test_demo_setup_is_complete_and_idempotent(capsys):
    call_command("demo_setup")
    out = capsys.readouterr().out
    assert "annotator1" in out and "blindspot-demo" in out
    project = Project.objects.get(slug="demo")
    assert Dialogue.objects.filter(project=project).count() >= 50
    with_gold = Dialogue.objects.filter(project=project, messages__decision__isnull=False).distinct().count()
    assert 0 < with_gold < Dialogue.objects.filter(project=project).count()
    assert GoldSpan.objects.filter(message__project=project).count() > 100
    rules = DetectorRun.objects.get(project=project, detector="rules")
    model = DetectorRun.objects.get(project=project, source="import")
    assert rules.status == "succeeded" and list(project.suggestion_runs.all()) == [model]
    queued = Assignment.objects.filter(project=project)
    assert queued.exists() and not queued.filter(message__decision__outcome="imported").exists()
    assert set(queued.values_list("condition", flat=True)) == {"blind", "aware"}
    counts = _counts()
    call_command("demo_setup")
    assert _counts() == counts


def _counts():
    return [m.objects.count() for m in (Dialogue, Assignment, DetectorRun, Annotation, GoldSpan, AdjudicationItem,
                                        BackgroundJob, Export)]


def test_demo_setup_finishes_a_first_round_with_a_known_anchoring_bias(capsys):
    """Simulated annotators finish part of the queue through the workspace services,
    gold is merged with a handful of disagreements left open, both reports and a release exist,
    and the circularity report finds the aware annotators' anchoring on wrong suggestions."""
    call_command("demo_setup")
    project = Project.objects.get(slug="demo")
    done = Assignment.objects.filter(project=project, status="done")
    assert done.count() > 100
    assert set(done.values_list("condition", flat=True)) == {"blind", "aware"}
    # Through the services: every submit is audited, and aware items carry accepted suggestions.
    assert AuditEvent.objects.filter(project=project, action="assignment.submit").count() == done.count()
    assert Annotation.objects.filter(assignment__in=done, origin=Annotation.Origin.ACCEPTED, condition="aware").exists()
    assert not Annotation.objects.filter(assignment__in=done, condition="blind", prediction__isnull=False).exists()
    for name in ("annotator1", "annotator2", "annotator3"):
        left = Assignment.objects.filter(project=project, annotator__username=name, status="pending")
        assert done.filter(annotator__username=name).exists() and left.count() > 20, name
    items = AdjudicationItem.objects.filter(project=project)
    assert 5 <= items.filter(status="open").count() <= 10 and items.filter(status="settled").exists()
    assert GoldSpan.objects.filter(message__project=project, provenance__in=["unanimous", "majority"]).exists()
    jobs = {j.kind: j for j in BackgroundJob.objects.filter(project=project)}
    assert jobs["agreement"].status == "succeeded" and jobs["agreement"].result["detectors"]
    circ = jobs["circularity"]
    assert circ.status == "succeeded" and circ.result["n_paired_items"] > 50
    assert circ.result["aware_gold"]["precision"]["value"] > circ.result["blind_gold"]["precision"]["value"]
    assert circ.result["delta_precision"]["ci_low"] > 0 and circ.result["delta_f1"]["value"] > 0.02
    releases = Export.objects.filter(project=project, kind="release").order_by("version")
    first, newest = releases.first(), releases.last()
    assert first.status == newest.status == "succeeded" and newest.manifest["dialogues"] > 0


def test_demo_setup_settles_the_release_review_so_the_newest_release_is_publishable():
    """The simulated adjudicator reviews the first release's candidates with the corpus's true
    spans: true PII confirmed (audited gold, a new version), the rest dismissed; so the README's
    ``build_release --project demo`` after the demo builds a publishable release."""
    call_command("demo_setup")
    project = Project.objects.get(slug="demo")
    verdicts = set(CandidateDecision.objects.filter(project=project).values_list("verdict", flat=True))
    assert verdicts == {"confirmed", "dismissed"}
    assert GoldSpan.objects.filter(message__project=project, provenance="audited").exists()
    newest = Export.objects.filter(project=project, kind="release").order_by("-version").first()
    assert newest.version > 1 and newest.publishable and not export_is_stale(newest)
    assert review_counts(newest)["pending"] == 0
    # one statement, coherent with itself: the imported gold is what its messages release and only
    # a sample of them could say what it misses; no recall beside it, no capture-recapture
    rr = newest.report["residual_risk"]
    headline = rr["sentence"]
    assert "recall" not in headline and "capture" not in headline
    strata = {s["name"]: s for s in rr["strata"]}
    assert strata["imported gold"]["released"] == newest.report["evidence"]["imported_messages"]
    if not strata["imported gold"]["sampled"]:
        assert not rr["available"] and headline.startswith("No audit sample to estimate from: none of the ")
        assert "imported gold released messages was reviewed" in headline
    else:
        assert headline.startswith("None found in ") or " miss(es) found in " in headline
    # (test_readme_commands runs ``build_release --project demo`` after the demo, in a process of its own)


@pytest.mark.slow
def test_demo_setup_train_tagger_makes_the_student_its_first_model_and_the_default(capsys, monkeypatch, settings):
    """The demo's first tagger is the student distilled after its teacher, where the
    student passes its check; it is the default of commands without a project and the tagger run
    the demo adds is the student's. A tiny training (2-layer teacher, 1-layer student, one epoch)
    and a tolerance every student passes stand in for the real one."""
    pytest.importorskip("torch")
    from annotator.services import tagger
    from pipeline.tagger.training import distillation

    settings.BLINDSPOT_TAGGER_STUDENT = {"num_layers": 1, "epochs": 1, "student_generated": 0}
    settings.BLINDSPOT_TAGGER_ONNX = False
    monkeypatch.setattr(distillation, "DISTILL_TOLERANCE", 1.0)
    real = tagger.tagger_train
    monkeypatch.setattr(tagger, "tagger_train", lambda **kw: real(**{**kw, "synthetic": 6, "options": {
        "epochs": 1, "num_layers": 2, "check_precision": False, "min_dev_score": 0.0}}))
    call_command("demo_setup", train_tagger=True)
    out = capsys.readouterr().out
    project = Project.objects.get(slug="demo")
    from annotator.model_store import model_default
    from annotator.services.tagger import version_info

    student = version_info(project.active_tagger)
    assert student.distilled_from and student.hyper["num_layers"] == 1
    assert "is used in its place (passed its check)" in out
    assert model_default() == project.active_tagger
    assert f"{project.active_tagger} is now the default tagger of commands without a project" in out
    run = DetectorRun.objects.get(project=project, detector="tagger")
    assert run.status == "succeeded" and run.model_version.startswith(project.active_tagger)
