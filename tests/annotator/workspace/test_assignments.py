"""Assignment plans and reassignment, stored: reproducible, balanced, never the same item twice."""

from __future__ import annotations

from collections import Counter

import pytest

from annotator.models import Assignment, AssignmentPlan, AuditEvent
from annotator.services import workspace as svc
from annotator.services.assignments import PlanError, assignments_reassign, plan_create

pytestmark = pytest.mark.django_db


def rows():
    return sorted(Assignment.objects.values_list("annotator__username", "message_id", "condition", "order"))


def test_plan_is_stored_and_reproducible(members, ws_project, run):
    people = [members["annotator"], members["annotator2"], members["adjudicator"]]
    plan = plan_create(project=ws_project, strategy="flagged_audit", runs=[run], audit_rate=0.5, k=2,
                       seed=42, annotators=people, by=members["admin"])
    first = rows()
    assert plan.seed == 42 and plan.summary["assignments"] == len(first) == 10
    assert plan.params["runs"] == [run.pk] and plan.params["annotators"] == ["adjudicator", "annotator", "annotator2"]
    assert AuditEvent.objects.filter(action="assignment.plan").count() == 1
    Assignment.objects.all().delete()
    plan_create(project=ws_project, strategy="flagged_audit", runs=[run], audit_rate=0.5, k=2, seed=42,
                annotators=people)
    assert rows() == first
    load = Counter(a for a, *_ in first)
    assert max(load.values()) - min(load.values()) <= 1


def test_a_plan_writes_its_assignments_with_copy_as_the_orm_would(members, ws_project, run, require_postgres):
    """A plan's rows go in with COPY (200,000 assignments at 100k messages: 49.5 s as
    bulk_create's instances and INSERTs), every column as the ORM would have written it, the
    annotators' counters moved by the rows added."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.models import QueueCount

    people = [members["annotator"], members["annotator2"]]
    planned = plan_create(project=ws_project, strategy="flagged_audit", runs=[run], audit_rate=0.5, k=1, seed=4,
                          annotators=people)
    with CaptureQueriesContext(connection) as queries:
        plan = plan_create(project=ws_project, strategy="dialogues", n_dialogues=2, k=2, seed=4, annotators=people)
    writes = [q["sql"].split()[0] for q in queries
              if q["sql"].startswith(("INSERT", "COPY")) and '"annotator_assignment"' in q["sql"].split("(")[0]]
    assert writes == ["COPY"]
    new = Assignment.objects.filter(plan=plan).order_by("annotator_id", "order")
    assert new.count() == plan.summary["assignments"] == 12 - Assignment.objects.filter(plan=planned).count()
    for a in new:
        assert (a.status, a.version, a.undo_log, a.comment, a.no_pii, a.active_seconds) == ("pending", 0, [], "", False, 0)
        assert a.created_at is not None and a.started_at is None and a.inclusion_probability == 1.0 and a.flagged is None
    assert len({a.public_id for a in Assignment.objects.all()}) == 12
    for user in people:  # each queue goes on from where the first plan left it, in dialogue order
        orders = list(Assignment.objects.filter(annotator=user).order_by("order").values_list("order", flat=True))
        assert orders == list(range(len(orders)))
    counted = {q.annotator_id: q.pending for q in QueueCount.objects.filter(project=ws_project)}
    QueueCount.recount(ws_project.pk)
    assert counted == {q.annotator_id: q.pending for q in QueueCount.objects.filter(project=ws_project)}


def test_a_rerun_adds_nothing_and_nobody_gets_an_item_twice(members, ws_project, planned):
    planned("blind")
    before = Assignment.objects.count()
    plan = planned("blind", seed=8)
    assert Assignment.objects.count() == before == 12 and plan.summary["items_already_covered"] == 6


def test_queue_order_follows_the_dialogues(members, ws_project, planned):
    planned("blind")
    for who in ("annotator", "annotator2"):
        seq = list(Assignment.objects.filter(annotator=members[who]).order_by("order")
                   .values_list("message__dialogue__external_id", "message__position"))
        assert seq == sorted(seq)


def test_a_second_plan_appends_to_the_queue(members, ws_project, run):
    plan_create(project=ws_project, strategy="dialogues", n_dialogues=1, k=1, seed=1,
                annotators=[members["annotator"]])
    n = Assignment.objects.count()
    plan_create(project=ws_project, strategy="dialogues", n_dialogues=2, k=1, seed=1,
                annotators=[members["annotator"]])
    orders = list(Assignment.objects.order_by("order").values_list("order", flat=True))
    assert orders == list(range(6)) and n < 6


def test_randomized_plan_balances_conditions_per_annotator(members, ws_project, planned):
    # d1 has 4 messages, d2 has 2; conditions go by (annotator, dialogue): each annotator has one
    # dialogue blind and the other aware, and the two annotators differ on every dialogue.
    plan = planned("randomized")
    for who in ("annotator", "annotator2"):
        per = dict(Assignment.objects.filter(annotator=members[who])
                   .values_list("message__dialogue__external_id", "condition").distinct())
        assert sorted(per.values()) == ["aware", "blind"]
        row = plan.summary["per_annotator"][who]
        assert row["items"] == 6 and {row["blind"], row["aware"]} == {4, 2}
    assert plan.summary["paired_items"] == 6


@pytest.mark.parametrize("kwargs,match", [
    ({"strategy": "flagged", "runs": []}, "at least one detector run"),
    ({"strategy": "dialogues", "n_dialogues": 1, "k": 3}, "3 distinct annotators"),
    ({"strategy": "dialogues", "n_dialogues": 9}, "Only 2 dialogues"),
])
def test_plan_errors(members, ws_project, kwargs, match):
    with pytest.raises(PlanError, match=match):
        plan_create(project=ws_project, annotators=[members["annotator"], members["annotator2"]],
                    **{"k": 2, "seed": 1, **kwargs})
    assert not AssignmentPlan.objects.exists()


def test_outsiders_cannot_be_assigned(members, ws_project):
    with pytest.raises(PlanError, match="Not members"):
        plan_create(project=ws_project, strategy="dialogues", n_dialogues=1, k=1, seed=1,
                    annotators=[members["outsider"]])


def test_run_of_another_project_is_refused(members, ws_project, run):
    from annotator.models import DetectorRun
    from annotator.services.projects import project_create

    other = project_create(name="Other", slug="other")
    foreign = DetectorRun.objects.create(project=other, detector="x")
    with pytest.raises(PlanError, match="does not belong"):
        plan_create(project=ws_project, strategy="flagged", runs=[foreign.pk], k=1, seed=1,
                    annotators=[members["annotator"]])


def test_dry_run_writes_nothing(members, ws_project):
    plan = plan_create(project=ws_project, strategy="dialogues", n_dialogues=2, k=2, seed=3, dry_run=True,
                       annotators=[members["annotator"], members["annotator2"]])
    assert plan.pk is None and plan.summary["assignments"] == 12 and not Assignment.objects.exists()


def test_reassign_moves_unfinished_work_and_resets_it(members, ws_project, planned, make_user):
    from annotator.services.projects import membership_set

    planned("blind")
    third = make_user("annotator3")
    membership_set(project=ws_project, user=third, role="annotator")
    who = members["annotator"]
    items = list(Assignment.objects.filter(annotator=who).order_by("order"))
    svc.item_no_pii_set(assignment=items[0], user=who, version=None, value=True)
    svc.item_submit(assignment=items[0], user=who, version=None)
    svc.span_add(assignment=items[1], user=who, version=None, start=0, end=3, label="NAME")
    summary = assignments_reassign(project=ws_project, from_user=who, to_users=[members["annotator2"], third])
    assert summary == {"moved": 5, "kept": 0, "to": {"annotator3": 5}}
    moved = Assignment.objects.get(pk=items[1].pk)
    assert moved.annotator == third and moved.status == "pending" and not moved.annotations.exists()
    assert Assignment.objects.get(pk=items[0].pk).annotator == who
    assert AuditEvent.objects.filter(action="assignment.reassign_dropped").count() == 1


def test_reassign_with_nobody_eligible_keeps_the_work(members, ws_project, planned):
    planned("blind")
    summary = assignments_reassign(project=ws_project, from_user=members["annotator"],
                                   to_users=[members["annotator2"]])
    assert summary["moved"] == 0 and summary["kept"] == 6
    with pytest.raises(PlanError):
        assignments_reassign(project=ws_project, from_user=members["annotator"], to_users=[members["annotator"]])


# --- one condition per (annotator, dialogue), across plans and reassignment ---------------------


def clusters() -> dict:
    out: dict = {}
    for who, d, cond in Assignment.objects.values_list("annotator_id", "message__dialogue_id", "condition"):
        out.setdefault((who, d), set()).add(cond)
    return out


def test_randomized_plans_keep_one_condition_per_annotator_and_dialogue(members, ws_project, run):
    ws_project.visibility_mode = "randomized"
    ws_project.save(update_fields=["visibility_mode"])
    first = plan_create(project=ws_project, strategy="flagged", runs=[run], k=1, seed=3,
                        annotators=[members["annotator"]])
    second = plan_create(project=ws_project, strategy="dialogues", n_dialogues=2, k=2, seed=5,
                         annotators=[members["annotator"], members["annotator2"]])
    assert all(len(c) == 1 for c in clusters().values()), clusters()
    for plan in (first, second):
        assert plan.params["condition_unit"] == "annotator_dialogue"
        assert plan.summary["exposure"]["exposed"] == 0


def test_reassigned_items_take_the_new_annotators_condition_in_that_dialogue(members, ws_project):
    ws_project.visibility_mode = "randomized"
    ws_project.save(update_fields=["visibility_mode"])
    for seed in range(6):
        Assignment.objects.all().delete()
        plan_create(project=ws_project, strategy="dialogues", n_dialogues=2, k=1, seed=seed,
                    annotators=[members["annotator"], members["annotator2"]])
        assignments_reassign(project=ws_project, from_user=members["annotator"],
                             to_users=[members["annotator2"]])
        assert all(len(c) == 1 for c in clusters().values()), (seed, clusters())


def test_exposure_is_measured_from_the_stored_assignments(members, ws_project, planned):
    from annotator.selectors.assignments import condition_exposure

    plan = planned("randomized")
    assert condition_exposure(ws_project)["exposed"] == 0
    assert condition_exposure(ws_project, plan=plan)["blind"] == 6
    blind = Assignment.objects.filter(annotator=members["annotator"], condition="blind")
    Assignment.objects.filter(pk=blind.first().pk).update(condition="aware")  # what the per-item rule allowed
    exposure = condition_exposure(ws_project)
    assert exposure["exposed"] == blind.count() > 0 and exposure["mixed_clusters"] == 1


def test_plan_page_states_the_unit_and_flags_old_plans(client, members, ws_project, planned):
    plan = planned("randomized")
    client.force_login(members["admin"])
    page = client.get(f"/p/{ws_project.slug}/assignments/plans/{plan.pk}/").content.decode()
    assert "(annotator, dialogue)" in page and "old rule" not in page
    old = AssignmentPlan.objects.create(project=ws_project, seed=1, summary={"assignments": 0},
                                        params={"strategy": "dialogues", "visibility_mode": "randomized"})
    page = client.get(f"/p/{ws_project.slug}/assignments/plans/{old.pk}/").content.decode()
    assert "old rule" in page


# --- the sampling design, per message ----------------------------------------------------------


def test_audit_plan_records_each_messages_inclusion_probability(members, ws_project, run):
    from annotator.selectors.assignments import audit_sample_weights, design_weights

    plan = plan_create(project=ws_project, strategy="flagged_audit", runs=[run], audit_rate=0.5, k=1, seed=4,
                       annotators=[members["annotator"]])
    assert plan.summary["flagged"] == 4 and plan.summary["audit_sampled"] == 1
    p_audit = 1 / plan.summary["unflagged_pool"]
    rows = {a.message_id: a for a in Assignment.objects.all()}
    samples = {s.message_id: s for _, s in audit_sample_weights(ws_project)}
    assert set(samples) == set(rows)
    for mid, s in samples.items():
        assert s.flagged == rows[mid].flagged
        assert s.inclusion_probability == pytest.approx(1.0 if s.flagged else p_audit)
        assert s.weight == pytest.approx(1 / s.inclusion_probability)
    assert sum(not s.flagged for s in samples.values()) == 1
    audited = next(s for s in samples.values() if not s.flagged)
    assert design_weights(ws_project) == {audited.key: audited.weight}
