"""Project-wide figures on the pages (no request counts the corpus): computed in SQL, cached per
project revision, recomputed after every audited write; changelists without N + 1 queries."""

from __future__ import annotations

import random
import statistics

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.models import Assignment, AuditEvent, BackgroundJob
from annotator.selectors import figures
from annotator.selectors.assignments import condition_exposure
from annotator.selectors.projects import project_counts
from annotator.selectors.workspace import annotator_stats, queue_progress
from annotator.services import workspace as svc
from annotator.services.audit import audit_record
from pipeline import assignment as algo

pytestmark = pytest.mark.django_db


def by_name(stats) -> dict:
    return {s["username"]: s for s in stats}


def finish_one(members, who="annotator") -> Assignment:
    a = Assignment.objects.filter(annotator=members[who], status="pending").order_by("order").first()
    svc.item_no_pii_set(assignment=a, user=members[who], version=None, value=True)
    return svc.item_submit(assignment=a, user=members[who], version=None)


def test_cached_figures_move_with_every_audited_write(members, ws_project, planned):
    planned("blind")
    before = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]
    counts = project_counts(ws_project, use_cache=True)
    progress = queue_progress(members["annotator"], ws_project)
    finish_one(members)
    after = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]
    assert after["done"] == before["done"] + 1
    assert project_counts(ws_project, use_cache=True)["assignments_done"] == counts["assignments_done"] + 1
    assert queue_progress(members["annotator"], ws_project)["done"] == progress["done"] + 1
    assert annotator_stats(ws_project, use_cache=True) == annotator_stats(ws_project)
    assert project_counts(ws_project, use_cache=True) == project_counts(ws_project)


def test_the_cache_is_keyed_by_the_revision_not_by_time(members, ws_project, planned):
    """What the cache rests on: a write that records no audit event is not seen until one is."""
    planned("blind")
    cached = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"]
    revision = figures.project_revision(ws_project)
    Assignment.objects.filter(annotator=members["annotator"]).update(status="done")  # behind the services' back
    assert figures.project_revision(ws_project) == revision
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == cached
    audit_record(user=members["admin"], action="test.write", project=ws_project)
    assert figures.project_revision(ws_project) != revision
    total = Assignment.objects.filter(annotator=members["annotator"]).count()
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == total


@pytest.fixture
def with_workers(monkeypatch):
    """A broker, as in production: the figure jobs cached() queues are collected, not run."""
    queued = []
    monkeypatch.setattr(figures, "has_broker", lambda: True)
    monkeypatch.setattr(figures, "enqueue", lambda name, *args: queued.append((name, *args)))
    return queued


def test_with_workers_a_page_shows_the_newest_figure_while_a_worker_computes_the_next(
        members, ws_project, planned, with_workers):
    from annotator import task_names
    from annotator.tasks.projects import figure_refresh

    planned("blind")
    first = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"]
    assert with_workers == []  # never computed before: computed in the request
    finish_one(members)
    with CaptureQueriesContext(connection) as queries:
        stale = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"]
    assert stale == first
    assert not any("annotator_assignment" in q["sql"] for q in queries.captured_queries)
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == first
    assert len(with_workers) == 1  # one job, however many pages ask meanwhile
    name, *args = with_workers[0]
    assert name == task_names.PROJECTS_FIGURE_REFRESH
    figure_refresh(*args)
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == first + 1
    figure_refresh(*args)  # a second delivery: nothing to do
    assert figures.refresh(project_id=args[0], path=args[1], params=args[2]) is False


def test_a_newest_value_no_worker_refreshed_in_time_is_computed_in_the_request(
        members, ws_project, planned, with_workers, monkeypatch):
    """Workers all busy or none running: a page waits for the count rather than show an old one
    for long."""
    import time

    planned("blind")
    first = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"]
    finish_one(members)
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == first
    later = time.time() + figures.MAX_STALE_SECONDS + 1
    monkeypatch.setattr(figures.time, "time", lambda: later)
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["done"] == first + 1


def test_a_figure_job_takes_only_registered_figures(ws_project):
    with pytest.raises(ValueError, match="not a registered project figure"):
        figures.refresh(project_id=ws_project.pk, path="os.system", params={"command": "true"})
    with pytest.raises(ValueError, match="not a registered project figure"):
        figures.refresh(project_id=ws_project.pk, path="annotator.selectors.exports.export_is_stale", params={})


def test_a_figure_with_parameters_is_computed_again_from_its_ids(members, ws_project, planned, with_workers):
    from annotator.models import AssignmentPlan
    from annotator.selectors.exports import gold_state_cached

    planned("blind")
    plan = AssignmentPlan.objects.filter(project=ws_project).first()
    exposure = condition_exposure(ws_project, plan=plan, use_cache=True)
    gold = gold_state_cached(ws_project)
    audit_record(user=members["admin"], action="test.write", project=ws_project)
    assert condition_exposure(ws_project, plan=plan, use_cache=True) == exposure
    assert gold_state_cached(ws_project) == gold
    for _, *args in with_workers:
        assert figures.refresh(project_id=args[0], path=args[1], params=args[2]) is True
    assert {a[1] for _, *a in with_workers} == {"annotator.selectors.assignments.plan_exposure",
                                                 "annotator.selectors.exports.gold_state"}
    assert condition_exposure(ws_project, plan=plan, use_cache=True) == condition_exposure(ws_project, plan=plan)


def test_revisions_of_two_projects_are_apart(members, ws_project, planned, make_user):
    from annotator.services.projects import project_create

    planned("blind")
    other = project_create(name="Other", slug="other")
    revision = figures.project_revision(ws_project)
    audit_record(user=members["admin"], action="test.write", project=other)
    assert figures.project_revision(ws_project) == revision


def test_an_edit_in_the_django_admin_is_audited_and_recounted(client, members, ws_project, planned, make_user):
    planned("blind")
    root = make_user("root", is_staff=True, is_superuser=True)
    total = by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["total"]
    a = Assignment.objects.filter(annotator=members["annotator"], status="pending").first()
    client.force_login(root)
    response = client.post(reverse("admin:annotator_assignment_delete", args=[a.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert AuditEvent.objects.filter(action="admin.delete", object_type="Assignment", object_id=str(a.pk)).exists()
    assert by_name(annotator_stats(ws_project, use_cache=True))["annotator"]["total"] == total - 1


def test_the_dashboard_and_the_statistics_show_a_submit_at_once(client, members, ws_project, planned):
    planned("blind")
    client.force_login(members["admin"])
    url = reverse("workspace-admin", kwargs={"slug": ws_project.slug})
    first = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    finish_one(members)
    finish_one(members)
    second = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert first != second
    done = by_name(annotator_stats(ws_project))["annotator"]["done"]
    assert done == 2 and f'<td class="num">{done}</td>' in second
    dashboard = client.get(f"/p/{ws_project.slug}/", HTTP_HX_REQUEST="true").content.decode()
    counts = project_counts(ws_project)
    assert f"{counts['assignments_done']} / {counts['assignments_total']}" in dashboard


def test_exposure_counted_in_sql_equals_the_pure_function(members, ws_project, planned, make_user):
    from annotator.services.assignments import plan_create
    from annotator.services.projects import membership_set

    third = make_user("annotator3")
    membership_set(project=ws_project, user=third, role="annotator")
    first = planned("randomized")
    ws_project.refresh_from_db()
    second = plan_create(project=ws_project, by=members["admin"], strategy="dialogues", n_dialogues=2, k=1,
                         seed=3, annotators=[third])
    rng = random.Random(5)
    for a in Assignment.objects.filter(project=ws_project):  # what the per-item rule once allowed
        Assignment.objects.filter(pk=a.pk).update(condition=rng.choice(["blind", "aware"]))
    rows = list(Assignment.objects.filter(project=ws_project)
                .values_list("annotator_id", "message__dialogue_id", "condition", "plan_id"))

    def expected(plan=None):
        kept = rows
        if plan is not None:
            touched = {(a, d) for a, d, _, pid in rows if pid == plan.pk}
            kept = [r for r in rows if (r[0], r[1]) in touched]
        return algo.cross_condition_exposure((a, d, c) for a, d, c, _ in kept)

    assert condition_exposure(ws_project) == expected()
    assert condition_exposure(ws_project, plan=first) == expected(first)
    assert condition_exposure(ws_project, plan=second) == expected(second)
    assert expected()["mixed_clusters"] > 0  # the case where the figures differ from the blind count


def test_the_median_is_the_median_of_done_items(members, ws_project, planned):
    """On PostgreSQL the median is ``percentile_cont(0.5)`` in SQL; elsewhere computed in Python:
    either way, the median of the done items' seconds (even and odd counts)."""
    planned("blind")
    rng = random.Random(1)
    for who in ("annotator", "annotator2"):
        mine = list(Assignment.objects.filter(annotator=members[who]).order_by("order"))
        n_done = 4 if who == "annotator" else 3
        for i, a in enumerate(mine):
            Assignment.objects.filter(pk=a.pk).update(
                status="done" if i < n_done else "pending", active_seconds=rng.uniform(1, 90))
    stats = by_name(annotator_stats(ws_project))
    for who in ("annotator", "annotator2"):
        seconds = Assignment.objects.filter(annotator=members[who], status="done").values_list(
            "active_seconds", flat=True)
        assert stats[who]["median_seconds"] == round(statistics.median(seconds), 1), connection.vendor


def test_pages_read_cached_figures_in_few_queries(client, members, ws_project, planned,
                                                  django_assert_max_num_queries):
    plan = planned("randomized")
    client.force_login(members["admin"])
    pages = [(f"/p/{ws_project.slug}/", {}, 14), (f"/p/{ws_project.slug}/", {"HTTP_HX_REQUEST": "true"}, 6),
             (reverse("workspace-admin", kwargs={"slug": ws_project.slug}), {"HTTP_HX_REQUEST": "true"}, 7),
             (reverse("workspace-plan", kwargs={"slug": ws_project.slug, "plan_id": plan.pk}), {}, 7)]
    for url, headers, _ in pages:
        assert client.get(url, **headers).status_code == 200  # the figures are computed once
    for url, headers, most in pages:
        with django_assert_max_num_queries(most) as queries:
            client.get(url, **headers)
        assert not any("annotator_assignment" in q["sql"] and "GROUP BY" in q["sql"] for q in queries), url


@pytest.mark.parametrize("model,make", [
    ("auditevent", lambda p, u, i: AuditEvent.objects.create(project=p, user=u, action=f"test.{i}")),
    ("backgroundjob", lambda p, u, i: BackgroundJob.objects.create(project=p, created_by=u, kind="other")),
    ("annotation", None),
])
def test_admin_changelists_do_not_read_row_by_row(client, members, ws_project, planned, make_user, model, make):
    planned("blind")
    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    url = reverse(f"admin:annotator_{model}_changelist")

    made = iter(range(1000))

    def queries_for(n):
        for _ in range(n):
            i = next(made)
            if make is not None:
                make(ws_project, members["admin"], i)
            else:
                a = Assignment.objects.filter(project=ws_project).order_by("pk")[i % 4]
                a.annotations.create(start=i, end=i + 1, label="NAME", condition=a.condition)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    assert queries_for(2) == queries_for(10)


def test_pages_read_keys_first_and_keep_the_order(members, ws_project, planned):
    from annotator.admin import KeysFirstPaginator
    from annotator.selectors import page_of

    planned("blind")
    def offset_joins(queries) -> bool:  # a query that joins rows and skips past an offset
        return any("OFFSET" in q["sql"] and "JOIN" in q["sql"] for q in queries)

    qs = Assignment.objects.select_related("message").order_by("-pk")
    expected = list(qs)
    with CaptureQueriesContext(connection) as queries:
        pages = [KeysFirstPaginator(qs, 3).page(n).object_list for n in (1, 2, 3)]
    assert [a.pk for page in pages for a in page] == [a.pk for a in expected[:9]]
    assert not offset_joins(queries) and any("OFFSET" in q["sql"] for q in queries)
    ordered = Assignment.objects.filter(project=ws_project).select_related("message").order_by("order", "pk")
    with CaptureQueriesContext(connection) as queries:
        rows, total = page_of(ordered, 2, 3, keys_first=True)
    assert [a.pk for a in rows] == [a.pk for a in list(ordered)[3:6]] and total == ordered.count()
    assert not offset_joins(queries)


def test_the_admin_message_search_finds_text_and_dialogue_ids(client, ws_project, make_user):
    from annotator.models import Message

    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    url = reverse("admin:annotator_message_changelist")
    some = Message.objects.filter(project=ws_project).order_by("pk").first()
    word = some.text.split()[0]
    expected = {m.pk for m in Message.objects.filter(text__icontains=word)}
    found = client.get(url, {"q": word}).context["cl"].result_list
    assert {m.pk for m in found} == expected and expected
    in_d2 = client.get(url, {"q": "d2"}).context["cl"].result_list
    assert {m.pk for m in in_d2} >= set(Message.objects.filter(dialogue__external_id="d2").values_list("pk", flat=True))
    assert not client.get(url, {"q": f"{word} zzzz-not-there"}).context["cl"].result_list
    assert {m.pk for m in client.get(url, {"q": f'"{word}"'}).context["cl"].result_list} == expected


def test_the_admin_pages_past_its_first_pages_by_cursor_both_ways(client, members, ws_project, planned,
                                                                  make_user, monkeypatch):
    """Older → and ← Newer walk the whole list, newest first, with no OFFSET; a page
    number deeper than the first pages is refused; a filter holds across the cursor."""
    monkeypatch.setattr("annotator.admin.DEEPEST_PAGE", 1)
    planned("blind")
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    url = reverse("admin:annotator_assignment_changelist")
    admin_of = __import__("django.contrib.admin", fromlist=["site"]).site._registry[Assignment]
    monkeypatch.setattr(admin_of, "list_per_page", 3)
    everything = list(Assignment.objects.order_by("-pk").values_list("pk", flat=True))
    assert len(everything) > 6
    cl = client.get(url).context["cl"]
    seen = [a.pk for a in cl.result_list]
    with CaptureQueriesContext(connection) as queries:
        while cl.older_url:
            cl = client.get(url + cl.older_url).context["cl"]
            seen += [a.pk for a in cl.result_list]
    assert seen == everything
    assert not any("OFFSET" in q["sql"] and "annotator_assignment" in q["sql"] for q in queries)
    back = [a.pk for a in cl.result_list]
    while cl.newer_url:
        cl = client.get(url + cl.newer_url).context["cl"]
        back = [a.pk for a in cl.result_list] + back
    assert back == everything
    assert client.get(url, {"p": "2"}).status_code == 302  # past the first pages: the admin's "invalid" redirect
    done = Assignment.objects.filter(status="pending").order_by("-pk").values_list("pk", flat=True)
    cl = client.get(url, {"status__exact": "pending", "after": done[0]}).context["cl"]
    assert [a.pk for a in cl.result_list] == list(done[1:4])
    page = client.get(url).content.decode()
    assert "Older →" in page


REVISION_SQL = '"n_dialogues"'  # the revision's query (annotator.selectors.figures.project_revision)


def test_a_page_reads_the_project_revision_once_however_many_figures_it_shows(client, members, study):
    """The adjudication queue shows three cached figures (its counts, the items ready to merge, the
    gold fingerprint); each read the revision, which counts the project's dialogues (15 ms at a
    million messages). A GET reads it once; a write in a later request still shows."""
    from annotator.services.adjudication import gold_merge_ready

    client.force_login(members["adjudicator"])
    url = reverse("adjudication-queue", kwargs={"slug": study.slug})
    client.get(url)  # the figures, cached at this revision
    for _ in range(2):  # cached or not, one read of the revision
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        assert sum(REVISION_SQL in q["sql"] for q in queries.captured_queries) == 1
        gold_merge_ready(project=study, user=members["admin"])  # a write: a new revision, figures recomputed
    with figures.one_revision():
        first = figures.project_revision(study)
        audit_record(user=members["admin"], action="test.write", project=study)
        assert figures.project_revision(study) == first  # inside one GET: the revision it started with
    assert figures.project_revision(study) != first


@pytest.fixture
def bench_modules():
    import sys

    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    yield
    sys.path.remove(str(ROOT / "bench"))


@pytest.mark.postgres
@pytest.mark.slow
def test_the_plan_form_finds_scored_runs_from_the_index(require_postgres, model_project, members, client,
                                                        bench_modules):
    """The plan form marks runs with margins "scored (least sure)". An EXISTS over the margins let
    PostgreSQL scan them for each run without any: a tagger run holds one per message (a million at
    a million messages: 50 ms per request). With 6,000 margins of one run, the page's
    queries (a form's choices come through a server-side cursor) read none of them past the first."""
    from scan_check import request_scans

    from annotator.models import DetectorRun, Dialogue, Message, MessageUncertainty

    project = model_project
    dialogues = Dialogue.objects.bulk_create(
        Dialogue(project=project, external_id=f"big{n:03}", message_count=100) for n in range(60))
    messages = Message.objects.bulk_create(
        Message(project=project, dialogue=d, position=p, speaker="s", text=f"{d.external_id} #{p}")
        for d in dialogues for p in range(100))
    tagger = DetectorRun.objects.create(project=project, detector="tagger", status="succeeded")
    MessageUncertainty.objects.bulk_create(
        MessageUncertainty(run=tagger, message=m, margin=(i % 97) / 100) for i, m in enumerate(messages))
    with connection.cursor() as cur:
        cur.execute("ANALYZE annotator_messageuncertainty, annotator_detectorrun")
    client.force_login(members["admin"])
    status, scans = request_scans(client, reverse("workspace-admin", kwargs={"slug": project.slug}))
    assert status == 200
    assert not scans, scans
    page = client.get(reverse("workspace-admin", kwargs={"slug": project.slug})).content.decode()
    assert page.count("scored (least sure)") == 1  # the tagger run, not the import
