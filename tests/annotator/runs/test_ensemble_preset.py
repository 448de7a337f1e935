"""The app's ensemble preset includes the tagger, run with the project's tagger version."""

import json

import pytest

from annotator.services import runs
from pipeline import registry

ACTIVE = "demo/20260101-000000-abcdef12"


@pytest.mark.django_db
def test_ensemble_preset_runs_the_projects_tagger_with_the_rules(project):
    project.active_tagger = ACTIVE
    project.save(update_fields=["active_tagger"])
    cfg = runs.detector_config(project=project, detector="ensemble", config=runs.PRESETS["ensemble"])
    assert cfg["tagger"] == runs.detector_config(project=project, detector="tagger", config={})
    assert ACTIVE in json.dumps(cfg["tagger"])
    det = registry.build("ensemble", cfg)
    assert [m.name for m in det.members] == ["tagger", "rules", "speakers"]
    with_presidio = registry.build(
        "ensemble", runs.detector_config(project=project, detector="ensemble",
                                         config=runs.PRESETS["ensemble + presidio"]))
    assert [m.name for m in with_presidio.members] == ["tagger", "rules", "speakers", "presidio"]


@pytest.mark.django_db
def test_explicit_members_get_the_projects_tagger_too(project):
    project.active_tagger = ACTIVE
    project.save(update_fields=["active_tagger"])
    cfg = runs.detector_config(project=project, detector="ensemble", config={
        "members": [{"name": "tagger"}, {"name": "rules", "config": {"labels": ["EMAIL"]}}]})
    tagger, rules = cfg["members"]
    assert tagger["config"] == runs.detector_config(project=project, detector="tagger", config={})
    assert rules["config"] == {"labels": ["EMAIL"]}
