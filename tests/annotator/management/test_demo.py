import pytest
from django.core.management import call_command

from annotator.models import Assignment, DetectorRun, Dialogue, GoldSpan, Project

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
    assert rules.status == "succeeded" and list(project.suggestion_runs.all()) == [rules]
    queued = Assignment.objects.filter(project=project)
    assert queued.exists() and not queued.filter(message__decision__isnull=False).exists()
    assert set(queued.values_list("condition", flat=True)) == {"blind", "aware"}
    counts = (Dialogue.objects.count(), Assignment.objects.count(), DetectorRun.objects.count())
    call_command("demo_setup")
    assert (Dialogue.objects.count(), Assignment.objects.count(), DetectorRun.objects.count()) == counts
