"""One rule for which model runs. A project's runs use its active version; a command
without a project uses ``--model NAME/VERSION`` or the one recorded default, never "the newest
directory" (a newer throwaway model of another project is never used)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.model_store import command_detector_config, model_default
from annotator.models import AuditEvent, Project
from annotator.services import tagger
from annotator.services.projects import project_create
from annotator.storage import StorageError
from tests.annotator.tagger.test_retrain import CUT, fake_version

pytestmark = pytest.mark.django_db

MINE, THROWAWAY = "20260101-000000-aaaa", "20991231-235959-ffff"


def run(name: str, *args, **opts) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO(), **opts)
    return out.getvalue()


@pytest.fixture
def two_projects(project, settings):
    """``test`` with an active version, ``other`` with a newer throwaway one (active there)."""
    fake_version(settings, MINE)
    tagger.tagger_activate(project=project, version=f"test/{MINE}")
    other = project_create(name="Other", slug="other")
    fake_version(settings, THROWAWAY, name="other")
    tagger.tagger_activate(project=other, version=f"other/{THROWAWAY}")
    return project, other


def test_a_command_without_a_default_or_a_model_is_a_clear_error_never_the_newest(two_projects, tmp_path):
    with pytest.raises(StorageError, match="no tagger version chosen and no default one: pass --model"):
        command_detector_config("tagger", {})
    with pytest.raises(StorageError, match="no default one"):  # an ensemble's tagger member too
        command_detector_config("ensemble", {})
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "d1", "messages": [{"speaker": "tutor", "text": "Hi Ana"}]}) + "\n")
    with pytest.raises(CommandError, match="no default one"):
        run("detect", str(corpus), detector="tagger", out="-")


def test_the_first_training_publishes_the_default_and_another_projects_newer_one_never_takes_it(
        two_projects, settings):
    mine, other = two_projects
    assert "test/" + MINE in tagger.tagger_default_publish(project=mine)
    assert model_default() == f"test/{MINE}"
    record = json.loads((settings.BLINDSPOT_MODELS_DIR / "default.json").read_text())
    assert record["version"] == f"test/{MINE}" and record["set_at"]
    said = tagger.tagger_default_publish(project=other)  # the throwaway training in another project
    assert said.startswith(f"The default tagger stays test/{MINE} (another project's)")
    assert model_default() == f"test/{MINE}"
    cfg = command_detector_config("tagger", {})
    assert cfg["model_path"] == str(settings.BLINDSPOT_MODELS_DIR / "test" / MINE)
    member = command_detector_config("ensemble", {})["tagger"]
    assert member["model_path"] == cfg["model_path"]
    # --model (or the config's "version") is the explicit choice, taken as given
    chosen = command_detector_config("tagger", {}, model=f"other/{THROWAWAY}")
    assert chosen["model_path"] == str(settings.BLINDSPOT_MODELS_DIR / "other" / THROWAWAY)
    assert command_detector_config("tagger", {"version": f"other/{THROWAWAY}"})["model_path"] == chosen["model_path"]
    with pytest.raises(StorageError, match="tagger_versions lists the versions"):
        command_detector_config("tagger", {}, model="test/nope")


def test_a_newer_version_of_the_same_project_moves_the_default_with_its_training(two_projects, settings):
    mine, _ = two_projects
    tagger.tagger_default_publish(project=mine)
    fake_version(settings, "20260202-000000-bbbb")
    tagger.tagger_activate(project=mine, version="test/20260202-000000-bbbb")
    assert "now the default" in tagger.tagger_default_publish(project=mine)
    assert model_default() == "test/20260202-000000-bbbb"


def test_a_default_that_is_blocked_or_gone_is_refused(two_projects, settings):
    mine, _ = two_projects
    tagger.tagger_default_publish(project=mine)
    path = settings.BLINDSPOT_MODELS_DIR / "test" / MINE / "tagger.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "training": CUT}))
    with pytest.raises(StorageError, match=f"the default tagger test/{MINE} is blocked: training stopped early"):
        command_detector_config("tagger", {})
    fake_version(settings, "20260303-000000-cccc", CUT)
    with pytest.raises(tagger.TaggerError, match="cannot be the default: training stopped early"):
        tagger.tagger_default_set(version="test/20260303-000000-cccc")


def test_tagger_activate_default_and_tagger_versions_marks_it(two_projects):
    out = run("tagger_activate", f"other/{THROWAWAY}", default=True)
    assert out.strip() == f"other/{THROWAWAY} is now the default tagger of commands without a project (was none)."
    assert model_default() == f"other/{THROWAWAY}"
    event = AuditEvent.objects.get(action="tagger.default")
    assert event.details["version"] == f"other/{THROWAWAY}" and event.project.slug == "other"
    out = run("tagger_activate", MINE, project="test", default=True)  # already active; default moves
    assert f"test/{MINE} is already the active tagger of test." in out
    assert model_default() == f"test/{MINE}"
    lines = run("tagger_versions").splitlines()
    assert lines[0] == f"Default of commands without a project: test/{MINE}"
    [mine] = [line for line in lines if line.strip().startswith(f"test/{MINE}")]
    assert " yes,default " in mine
    [theirs] = [line for line in lines if line.strip().startswith(f"other/{THROWAWAY}")]
    assert " yes " in theirs and "default" not in theirs
    with pytest.raises(CommandError, match="--project is required"):
        run("tagger_activate", MINE)
    assert Project.objects.get(slug="test").active_tagger == f"test/{MINE}"
