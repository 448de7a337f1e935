"""The annotators' assignment counters (``QueueCount``) stay equal to a count of the
assignments through every write: a plan, submits (concurrent ones too), skips and reopens, a
reassignment, edits in the Django admin, deletion of an assignment, a dialogue, a project or an
annotator, and a re-import; and the queue list pages by cursor, forward and back, over every item."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count
from django.urls import reverse

from annotator.models import Assignment, Dialogue, Project, QueueCount
from annotator.models.counters import STATUSES
from annotator.selectors.workspace import queue_page, queue_progress
from annotator.services import workspace as svc
from annotator.services.assignments import assignments_reassign

pytestmark = pytest.mark.django_db


def counted() -> dict:
    """(project, annotator) -> status -> n, counted from the assignments."""
    out: dict = {}
    for p, a, s, n in Assignment.objects.order_by().values_list("project_id", "annotator_id", "status").annotate(
            n=Count("pk")):
        out.setdefault((p, a), Counter())[s] = n
    return out


def kept() -> dict:
    """The same from the counters (rows of all zeros left out)."""
    out: dict = {}
    for row in QueueCount.objects.all():
        c = Counter({s: getattr(row, s) for s in STATUSES if getattr(row, s)})
        if c:
            out[(row.project_id, row.annotator_id)] = c
    return out


def finish(a: Assignment, who) -> None:
    svc.item_no_pii_set(assignment=a, user=who, version=None, value=True)
    svc.item_submit(assignment=a, user=who, version=None)


def test_a_plan_submits_skips_and_reopens_keep_the_counters_exact(members, ws_project, planned):
    planned("blind")
    assert kept() == counted() and kept()
    who = members["annotator"]
    items = list(Assignment.objects.filter(annotator=who).order_by("order"))
    finish(items[0], who)
    svc.item_submit(assignment=items[0], user=who, version=None)  # a double submit counts once
    svc.span_add(assignment=items[1], user=who, version=None, start=0, end=3, label="NAME")  # in progress
    svc.item_skip(assignment=items[2], user=who, version=None)
    finish(items[3], who)
    svc.item_reopen(assignment=items[3], user=who, version=None)
    assert kept() == counted()
    progress = queue_progress(who, ws_project)
    assert (progress["total"], progress["done"], progress["skipped"]) == (len(items), 1, 1)


def test_a_reassignment_moves_the_counts_with_the_work(members, ws_project, planned, make_user):
    from annotator.services.projects import membership_set

    planned("blind")
    third = make_user("annotator3")
    membership_set(project=ws_project, user=third, role="annotator")
    who = members["annotator"]
    finish(Assignment.objects.filter(annotator=who).order_by("order").first(), who)
    summary = assignments_reassign(project=ws_project, from_user=who, to_users=[third])
    assert summary["moved"] > 0
    assert kept() == counted()
    assert queue_progress(third, ws_project)["total"] == summary["moved"]


def test_the_admin_edits_and_deletions_keep_the_counters_exact(members, ws_project, planned, make_user):
    planned("blind")
    who = members["annotator"]
    a = Assignment.objects.filter(annotator=who).order_by("order").first()
    a.status = Assignment.Status.SKIPPED  # an admin's change form saves the whole row
    a.annotator = make_user("annotator3")
    a.save()
    assert kept() == counted()
    Assignment.objects.filter(annotator=who).order_by("order").last().delete()
    assert kept() == counted()
    Dialogue.objects.get(project=ws_project, external_id="d1").delete()  # its messages' assignments go
    assert kept() == counted()
    members["annotator2"].delete()  # their counters go with them
    assert kept() == counted()
    Project.objects.get(pk=ws_project.pk).delete()
    assert kept() == counted() == {} and not QueueCount.objects.exists()


def test_a_reimport_leaves_the_counters_as_they_were(members, ws_project, planned, corpus_bytes):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    planned("blind")
    before = kept()
    corpus_import(project=ws_project, dialogues=parse_upload(corpus_bytes, name="small.jsonl"),
                  source="small.jsonl", skip_existing=True)
    assert kept() == counted() == before


def test_recount_restores_counters_a_bulk_load_went_around(members, ws_project, planned):
    planned("blind")
    right = kept()
    QueueCount.objects.update(done=5)
    QueueCount.recount(ws_project.pk)
    assert kept() == right == counted()


@pytest.mark.django_db(transaction=True)
def test_concurrent_submits_add_up_exactly(members, ws_project, planned):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (DATABASE_URL); SQLite serialises writers anyway")
    planned("blind")
    people = [members["annotator"], members["annotator2"]]
    work = [(a, who) for who in people for a in Assignment.objects.filter(annotator=who)]
    for a, who in work:
        svc.item_no_pii_set(assignment=a, user=who, version=None, value=True)
    barrier, errors = threading.Barrier(len(work) * 2), []

    def submit(a, who):
        barrier.wait()
        try:
            svc.item_submit(assignment=Assignment.objects.get(pk=a.pk), user=who, version=None)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=item) for item in work * 2]  # every item twice at once
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert kept() == counted()
    assert all(queue_progress(who, ws_project)["done"] == queue_progress(who, ws_project)["total"] for who in people)


def test_the_queue_pages_by_cursor_over_every_item_both_ways(members, ws_project, planned, client):
    planned("blind")
    who = members["annotator"]
    everything = list(Assignment.objects.filter(annotator=who).order_by("order", "pk").values_list("pk", flat=True))
    assert len(everything) > 2
    seen, page = [], queue_page(who, ws_project, per_page=2)
    assert not page["has_prev"] and page["total"] == len(everything)
    while True:
        seen += [a.pk for a in page["rows"]]
        if not page["has_next"]:
            break
        page = queue_page(who, ws_project, after=page["next_key"], per_page=2)
    assert seen == everything
    back = []
    while page["has_prev"]:
        page = queue_page(who, ws_project, before=page["prev_key"], per_page=2)
        back = [a.pk for a in page["rows"]] + back
    assert back + seen[len(back):] == everything and back == everything[:len(back)]
    finish(Assignment.objects.get(pk=everything[0]), who)
    assert queue_page(who, ws_project, status="done")["total"] == 1
    assert queue_page(who, ws_project, q="zzz")["total"] == 0  # the matches, when they fit on a page
    assert queue_page(who, ws_project, q=" ", per_page=2)["total"] is None  # more: not counted

    client.force_login(who)
    url = reverse("workspace-list", kwargs={"slug": ws_project.slug})
    first = Assignment.objects.get(pk=everything[0])
    response = client.get(url, {"after": f"{first.order}-{first.pk}"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and f"#2–{min(51, len(everything))} · {len(everything)} items" in \
        response.content.decode()
    assert client.get(url, {"after": "99999999999999999999-1"}).status_code == 404
    assert client.get(url, {"before": "x-1"}).status_code == 200  # a malformed cursor is the first page
