"""Command-line parity with the browser: projects, members, detector runs and releases.

The run and release commands queue work through the same services as the pages; tests use a
transactional database so the queue (in process, on commit) really runs while the command waits.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from annotator.management.commands import run_detector
from annotator.models import DetectorRun, Export, Membership, Prediction, Project
from annotator.models.corpus import default_taxonomy

NEW_COMMANDS = ("create_project", "add_member", "run_detector", "build_release")


def run(name: str, *args, **opts) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO(), **opts)
    return out.getvalue()


@pytest.fixture(autouse=True)
def _surrogate_key(settings):
    settings.BLINDSPOT_SURROGATE_KEY = "cli-test-surrogate-key"
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


@pytest.mark.parametrize("name", NEW_COMMANDS)
def test_every_new_command_has_help(name):
    command = load_command_class("annotator", name)
    text = command.create_parser("manage.py", name).format_help()
    assert command.help.split()[0] in text
    if name != "create_project":
        assert "--project" in text


# --- create_project ------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_project_with_the_form_choices(make_user):
    boss = make_user("boss")
    out = run("create_project", "Spring study", visibility="randomized", overlap=3, policy="recall_first",
              admin="boss")
    project = Project.objects.get(slug="spring-study")
    assert (project.name, project.visibility_mode, project.overlap_k, project.labelling_policy) == (
        "Spring study", "randomized", 3, "recall_first")
    assert project.taxonomy == default_taxonomy()
    assert Membership.objects.get(project=project, user=boss).role == "admin"
    assert "slug spring-study" in out


@pytest.mark.django_db
@pytest.mark.parametrize(("args", "opts", "message"), [
    (["Twice"], {"slug": "test"}, "Slug already exists"),
    (["X"], {"overlap": 0}, "--overlap must be at least 1"),
    (["X"], {"admin": "nobody"}, "No user called 'nobody'"),
    (["X"], {"slug": "not a slug!"}, "slug:"),
])
def test_create_project_refuses_in_one_line(project, args, opts, message):
    with pytest.raises(CommandError, match=message) as caught:
        run("create_project", *args, **opts)
    assert "\n" not in str(caught.value)
    assert Project.objects.count() == 1


def test_create_project_choices_come_from_the_model():
    command = load_command_class("annotator", "create_project")
    parser = command.create_parser("manage.py", "create_project")
    with pytest.raises(CommandError):
        parser.parse_args(["X", "--visibility", "sometimes"])


# --- add_member ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_add_member_sets_and_changes_a_role(project, make_user):
    ann = make_user("ann")
    assert "ann is now annotator in test" in run("add_member", "ann", project="test", role="annotator")
    run("add_member", "ann", project="test", role="adjudicator")
    assert Membership.objects.get(project=project, user=ann).role == "adjudicator"
    assert ann.groups.filter(name="Adjudicator").exists()


@pytest.mark.django_db
def test_add_member_creates_a_user_without_a_password_only_when_asked(project):
    with pytest.raises(CommandError, match="pass --create"):
        run("add_member", "newbie", project="test", role="annotator")
    assert not get_user_model().objects.filter(username="newbie").exists()
    out = run("add_member", "newbie", project="test", role="annotator", create=True)
    user = get_user_model().objects.get(username="newbie")
    assert not user.has_usable_password() and "changepassword newbie" in out
    assert Membership.objects.get(project=project, user=user).role == "annotator"


@pytest.mark.django_db
def test_add_member_errors(project, make_user):
    make_user("ann")
    with pytest.raises(CommandError, match="No project with slug 'nope'"):
        run("add_member", "ann", project="nope", role="annotator")
    with pytest.raises(CommandError, match="Cannot create 'bad name!'"):
        run("add_member", "bad name!", project="test", role="annotator", create=True)


# --- run_detector --------------------------------------------------------------------------


@pytest.mark.django_db
def test_without_a_broker_run_detector_runs_the_chunks_here(corpus):
    out = run("run_detector", project="test", detector="rules")
    run_ = DetectorRun.objects.get(project=corpus, detector="rules")
    assert run_.status == "succeeded" and run_.progress_done == run_.progress_total == 6
    assert run_.done_chunks == run_.total_chunks >= 1
    emails = Prediction.objects.filter(run=run_, label="EMAIL")
    assert [(p.start, p.end) for p in emails] == [(12, 35)]
    assert "100%" in out and "6/6 messages" in out and f"Run {run_.label} succeeded: EMAIL 1" in out


@pytest.mark.django_db(transaction=True)
def test_with_a_broker_run_detector_queues_and_wait_follows(corpus, monkeypatch):
    """The queued path of the Runs page: run_enqueue at commit (the test's queue runs it in
    process at once), then --wait polls the run's progress."""
    monkeypatch.setattr(run_detector, "runs_in_this_process", lambda: False)
    out = run("run_detector", project="test", detector="rules", wait=True)
    run_ = DetectorRun.objects.get(project=corpus, detector="rules")
    assert run_.status == "succeeded" and "queued: 6 messages in 1 chunk(s)" in out
    assert "100%  6/6 messages" in out and "succeeded: EMAIL 1" in out
    out = run("run_detector", project="test", detector="rules")
    assert "wait for it with --wait" in out


@pytest.mark.django_db
def test_a_failing_detector_ends_in_one_line_with_the_runs_error(corpus):
    import tests.slow_detector  # noqa: F401  (registers slow_test)

    with pytest.raises(CommandError, match="failed: chunk 0: RuntimeError: boom on d2") as caught:
        run("run_detector", project="test", detector="slow_test",
            config=json.dumps({"seconds_per_dialogue": 0, "fail_on": "d2"}))
    assert "\n" not in str(caught.value)
    assert DetectorRun.objects.get(project=corpus, detector="slow_test").status == "failed"


@pytest.mark.django_db
def test_run_detector_config_reaches_the_run(corpus):
    run("run_detector", project="test", detector="presidio", config=json.dumps({"preset": "vanilla"}))
    assert DetectorRun.objects.get(project=corpus, detector="presidio").config["preset"] == "vanilla"


@pytest.mark.django_db
@pytest.mark.parametrize(("opts", "message"), [
    ({"detector": "nope"}, "Unknown detector 'nope'"),
    ({"detector": "rules", "config": "{"}, "--config is not valid JSON"),
    ({"detector": "rules", "config": "[1]"}, "--config must be a JSON object"),
    ({"detector": "presidio", "config": '{"preset": "x"}'}, "unknown preset 'x'"),
])
def test_run_detector_refuses_in_one_line(corpus, opts, message):
    with pytest.raises(CommandError, match=message) as caught:
        run("run_detector", project="test", **opts)
    assert "\n" not in str(caught.value)
    assert not DetectorRun.objects.filter(source=DetectorRun.Source.DETECTOR).exists()


@pytest.mark.django_db
def test_run_detector_needs_dialogues(project):
    with pytest.raises(CommandError, match="no dialogues yet"):
        run("run_detector", project="test", detector="rules")


# --- build_release -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_build_release_from_gold(corpus, members):
    from annotator.services.release_review import candidate_decide

    # the self-audit finds the name nobody marked ("Great work, Sam."): a pipeline must not ship it
    with pytest.raises(CommandError, match="not publishable as it is"):
        run("build_release", project="test", wait=True)
    first = Export.objects.get(project=corpus, kind=Export.Kind.RELEASE)
    assert first.status == "succeeded" and first.params["source"] == "gold" and first.publishable
    assert first.manifest["self_audit"]["pending"] == first.candidates.count() > 0
    for c in first.candidates.all():
        candidate_decide(candidate_id=c.pk, export=first, user=members["adjudicator"], verdict="dismissed")
    out = run("build_release", project="test", wait=True)  # the next build does not ask again
    export = Export.objects.get(project=corpus, kind=Export.Kind.RELEASE, version=2)
    assert export.manifest["dialogues"] == 2 and export.manifest["self_audit"]["pending"] == 0
    assert export.manifest["self_audit"]["dismissed"] == first.candidates.count()
    assert "Release v2: 2 dialogues, 6 messages" in out and "(publishable)" in out
    assert "release.jsonl" in out


@pytest.mark.django_db(transaction=True)
def test_build_release_from_a_run_id(corpus):
    run("run_detector", project="test", detector="rules")
    run_ = DetectorRun.objects.get(project=corpus, detector="rules")
    with pytest.raises(CommandError, match="Release v1 is not publishable as it is"):
        run("build_release", project="test", mode="tag", **{"source": str(run_.pk)})  # "Sam" is flagged
    export = Export.objects.get(project=corpus, kind=Export.Kind.RELEASE)
    assert export.status == "succeeded" and export.source_run == run_ and export.params["mode"] == "tag"


@pytest.mark.django_db
def test_build_release_refuses_in_one_line(project, corpus, make_user):
    other = Project.objects.create(name="Other", slug="other")
    foreign = DetectorRun.objects.create(project=other, detector="rules", status=DetectorRun.Status.SUCCEEDED)
    queued = DetectorRun.objects.create(project=corpus, detector="rules")
    cases = [
        ({"source": "latest"}, "--from takes gold or a run id, not 'latest'"),
        ({"source": str(foreign.pk)}, f"Project test has no run #{foreign.pk}"),
        ({"source": str(queued.pk)}, "has not succeeded"),
    ]
    for opts, message in cases:
        with pytest.raises(CommandError, match=message) as caught:
            run("build_release", project="test", **opts)
        assert "\n" not in str(caught.value)
    with pytest.raises(CommandError, match="no gold set yet"):
        run("build_release", project="other")
    assert not Export.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_build_release_interrupted_without_a_broker_marks_the_release_failed(corpus, settings, monkeypatch):
    """Ctrl-C while the release builds in this process (no broker, as in bin/demo) leaves the
    export failed with its reason, never "running"."""
    from annotator.services import releases

    settings.BLINDSPOT_EAGER_IN_THREAD = True  # as outside tests

    def interrupted(export, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(releases, "release_write", interrupted)
    with pytest.raises(CommandError, match="marked failed"):
        run("build_release", project="test")
    export = Export.objects.get(project=corpus, kind=Export.Kind.RELEASE)
    assert export.status == Export.Status.FAILED and "Interrupted" in export.error and export.finished_at
