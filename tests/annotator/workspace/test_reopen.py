"""A submitted item is read-only until it is reopened; re-submitting it merges it again
(gold recomputed, or back to the adjudicator when gold was their decision); exports built before
the change say they are stale; active time is capped by the wall clock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    Annotation,
    Assignment,
    AuditEvent,
    Dialogue,
    Export,
    GoldSpan,
    Membership,
    Message,
)
from annotator.services import workspace as svc
from annotator.services.adjudication import adjudication_submit
from tests.annotator.helpers import post_action

pytestmark = pytest.mark.django_db

Outcome = AdjudicationDecision.Outcome
FRED = (3, 7)  # "ok Fred"


@pytest.fixture
def fred(project, members):
    """"ok Fred", given blind to both annotators (k = 2)."""
    d = Dialogue.objects.create(project=project, external_id="d-fred")
    m = Message.objects.create(dialogue=d, project=project, position=0, speaker="Student", text="ok Fred")
    return {who: Assignment.objects.create(project=project, annotator=members[who], message=m)
            for who in ("annotator", "annotator2")}


@pytest.fixture
def act(members, django_capture_on_commit_callbacks):
    """Call a workspace service as the item's annotator with the version the page shows."""

    def call(fn, a: Assignment, **kwargs):
        a.refresh_from_db()
        with django_capture_on_commit_callbacks(execute=True):
            return fn(assignment=a, user=a.annotator, version=a.version, **kwargs)

    return call


def _no_pii_both(act, fred):
    for a in fred.values():
        act(svc.item_no_pii_set, a, value=True)
        act(svc.item_submit, a)


def _fred_both(act, fred):
    for a in fred.values():
        act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME")
        act(svc.item_submit, a)


def pseudo(user) -> str:
    return Membership.objects.get(user=user).pseudonym


# ----------------------------------------------------------------------------------- read-only


def test_a_submitted_item_refuses_every_edit(act, fred):
    """The repro: after submit, marking "Fred" used to be saved (and never reach gold)."""
    _no_pii_both(act, fred)
    a = fred["annotator"]
    edits = [
        (svc.span_add, {"start": FRED[0], "end": FRED[1], "label": "NAME"}),
        (svc.item_no_pii_set, {"value": False}),
        (svc.item_flag_set, {"uncertain": True, "comment": "late"}),
        (svc.item_undo, {}),
        (svc.item_skip, {}),
    ]
    for fn, kwargs in edits:
        with pytest.raises(svc.WorkspaceError) as exc:
            act(fn, a, **kwargs)
        assert "Reopen" in exc.value.message or "submitted" in exc.value.message
    a.refresh_from_db()
    assert a.status == "done" and a.no_pii and not a.uncertain
    assert not Annotation.objects.filter(assignment=a).exists()


def test_span_delete_and_relabel_after_submit_are_refused(act, fred):
    _fred_both(act, fred)
    a = fred["annotator"]
    ann = Annotation.objects.get(assignment=a)
    with pytest.raises(svc.ReadOnlyError):
        act(svc.span_delete, a, annotation_id=ann.pk)
    with pytest.raises(svc.ReadOnlyError):
        act(svc.span_relabel, a, annotation_id=ann.pk, label="LOCATION")
    assert Annotation.objects.filter(assignment=a, label="NAME").count() == 1


def test_reopen_is_audited_and_makes_the_item_editable(act, fred, members):
    _no_pii_both(act, fred)
    a = act(svc.item_reopen, fred["annotator"])
    assert a.status == "in_progress"
    event = AuditEvent.objects.get(action="assignment.reopen")
    assert event.user == members["annotator"] and event.object_id == str(a.pk)
    act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME")
    with pytest.raises(svc.WorkspaceError):  # only a submitted item can be reopened
        act(svc.item_reopen, a)


# ----------------------------------------------------------------------------------- re-merge


def test_a_late_catch_after_reopen_leaves_the_unanimous_gold(act, fred, members):
    """The repro: gold said "no PII"; annotator 1 catches "Fred" after submit. The old gold
    must go; the disagreement (a possible leak) goes to the adjudicator."""
    _no_pii_both(act, fred)
    message = fred["annotator"].message
    assert AdjudicationDecision.objects.get(message=message).outcome == Outcome.UNANIMOUS
    a = act(svc.item_reopen, fred["annotator"])
    act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a)
    assert not AdjudicationDecision.objects.filter(message=message).exists()
    item = AdjudicationItem.objects.get(message=message)
    assert item.status == "open" and item.risk_details["kind"] == "possible leak"
    assert not item.changed_after_decision  # the gold was automatic: nothing of a person's is overruled
    assert AuditEvent.objects.filter(action="gold.remerge").exists()


def test_both_catch_fred_after_reopen_and_gold_has_the_name(act, fred):
    _no_pii_both(act, fred)
    for a in fred.values():
        act(svc.item_reopen, a)
        act(svc.item_no_pii_set, a, value=False)
        act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME")
        act(svc.item_submit, a)
    message = fred["annotator"].message
    gold = GoldSpan.objects.get(message=message)
    assert (gold.start, gold.end, gold.label, gold.provenance) == (*FRED, "NAME", "unanimous")
    assert not AdjudicationItem.objects.filter(message=message).exists()


def test_a_span_deleted_after_reopen_is_no_longer_credited(act, fred, members):
    """The reverse repro: the gold span must not go on crediting an annotator who deleted it."""
    _fred_both(act, fred)
    message = fred["annotator"].message
    assert len(GoldSpan.objects.get(message=message).annotators) == 2
    a = act(svc.item_reopen, fred["annotator"])
    act(svc.span_delete, a, annotation_id=Annotation.objects.get(assignment=a).pk)
    act(svc.item_no_pii_set, a, value=True)
    act(svc.item_submit, a)
    me = pseudo(members["annotator"])
    assert not any(me in str(g.annotators) for g in GoldSpan.objects.filter(message=message))
    assert AdjudicationItem.objects.get(message=message).status == "open"


def test_resubmitting_unchanged_keeps_gold_as_it_is(act, fred):
    _fred_both(act, fred)
    gold = GoldSpan.objects.get()
    a = act(svc.item_reopen, fred["annotator"])
    act(svc.item_submit, a)
    assert GoldSpan.objects.get().pk == gold.pk
    assert not AdjudicationItem.objects.exists()


def test_a_change_after_an_adjudicated_decision_goes_back_to_the_adjudicator(act, fred, members):
    """Gold an adjudicator decided is never overwritten: the item returns to their queue."""
    a1, a2 = fred["annotator"], fred["annotator2"]
    act(svc.span_add, a1, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a1)
    act(svc.item_no_pii_set, a2, value=True)
    act(svc.item_submit, a2)
    item = AdjudicationItem.objects.get()
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(*FRED, "NAME")], version=item.version)
    decision = AdjudicationDecision.objects.get()
    assert decision.outcome == Outcome.ADJUDICATED

    a1 = act(svc.item_reopen, a1)  # annotator 1 changes their mind: LOCATION, not NAME
    ann = Annotation.objects.get(assignment=a1)
    act(svc.span_relabel, a1, annotation_id=ann.pk, label="LOCATION")
    act(svc.item_submit, a1)

    item.refresh_from_db()
    assert item.status == "open" and item.changed_after_decision and item.decision_id == decision.pk
    gold = GoldSpan.objects.get()  # the adjudicator's gold stands until they decide again
    assert (gold.label, gold.provenance) == ("NAME", "adjudicated")
    assert AuditEvent.objects.filter(action="adjudication.changed_after_decision").exists()

    adjudication_submit(item=item, user=members["adjudicator"], spans=[(*FRED, "NAME")],
                        version=item.version, confirm_drop=True)
    item.refresh_from_db()
    assert item.status == "settled" and not item.changed_after_decision


def test_unchanged_resubmit_after_an_adjudicated_decision_stays_settled(act, fred, members):
    a1, a2 = fred["annotator"], fred["annotator2"]
    act(svc.span_add, a1, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a1)
    act(svc.item_no_pii_set, a2, value=True)
    act(svc.item_submit, a2)
    item = AdjudicationItem.objects.get()
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(*FRED, "NAME")], version=item.version)
    act(svc.item_submit, act(svc.item_reopen, a1))
    item.refresh_from_db()
    assert item.status == "settled"


# ----------------------------------------------------------------------------------- views


def test_the_page_of_a_submitted_item_offers_reopen_and_no_edits(client, members, act, fred):
    _no_pii_both(act, fred)
    a = fred["annotator"]
    client.force_login(members["annotator"])
    url = reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id})
    body = client.get(url).content.decode()
    assert "Submitted" in body and "Reopen" in body
    assert 'data-cmd="reopen"' in body and 'data-cmd="submit"' not in body
    assert "<kbd>o</kbd>" in body  # the key, in the button and in the shortcuts help


def test_edits_of_a_submitted_item_are_refused_over_http(client, members, act, fred):
    _no_pii_both(act, fred)
    a = fred["annotator"]
    client.force_login(members["annotator"])
    response = post_action(client, a, "span-add", start=FRED[0], end=FRED[1], label="NAME")
    assert response.status_code == 423 and "Reopen" in response["X-Blindspot-Error"]
    assert not Annotation.objects.exists()


def test_reopen_over_http_then_resubmit_re_merges(client, members, act, fred, django_capture_on_commit_callbacks):
    _no_pii_both(act, fred)
    a = fred["annotator"]
    client.force_login(members["annotator"])
    response = post_action(client, a, "reopen")
    assert response.status_code == 200 and 'data-cmd="submit"' in response.content.decode()
    assert post_action(client, a, "span-add", start=FRED[0], end=FRED[1], label="NAME").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert post_action(client, a, "submit").status_code == 200
    assert AdjudicationItem.objects.get(message=a.message).risk_details["kind"] == "possible leak"
    assert not AdjudicationDecision.objects.filter(message=a.message).exists()


@pytest.mark.parametrize("who, status", [("annotator2", 404), ("outsider", 404), ("admin", 404)])
def test_only_the_owner_can_reopen(client, members, act, fred, who, status):
    _no_pii_both(act, fred)
    client.force_login(members[who])
    assert post_action(client, fred["annotator"], "reopen").status_code == status
    fred["annotator"].refresh_from_db()
    assert fred["annotator"].status == "done"


# ----------------------------------------------------------------------------------- stale exports


@pytest.fixture
def built(django_capture_on_commit_callbacks, settings):
    settings.BLINDSPOT_SURROGATE_KEY = "test-release-key-0001"

    def build(start, **kwargs) -> Export:
        with django_capture_on_commit_callbacks(execute=True):
            export = start(**kwargs)
        export.refresh_from_db()
        assert export.status == "succeeded", export.error
        return export

    return build


def test_exports_built_before_a_change_after_submit_are_stale(client, members, act, fred, built):
    from annotator.selectors.exports import export_is_stale
    from annotator.services.exports import gold_export_start
    from annotator.services.releases import release_start

    _no_pii_both(act, fred)
    gold = built(gold_export_start, project=fred["annotator"].project, user=members["admin"])
    release = built(release_start, project=gold.project, user=members["admin"], mode="tag")
    assert not export_is_stale(gold) and not export_is_stale(release)

    a = act(svc.item_reopen, fred["annotator"])
    assert not export_is_stale(gold)  # reopening alone changes nothing yet
    act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a)
    assert export_is_stale(gold) and export_is_stale(release)

    client.force_login(members["admin"])
    for export in (gold, release):
        body = client.get(reverse("export-detail", kwargs={"slug": "test", "export_id": export.pk})).content.decode()
        assert "Stale" in body and "gold changed after this was built" in body
    listing = client.get(reverse("export-list", kwargs={"slug": "test"})).content.decode()
    assert listing.count("badge stale") == 2


def test_new_gold_elsewhere_does_not_make_an_export_stale(members, act, fred, built, project):
    from annotator.selectors.exports import export_is_stale
    from annotator.services.exports import gold_export_start

    _no_pii_both(act, fred)
    export = built(gold_export_start, project=project, user=members["admin"])
    d = Dialogue.objects.create(project=project, external_id="d-new")
    m = Message.objects.create(dialogue=d, project=project, position=0, speaker="Tutor", text="hi Ann")
    for who in ("annotator", "annotator2"):
        a = Assignment.objects.create(project=project, annotator=members[who], message=m)
        act(svc.span_add, a, start=3, end=6, label="NAME")
        act(svc.item_submit, a)
    assert GoldSpan.objects.filter(message=m).exists()
    assert not export_is_stale(export)


# ----------------------------------------------------------------------------------- active time


def test_active_time_is_capped_by_the_wall_clock(client, members, fred):
    """A client posting active=300 twenty times a second is credited no more than the time
    since the item was opened (or last reported)."""
    a = fred["annotator"]
    client.force_login(members["annotator"])
    assert client.get(reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id})).status_code == 200
    Assignment.objects.filter(pk=a.pk).update(timed_at=timezone.now() - timedelta(seconds=40))
    url = reverse("workspace-time", kwargs={"slug": "test", "public_id": a.public_id})
    for _ in range(20):
        assert client.post(url, {"active": "300"}).status_code == 204
    a.refresh_from_db()
    assert 39 <= a.active_seconds <= 42


def test_time_carried_by_actions_is_capped_too(members, act, fred):
    a = fred["annotator"]
    Assignment.objects.filter(pk=a.pk).update(timed_at=timezone.now() - timedelta(seconds=10))
    act(svc.span_add, a, start=FRED[0], end=FRED[1], label="NAME", active=300)
    act(svc.span_delete, a, annotation_id=Annotation.objects.get().pk, active=300)
    a.refresh_from_db()
    assert 9 <= a.active_seconds <= 12


def test_honest_reports_are_credited_in_full(client, members, fred):
    a = fred["annotator"]
    client.force_login(members["annotator"])
    url = reverse("workspace-time", kwargs={"slug": "test", "public_id": a.public_id})
    client.get(reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id}))
    for _ in range(3):
        Assignment.objects.filter(pk=a.pk).update(timed_at=timezone.now() - timedelta(seconds=31))
        client.post(url, {"active": "29.5"})
    a.refresh_from_db()
    assert a.active_seconds == pytest.approx(3 * 29.5)


def test_the_adjudicator_sees_the_item_changed_after_their_decision(client, members, act, fred):
    a1, a2 = fred["annotator"], fred["annotator2"]
    act(svc.span_add, a1, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a1)
    act(svc.item_no_pii_set, a2, value=True)
    act(svc.item_submit, a2)
    item = AdjudicationItem.objects.get()
    adjudication_submit(item=item, user=members["adjudicator"], spans=[], version=item.version, confirm_drop=True)
    a2 = act(svc.item_reopen, a2)  # annotator 2 now sees "Fred" too
    act(svc.item_no_pii_set, a2, value=False)
    act(svc.span_add, a2, start=FRED[0], end=FRED[1], label="NAME")
    act(svc.item_submit, a2)
    client.force_login(members["adjudicator"])
    queue = client.get(reverse("adjudication-queue", kwargs={"slug": "test"})).content.decode()
    assert "changed after decision" in queue
    page = client.get(reverse("adjudication-item", kwargs={"slug": "test", "item_id": item.pk})).content.decode()
    assert "changed after decision" in page.lower() and "Fred" in page


def test_a_reopened_item_cannot_be_skipped(act, fred):
    _no_pii_both(act, fred)
    a = act(svc.item_reopen, fred["annotator"])
    with pytest.raises(svc.WorkspaceError, match="submit it again"):
        act(svc.item_skip, a)


def test_a_reopened_item_reassigned_to_someone_else_merges_again_when_they_submit(act, fred, project, members,
                                                                                  make_user):
    """Reassigning drops the reopened item's labels; the gold must not keep crediting them."""
    from annotator.models import Role
    from annotator.services.assignments import assignments_reassign
    from annotator.services.projects import membership_set

    _fred_both(act, fred)
    act(svc.item_reopen, fred["annotator"])
    third = make_user("annotator3")
    membership_set(project=project, user=third, role=Role.ANNOTATOR)
    assignments_reassign(project=project, from_user=members["annotator"], to_users=[third], by=members["admin"])
    a = Assignment.objects.get(annotator=third)
    act(svc.item_no_pii_set, a, value=True)
    act(svc.item_submit, a)
    message = a.message
    assert not GoldSpan.objects.filter(message=message).exists()
    assert AdjudicationItem.objects.get(message=message).risk_details["kind"] == "possible leak"
