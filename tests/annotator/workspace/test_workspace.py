"""The annotation workspace: pages, every action, conflicts, undo, time, and who may do what."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Assignment, AssignmentPlan, AuditEvent
from annotator.services import workspace as svc
from tests.annotator.helpers import msg, post_action

pytestmark = pytest.mark.django_db

Origin = Annotation.Origin


def item_url(a: Assignment) -> str:
    return reverse("workspace-item", kwargs={"slug": a.project.slug, "public_id": a.public_id})


# ----------------------------------------------------------------------------------- queue & page

def test_queue_redirects_to_the_first_item_in_dialogue_order(client, members, blind_item):
    client.force_login(members["annotator"])
    response = client.get(reverse("workspace-queue", kwargs={"slug": "test"}))
    assert response.status_code == 302 and response["Location"] == item_url(blind_item)
    orders = list(Assignment.objects.filter(annotator=members["annotator"]).order_by("order")
                  .values_list("message__dialogue__external_id", "message__position"))
    assert orders == [("d1", 0), ("d1", 1), ("d1", 2), ("d1", 3), ("d2", 0), ("d2", 1)]


def test_empty_queue_goes_to_the_list(client, members, ws_project):
    client.force_login(members["annotator"])
    response = client.get(reverse("workspace-queue", kwargs={"slug": "test"}), follow=True)
    assert response.status_code == 200 and b"Nothing is assigned to you" in response.content


def test_item_page_shows_the_window_the_target_and_the_keys(client, members, blind_item, ws_project):
    client.force_login(members["annotator"])
    body = client.get(item_url(blind_item)).content.decode()
    assert 'id="target-text"' in body and "Hi Maria! Ready for fractions?" in body
    assert "yes. is 3/4 bigger than 2/3?" in body          # the next message
    assert "Email me at" not in body                         # window of 3 around position 0
    assert "If Alex has 5 apples" in body                    # the anchor, collapsible
    assert 'data-key="1"' in body and "NAME" in body and 'id="ws-keymap"' in body
    item2 = Assignment.objects.get(annotator=members["annotator"], message=msg(ws_project, "d1", 2))
    body2 = client.get(item_url(item2)).content.decode()
    assert "yes. is 3/4" in body2 and "Alex has 3 apples left." in body2 and "Hi Maria!" not in body2


def test_htmx_get_returns_the_fragment(client, members, blind_item):
    client.force_login(members["annotator"])
    body = client.get(item_url(blind_item), HTTP_HX_REQUEST="true").content.decode()
    assert body.startswith('<div id="item"') and "<html" not in body


@pytest.mark.parametrize("who,status", [("annotator2", 404), ("outsider", 404), ("admin", 404)])
def test_only_the_owner_reaches_an_item(client, members, blind_item, who, status):
    client.force_login(members[who])
    assert client.get(item_url(blind_item)).status_code == status
    assert post_action(client, blind_item, "span-add", start=3, end=8, label="NAME").status_code == status
    assert not Annotation.objects.exists()


def test_anonymous_goes_to_login(client, blind_item):
    response = client.get(item_url(blind_item))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_item_of_another_project_slug_is_404(client, members, blind_item, make_user):
    from annotator.services.projects import membership_set, project_create

    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["annotator"], role="annotator")
    client.force_login(members["annotator"])
    url = reverse("workspace-item", kwargs={"slug": "other", "public_id": blind_item.public_id})
    assert client.get(url).status_code == 404


# ----------------------------------------------------------------------------------- spans

def test_span_add_snaps_to_words_and_keeps_exact_when_asked(client, members, blind_item):
    client.force_login(members["annotator"])
    response = post_action(client, blind_item, "span-add", start=4, end=6, label="NAME")
    assert response.status_code == 200 and 'data-start="3" data-end="8"' in response.content.decode()
    ann = Annotation.objects.get()
    assert (ann.start, ann.end, ann.label, ann.origin, ann.condition) == (3, 8, "NAME", Origin.ADDED, "blind")
    post_action(client, blind_item, "undo")
    post_action(client, blind_item, "span-add", start=4, end=6, label="NAME", exact="on")
    assert Annotation.objects.get().start == 4


def test_possessive_stays_out_of_a_snapped_span(members, ws_project, planned):
    from annotator.models import Dialogue, Message

    planned("blind")
    d = Dialogue.objects.get(project=ws_project, external_id="d2")
    m = Message.objects.create(dialogue=d, project=ws_project, position=9, speaker="T", text="Maria's sister")
    a = Assignment.objects.create(project=ws_project, annotator=members["annotator"], message=m, order=99)
    ann = svc.span_add(assignment=a, user=members["annotator"], version=0, start=0, end=4, label="NAME")
    assert (ann.start, ann.end) == (0, 5)


@pytest.mark.parametrize("text,start,end,span", [
    ("What is 9755 x 468?", 8, 19, "9755 x 468"),  # dragged past the end of the message
    ("ask “Maria”, please", 4, 11, "Maria"),
    ("Email a.b@example.com.", 6, 22, "a.b@example.com"),
    ("Dr. Lopez!", 0, 10, "Dr. Lopez"),  # inside a span the punctuation stays
])
def test_a_snapped_span_leaves_out_punctuation_at_its_ends(members, ws_project, planned, text, start, end, span):
    from annotator.models import Dialogue, Message

    planned("blind")
    d = Dialogue.objects.get(project=ws_project, external_id="d2")
    m = Message.objects.create(dialogue=d, project=ws_project, position=9, speaker="T", text=text)
    a = Assignment.objects.create(project=ws_project, annotator=members["annotator"], message=m, order=99)
    ann = svc.span_add(assignment=a, user=members["annotator"], version=0, start=start, end=end, label="NAME")
    assert text[ann.start:ann.end] == span


def test_overlap_is_refused_with_a_message(client, members, blind_item):
    client.force_login(members["annotator"])
    post_action(client, blind_item, "span-add", start=3, end=8, label="NAME")
    response = post_action(client, blind_item, "span-add", start=5, end=9, label="NAME", exact="on")
    assert response.status_code == 422 and "overlaps" in response.content.decode()
    assert "overlaps" in response["X-Blindspot-Error"]
    assert Annotation.objects.count() == 1


@pytest.mark.parametrize("data,needle", [
    ({"start": 3, "end": 999, "label": "NAME"}, "outside the message"),
    ({"start": 3, "end": 8, "label": "NOPE"}, "Unknown label"),
    ({"start": 2, "end": 3, "label": "NAME", "exact": ""}, "no word"),
    ({"start": "x", "end": 3, "label": "NAME"}, "Bad request"),
])
def test_bad_span_requests_are_refused(client, members, blind_item, data, needle):
    client.force_login(members["annotator"])
    response = post_action(client, blind_item, "span-add", **data)
    assert response.status_code == 400 and needle in response.content.decode()
    assert not Annotation.objects.exists()


def test_relabel_and_delete_own_span(client, members, blind_item):
    client.force_login(members["annotator"])
    post_action(client, blind_item, "span-add", start=3, end=8, label="NAME")
    ann = Annotation.objects.get()
    assert post_action(client, blind_item, "span-relabel", annotation=ann.pk, label="USERNAME").status_code == 200
    assert Annotation.objects.get().label == "USERNAME"
    assert post_action(client, blind_item, "span-delete", annotation=ann.pk).status_code == 200
    assert not Annotation.objects.exists()
    assert post_action(client, blind_item, "span-delete", annotation=ann.pk).status_code == 404


def test_cannot_touch_another_annotators_span(client, members, ws_project, blind_item):
    theirs = Assignment.objects.get(annotator=members["annotator2"], message=blind_item.message)
    other = svc.span_add(assignment=theirs, user=members["annotator2"], version=0, start=3, end=8, label="NAME")
    client.force_login(members["annotator"])
    assert post_action(client, blind_item, "span-delete", annotation=other.pk).status_code == 404
    assert post_action(client, blind_item, "span-relabel", annotation=other.pk, label="AGE").status_code == 404
    assert Annotation.objects.get(pk=other.pk).label == "NAME"


def test_no_javascript_fallback_redirects_back(client, members, blind_item):
    client.force_login(members["annotator"])
    response = post_action(client, blind_item, "span-add", htmx=False, start=3, end=8, label="NAME")
    assert response.status_code == 302 and response["Location"] == item_url(blind_item)
    response = post_action(client, blind_item, "span-add", htmx=False, start=3, end=8, label="NAME")
    assert response.status_code == 302  # refused, with a flash message on the page
    assert "overlaps" in client.get(item_url(blind_item)).content.decode()


# ----------------------------------------------------------------------------------- concurrency

def test_stale_version_is_a_409_and_saves_nothing(client, members, blind_item):
    client.force_login(members["annotator"])
    v = blind_item.version
    assert post_action(client, blind_item, "span-add", version=v, start=3, end=8, label="NAME").status_code == 200
    response = post_action(client, blind_item, "span-add", version=v, start=10, end=15, label="NAME")
    assert response.status_code == 409 and "another tab" in response["X-Blindspot-Error"]
    assert Annotation.objects.count() == 1


def test_double_submit_is_harmless(client, members, blind_item):
    client.force_login(members["annotator"])
    post_action(client, blind_item, "span-add", start=3, end=8, label="NAME")
    blind_item.refresh_from_db()
    v = blind_item.version
    first = post_action(client, blind_item, "submit", version=v)
    second = post_action(client, blind_item, "submit", version=v)
    assert first.status_code == second.status_code == 200
    assert first["HX-Redirect"] == second["HX-Redirect"] == reverse("workspace-queue", kwargs={"slug": "test"})
    blind_item.refresh_from_db()
    assert blind_item.status == "done" and Annotation.objects.count() == 1
    assert AuditEvent.objects.filter(action="assignment.submit").count() == 1


def test_same_decision_twice_hits_the_unique_constraint_not_a_duplicate(members, aware_item):
    from annotator.models import Prediction

    p = Prediction.objects.get(message=aware_item.message)
    svc.suggestion_accept(assignment=aware_item, user=members["annotator"], version=None, prediction_id=p.pk)
    with pytest.raises(svc.WorkspaceError):
        svc.suggestion_accept(assignment=aware_item, user=members["annotator"], version=None, prediction_id=p.pk)
    assert Annotation.objects.count() == 1


# ----------------------------------------------------------------------------------- suggestions

def test_aware_item_shows_and_decides_suggestions(client, members, aware_item, run):
    from annotator.models import Prediction

    client.force_login(members["annotator"])
    body = client.get(item_url(aware_item)).content.decode()
    p = Prediction.objects.get(message=aware_item.message)
    assert f'data-suggestion="{p.pk}"' in body and "Model suggestions" in body
    assert post_action(client, aware_item, "suggestion-accept", prediction=p.pk).status_code == 200
    ann = Annotation.objects.get()
    assert (ann.origin, ann.prediction_id, ann.condition, ann.label) == (Origin.ACCEPTED, p.pk, "aware", "NAME")
    assert post_action(client, aware_item, "suggestion-accept", prediction=p.pk).status_code == 404
    post_action(client, aware_item, "undo")
    assert post_action(client, aware_item, "suggestion-reject", prediction=p.pk).status_code == 200
    assert Annotation.objects.get().origin == Origin.REJECTED
    post_action(client, aware_item, "undo")
    assert post_action(client, aware_item, "suggestion-relabel", prediction=p.pk, label="USERNAME").status_code == 200
    assert (Annotation.objects.get().origin, Annotation.objects.get().label) == (Origin.EDITED, "USERNAME")


def test_a_span_over_a_suggestion_records_an_edit(members, aware_item):
    who = members["annotator"]
    ann = svc.span_add(assignment=aware_item, user=who, version=None, start=3, end=9, label="NAME", exact=True)
    assert ann.origin == Origin.EDITED and ann.prediction_id is not None
    svc.item_undo(assignment=aware_item, user=who, version=None)
    ann = svc.span_add(assignment=aware_item, user=who, version=None, start=4, end=6, label="NAME")
    assert ann.origin == Origin.ACCEPTED  # snapped onto the suggestion exactly


def test_relabelling_an_accepted_span_makes_it_an_edit(members, aware_item):
    from annotator.models import Prediction

    who = members["annotator"]
    p = Prediction.objects.get(message=aware_item.message)
    ann = svc.suggestion_accept(assignment=aware_item, user=who, version=None, prediction_id=p.pk)
    svc.span_relabel(assignment=aware_item, user=who, version=None, annotation_id=ann.pk, label="USERNAME")
    assert Annotation.objects.get().origin == Origin.EDITED


def test_blind_item_refuses_suggestion_ids_like_unknown_ones(client, members, blind_item):
    from annotator.models import Prediction

    client.force_login(members["annotator"])
    p = Prediction.objects.get(message=blind_item.message)
    for name in ("suggestion-accept", "suggestion-reject"):
        response = post_action(client, blind_item, name, prediction=p.pk)
        unknown = post_action(client, blind_item, name, prediction=999999)
        assert response.status_code == unknown.status_code == 404
        assert response.content == unknown.content
    assert not Annotation.objects.exists()


def test_suggestions_of_another_message_cannot_be_accepted(members, aware_item):
    from annotator.models import Prediction

    elsewhere = Prediction.objects.exclude(message=aware_item.message).first()
    with pytest.raises(svc.NotFoundError):
        svc.suggestion_accept(assignment=aware_item, user=members["annotator"], version=None,
                              prediction_id=elsewhere.pk)


# ----------------------------------------------------------------------------------- flags, submit, skip

def test_submit_needs_a_decision(client, members, blind_item):
    client.force_login(members["annotator"])
    response = post_action(client, blind_item, "submit")
    assert response.status_code == 400 and "no PII" in response.content.decode()
    assert post_action(client, blind_item, "no-pii", value="on").status_code == 200
    response = post_action(client, blind_item, "submit")
    assert response.status_code == 200 and "HX-Redirect" in response


def test_submit_waits_for_every_suggestion_in_aware(client, members, aware_item):
    client.force_login(members["annotator"])
    response = post_action(client, aware_item, "submit")
    assert response.status_code == 400 and "undecided" in response.content.decode()


def test_no_pii_is_refused_with_spans_and_rejects_pending_suggestions(members, aware_item):
    who = members["annotator"]
    a = svc.item_no_pii_set(assignment=aware_item, user=who, version=None, value=True)
    assert a.no_pii and Annotation.objects.get().origin == Origin.REJECTED
    svc.item_undo(assignment=aware_item, user=who, version=None)
    aware_item.refresh_from_db()
    assert not aware_item.no_pii and not Annotation.objects.exists()
    svc.span_add(assignment=aware_item, user=who, version=None, start=10, end=15, label="NAME")
    with pytest.raises(svc.WorkspaceError, match="has spans"):
        svc.item_no_pii_set(assignment=aware_item, user=who, version=None, value=True)


def test_rejecting_every_suggestion_is_a_decision_like_no_pii(client, members, aware_item):
    """Rejecting the only suggestion used to leave the item undecided (submit refused
    until the annotator also pressed n). Now the last reject marks the message as having no PII;
    undo takes both back, and a span added afterwards clears the mark as after n."""
    from annotator.models import Prediction

    who = members["annotator"]
    client.force_login(who)
    p = Prediction.objects.get(message=aware_item.message)
    response = post_action(client, aware_item, "suggestion-reject", prediction=p.pk)
    assert response.status_code == 200 and "No PII in this message" in response.content.decode()
    aware_item.refresh_from_db()
    assert aware_item.no_pii
    svc.item_undo(assignment=aware_item, user=who, version=None)
    aware_item.refresh_from_db()
    assert not aware_item.no_pii and not Annotation.objects.exists()

    svc.suggestion_reject(assignment=aware_item, user=who, version=None, prediction_id=p.pk)
    svc.span_add(assignment=aware_item, user=who, version=None, start=10, end=15, label="NAME")
    aware_item.refresh_from_db()
    assert not aware_item.no_pii  # a span after the rejects: the item has PII after all
    svc.item_undo(assignment=aware_item, user=who, version=None)
    svc.item_submit(assignment=aware_item, user=who, version=None)
    aware_item.refresh_from_db()
    assert aware_item.status == "done" and aware_item.no_pii


def test_rejecting_a_suggestion_beside_a_span_or_another_pending_one_decides_nothing(members, aware_item):
    from annotator.models import Prediction

    who = members["annotator"]
    p = Prediction.objects.get(message=aware_item.message)
    second = Prediction.objects.create(run=p.run, message=p.message, start=10, end=15, label="NAME", score=0.5)
    svc.suggestion_reject(assignment=aware_item, user=who, version=None, prediction_id=p.pk)
    aware_item.refresh_from_db()
    assert not aware_item.no_pii  # one still undecided
    svc.suggestion_accept(assignment=aware_item, user=who, version=None, prediction_id=second.pk)
    svc.item_undo(assignment=aware_item, user=who, version=None)
    svc.span_add(assignment=aware_item, user=who, version=None, start=16, end=19, label="NAME", exact=True)
    svc.suggestion_reject(assignment=aware_item, user=who, version=None, prediction_id=second.pk)
    aware_item.refresh_from_db()
    assert not aware_item.no_pii  # the item has a span


def test_adding_a_span_clears_no_pii_and_undo_restores_it(members, blind_item):
    who = members["annotator"]
    svc.item_no_pii_set(assignment=blind_item, user=who, version=None, value=True)
    svc.span_add(assignment=blind_item, user=who, version=None, start=3, end=8, label="NAME")
    blind_item.refresh_from_db()
    assert not blind_item.no_pii
    svc.item_undo(assignment=blind_item, user=who, version=None)
    blind_item.refresh_from_db()
    assert blind_item.no_pii and not Annotation.objects.exists()


def test_uncertain_with_comment_and_undo(client, members, blind_item):
    client.force_login(members["annotator"])
    post_action(client, blind_item, "flag", uncertain="on", comment="Is Maria a real person?")
    blind_item.refresh_from_db()
    assert blind_item.uncertain and blind_item.comment == "Is Maria a real person?"
    post_action(client, blind_item, "undo")
    blind_item.refresh_from_db()
    assert not blind_item.uncertain and blind_item.comment == ""


def test_undo_walks_back_every_step(members, blind_item):
    who = members["annotator"]
    a = svc.span_add(assignment=blind_item, user=who, version=None, start=3, end=8, label="NAME")
    svc.span_relabel(assignment=blind_item, user=who, version=None, annotation_id=a.pk, label="AGE")
    svc.span_delete(assignment=blind_item, user=who, version=None, annotation_id=a.pk)
    svc.item_undo(assignment=blind_item, user=who, version=None)
    assert Annotation.objects.get().label == "AGE"
    svc.item_undo(assignment=blind_item, user=who, version=None)
    assert Annotation.objects.get().label == "NAME"
    svc.item_undo(assignment=blind_item, user=who, version=None)
    assert not Annotation.objects.exists()
    with pytest.raises(svc.WorkspaceError, match="Nothing to undo"):
        svc.item_undo(assignment=blind_item, user=who, version=None)


def test_skip_moves_on_and_the_queue_lists_it(client, members, blind_item):
    client.force_login(members["annotator"])
    response = post_action(client, blind_item, "skip")
    assert response.status_code == 200 and response["HX-Redirect"].endswith("/queue/")
    blind_item.refresh_from_db()
    assert blind_item.status == "skipped"
    nxt = client.get(response["HX-Redirect"])
    assert nxt["Location"] != item_url(blind_item)
    listing = client.get(reverse("workspace-list", kwargs={"slug": "test"}) + "?status=skipped")
    assert item_url(blind_item) in listing.content.decode()


def test_every_decision_is_audited_with_its_condition(members, aware_item):
    from annotator.models import Prediction

    who = members["annotator"]
    p = Prediction.objects.get(message=aware_item.message)
    svc.suggestion_reject(assignment=aware_item, user=who, version=None, prediction_id=p.pk)
    svc.span_add(assignment=aware_item, user=who, version=None, start=10, end=15, label="NAME")
    svc.item_submit(assignment=aware_item, user=who, version=None)
    events = list(AuditEvent.objects.filter(object_type="Assignment").order_by("pk"))
    assert [e.action for e in events] == ["annotation.reject", "annotation.add", "assignment.submit"]
    assert all(e.details["condition"] == "aware" and e.user == who for e in events)


# ----------------------------------------------------------------------------------- time

def test_active_time_is_counted_capped_and_never_conflicts(client, members, blind_item):
    def wall(seconds):  # the page was opened, or time last reported, this long ago
        Assignment.objects.filter(pk=blind_item.pk).update(timed_at=timezone.now() - timedelta(seconds=seconds))

    client.force_login(members["annotator"])
    url = reverse("workspace-time", kwargs={"slug": "test", "public_id": blind_item.public_id})
    wall(20)
    assert client.post(url, {"active": "12.5"}).status_code == 204
    wall(3600)
    assert client.post(url, {"active": "100000"}).status_code == 204  # capped
    wall(5)
    post_action(client, blind_item, "span-add", start=3, end=8, label="NAME", active="2.5")
    blind_item.refresh_from_db()
    assert blind_item.active_seconds == pytest.approx(12.5 + svc.MAX_ACTIVE_REPORT + 2.5)
    assert blind_item.version == 1  # heartbeats do not bump the version


# ----------------------------------------------------------------------------------- others' work

def test_annotators_never_see_each_others_spans(client, members, blind_item):
    theirs = Assignment.objects.get(annotator=members["annotator2"], message=blind_item.message)
    svc.span_add(assignment=theirs, user=members["annotator2"], version=0, start=10, end=15,
                 label="NAME", exact=True)
    svc.item_flag_set(assignment=theirs, user=members["annotator2"], version=None, uncertain=True,
                 comment="zz-their-private-comment")
    client.force_login(members["annotator"])
    for url in (item_url(blind_item), reverse("workspace-list", kwargs={"slug": "test"})):
        body = client.get(url).content.decode()
        assert 'data-start="10"' not in body and "zz-their-private-comment" not in body


# ----------------------------------------------------------------------------------- admin

def test_admin_page_is_for_admins(client, members, planned):
    planned("blind")
    url = reverse("workspace-admin", kwargs={"slug": "test"})
    for who, status in [("annotator", 403), ("adjudicator", 403), ("outsider", 404), ("admin", 200)]:
        client.force_login(members[who])
        assert client.get(url).status_code == status, who


def test_admin_creates_a_plan_and_sees_statistics(client, members, ws_project, run,
                                                  django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    url = reverse("workspace-admin", kwargs={"slug": "test"})
    data = {"strategy": "flagged_audit", "runs": [run.pk], "audit_rate": "0.5", "k": "2", "seed": "11",
            "annotators": [members["annotator"].pk, members["annotator2"].pk]}
    response = client.post(url, {**data, "dry_run": "on"})
    assert response.status_code == 200 and b"Dry run" in response.content
    assert not Assignment.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):  # the plan is built as a job
        response = client.post(url, data)
    assert response.status_code == 302
    # 4 flagged messages + round(0.5 * 2) = 1 audit message, to 2 annotators each
    assert Assignment.objects.count() == 10
    plan_id = AssignmentPlan.objects.get().pk
    plan_page = client.get(reverse("workspace-plan", kwargs={"slug": "test", "plan_id": plan_id}))
    assert b"11" in plan_page.content and b"Audit sample" in plan_page.content

    who = members["annotator"]
    for a in Assignment.objects.filter(annotator=who).order_by("order")[:2]:
        Assignment.objects.filter(pk=a.pk).update(condition="aware")
        a.refresh_from_db()
        for p in svc.pending_suggestions(a):
            svc.suggestion_accept(assignment=a, user=who, version=None, prediction_id=p.pk)
        if not a.annotations.exists():
            svc.item_no_pii_set(assignment=a, user=who, version=None, value=True)
        Assignment.objects.filter(pk=a.pk).update(timed_at=timezone.now() - timedelta(minutes=1))
        svc.item_time_add(assignment=a, active=30)  # a minute after the item was opened
        svc.item_submit(assignment=a, user=who, version=None)
    stats = {s["username"]: s for s in __import__("annotator.selectors.workspace", fromlist=["x"]).annotator_stats(ws_project)}
    assert stats["annotator"]["done"] == 2 and stats["annotator"]["median_seconds"] == 30
    assert stats["annotator"]["accept_rate"] == 100.0
    body = client.get(url).content.decode()
    assert "100.0%" in body and "annotator2" in body


def test_plan_form_errors_are_shown(client, members, ws_project):
    client.force_login(members["admin"])
    url = reverse("workspace-admin", kwargs={"slug": "test"})
    response = client.post(url, {"strategy": "flagged", "k": "3", "annotators": [members["annotator"].pk]})
    assert response.status_code == 200 and b"Choose the runs" in response.content
    response = client.post(url, {"strategy": "dialogues", "n_dialogues": "1", "k": "3",
                                 "annotators": [members["annotator"].pk]})
    assert b"3 distinct annotators" in response.content


def test_reassign_moves_unfinished_work_only(client, members, ws_project, planned, make_user):
    from annotator.services.projects import membership_set

    planned("blind")
    third = make_user("annotator3")
    membership_set(project=ws_project, user=third, role="annotator")
    who = members["annotator"]
    first = Assignment.objects.filter(annotator=who).order_by("order").first()
    svc.item_no_pii_set(assignment=first, user=who, version=None, value=True)
    svc.item_submit(assignment=first, user=who, version=None)
    client.force_login(members["admin"])
    response = client.post(reverse("workspace-reassign", kwargs={"slug": "test"}),
                           {"from_user": who.pk, "to_user": ""})
    assert response.status_code == 302
    assert list(Assignment.objects.filter(annotator=who).values_list("status", flat=True)) == ["done"]
    # the other annotator already has every message: everything went to annotator3
    assert Assignment.objects.filter(annotator=third).count() == 5
    client.force_login(who)
    moved = Assignment.objects.filter(annotator=third).first()
    assert client.get(item_url(moved)).status_code == 404


def test_dashboard_panel(client, members, planned):
    planned("blind")
    client.force_login(members["annotator"])
    body = client.get("/p/test/").content.decode()
    assert reverse("workspace-queue", kwargs={"slug": "test"}) in body and "0 of 6 done" in body
    client.force_login(members["admin"])
    body = client.get("/p/test/").content.decode()
    assert 'id="annotator-stats"' in body and "seed 7" in body


def test_make_assignments_command(members, ws_project, run, capsys):
    call_command("make_assignments", "--project", "test", "--strategy", "flagged", "--runs", str(run.pk),
                 "--k", "2", "--seed", "5")
    out = capsys.readouterr().out
    assert "seed 5" in out and Assignment.objects.count() == 8  # 4 flagged messages, k = 2
    call_command("make_assignments", "--project", "test", "--strategy", "flagged", "--runs", str(run.pk),
                 "--k", "2", "--seed", "5")
    assert Assignment.objects.count() == 8  # a re-run adds nothing
