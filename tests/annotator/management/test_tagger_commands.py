"""CLI parity for the tagger: ``tagger_activate VERSION --project SLUG`` is the
Tagger page's "Make active" (the same service, checks and audit event), ``tagger_versions`` its
table of versions."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import AuditEvent, Project
from annotator.services.projects import project_create
from pipeline.types import Dialogue, Message
from tests.annotator.tagger.test_retrain import CUT, fake_version

pytestmark = pytest.mark.django_db

GOOD_V, NEWER_V, CUT_V = "20260101-000000-aaaa", "20260201-000000-bbbb", "20260301-000000-cccc"


def run(name: str, *args, **opts) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO(), **opts)
    return out.getvalue()


def refused(name: str, *args, **opts) -> CommandError:
    with pytest.raises(CommandError) as caught:
        run(name, *args, **opts)
    assert caught.value.returncode == 1  # manage.py exits 1 with the message on stderr
    return caught.value


@pytest.fixture
def versions(project, settings):
    fake_version(settings, GOOD_V, dev_metrics={"recall_first": {"f2": 0.912}, "strict": {"f2": 0.88}})
    fake_version(settings, NEWER_V)
    fake_version(settings, CUT_V, CUT)
    return project


def test_activate_makes_a_version_active_as_the_page_does_with_its_audit_event(versions):
    out = run("tagger_activate", f"test/{GOOD_V}", project="test")
    assert out.strip() == f"test/{GOOD_V} is now the active tagger of test (was none)."
    assert Project.objects.get(pk=versions.pk).active_tagger == f"test/{GOOD_V}"
    event = AuditEvent.objects.get(action="tagger.activate")
    assert event.project_id == versions.pk and event.details["version"] == f"test/{GOOD_V}"
    out = run("tagger_activate", NEWER_V, project="test")  # the version alone names this project's
    assert f"test/{NEWER_V} is now the active tagger of test (was test/{GOOD_V})." in out
    assert run("tagger_activate", NEWER_V, project="test").strip() == (
        f"test/{NEWER_V} is already the active tagger of test.")
    assert AuditEvent.objects.filter(action="tagger.activate").count() == 2


def test_activate_refuses_a_blocked_version_with_its_reasons(versions):
    error = refused("tagger_activate", CUT_V, project="test")
    assert f"test/{CUT_V} cannot become the active tagger: training stopped early" in str(error)
    assert "test keeps no active tagger. Its versions: manage.py tagger_versions --project test" in str(error)
    assert Project.objects.get(pk=versions.pk).active_tagger == ""
    assert not AuditEvent.objects.filter(action="tagger.activate").exists()


def test_activate_refuses_an_unknown_version_or_project_or_another_projects_version(versions, settings):
    assert str(refused("tagger_activate", "nope", project="test")) == (
        "test's tagger has no version test/nope. Its versions: manage.py tagger_versions --project test")
    project_create(name="Other project", slug="other")
    fake_version(settings, GOOD_V, name="other")
    error = refused("tagger_activate", f"other/{GOOD_V}", project="test")
    assert f"other/{GOOD_V} is not a version of test's tagger (another project's" in str(error)
    error = refused("tagger_activate", GOOD_V, project="nosuch")
    assert str(error).startswith("No project with slug 'nosuch'")
    assert Project.objects.get(pk=versions.pk).active_tagger == ""


def test_activate_needs_a_project_or_default(versions):
    with pytest.raises(CommandError, match="--project"):
        run("tagger_activate", GOOD_V)


def test_versions_lists_them_newest_first_with_the_active_one_and_blockers(versions):
    run("tagger_activate", GOOD_V, project="test")
    lines = run("tagger_versions", project="test").splitlines()
    assert lines[0].startswith("Default of commands without a project: none") and lines[1] == ""
    lines = lines[2:]
    assert lines[0] == "test: 3 versions, active: test/" + GOOD_V
    assert lines[1] == f"  Runs test/{GOOD_V}: this project's own version, made active here."
    assert lines[2] == "  Runtime (backend auto): torch-fp32: the only verified runtime."
    header, *rows = lines[3:]
    assert header.split() == ["VERSION", "ACTIVE", "CREATED", "DEV", "CAN", "BECOME", "ACTIVE"]
    assert [r.split()[0] for r in rows] == [f"test/{CUT_V}", f"test/{NEWER_V}", f"test/{GOOD_V}"]
    good = rows[2]
    assert " yes " in good and "2026-01-01 00:00" in good and "dev F2 0.912 (recall first), 0.880 (strict)" in good
    assert good.endswith("yes")
    assert "no: training stopped early" in rows[0] and " yes " not in rows[0]
    # a readable table: every row's columns start under the header's
    assert all(r[header.index("CREATED"):].startswith("2026-") for r in rows)
    assert all(r[header.index("DEV"):].startswith(("dev F2", "no dev metrics")) for r in rows)


def test_versions_of_every_project_and_of_none(versions, settings):
    project_create(name="Other project", slug="other")
    out = run("tagger_versions")
    assert "test: 3 versions, active: none" in out
    assert ("other: 0 versions, active: none\n  Runs no tagger: the deployment has no default version.\n"
            "  No trained version yet (manage.py train_tagger --project other).") in out
    assert out.index("other:") < out.index("test:")  # by slug


def test_versions_of_an_unknown_project(versions):
    assert str(refused("tagger_versions", project="nosuch")).startswith("No project with slug 'nosuch'")


def test_versions_and_the_page_say_which_runtime_auto_measured_and_why(versions, settings, client, members):
    """Before the first run on this machine the runtimes it will time; after, the fastest and why."""
    from pipeline.tagger import backends, read_info

    path = settings.BLINDSPOT_MODELS_DIR / "test" / GOOD_V
    (path / "model.onnx").write_bytes(b"graph")
    tagger_json = json.loads((path / "tagger.json").read_text())
    onnx = {"fp32": {"verified": True, "file": "model.onnx"}, "method": "optimizer (bert, no skip layer norm)"}
    (path / "tagger.json").write_text(json.dumps({**tagger_json, "onnx": onnx}))
    info = read_info(path)
    run("tagger_activate", GOOD_V, project="test")
    assert ("Runtime (backend auto): not measured on this machine yet: its first run times onnx-fp32, torch-fp32 "
            "and keeps the one that spends the least CPU, start-up included.") in run("tagger_versions", project="test")

    clock = [0.0]

    class Model:
        def __init__(self, cost):
            self.cost = cost

        def predict(self, dialogues, batch_size=64):
            clock[0] += self.cost

    one = [Dialogue("d", (Message("hi Maria", "tutor", "tutor", 0),))]
    backends.measured_choice(info, load=lambda p, c: Model(0.5 if c.backend == "onnx" else 1.0),
                             timer=lambda: clock[0], dialogues=one,
                             startup=lambda p, c: 0.3 if c.backend == "onnx" else 3.5)
    said = ("Runtime (backend auto): onnx-fp32 7500.3 CPU-s (2 msg/s, starts in 0.3 CPU-s) vs torch-fp32 "
            "15003.5 CPU-s (1 msg/s, starts in 3.5 CPU-s) per 15,000 messages with start-up, measured")
    assert said in run("tagger_versions", project="test")
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert said in page


@pytest.mark.parametrize(("method", "outdated"), [
    (None, True),  # exported before the export recorded its method
    ("torch.onnx.export (TorchScript) + onnxruntime.transformers.optimizer (bert); int8: …", True),
    ("torch.onnx.export (TorchScript) + onnxruntime.transformers.optimizer (bert, no skip layer norm); int8: …", False),
])
def test_versions_and_the_page_say_when_onnx_files_predate_the_faster_graph(versions, settings, client, members,
                                                                           method, outdated):
    """A session cannot take a fusion out of a file, so a version exported with its residual layer
    norms fused stays slower until it is re-exported: the note says so, and how."""
    path = settings.BLINDSPOT_MODELS_DIR / "test" / GOOD_V
    (path / "model.onnx").write_bytes(b"graph")
    tagger_json = json.loads((path / "tagger.json").read_text())
    onnx = {"fp32": {"verified": True, "file": "model.onnx"}, **({"method": method} if method else {})}
    (path / "tagger.json").write_text(json.dumps({**tagger_json, "onnx": onnx}))
    run("tagger_activate", GOOD_V, project="test")
    note = (f"its ONNX files predate the faster graph (fusions now left out: SkipLayerNormFusion); "
            f"`manage.py train_tagger --export-only test/{GOOD_V}` re-exports them")
    assert (note in run("tagger_versions", project="test")) is outdated
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert ("re-exports them" in page) is outdated
