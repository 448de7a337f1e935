"""An item changed after its decision (or decided while an annotator has it
reopened) can be decided, on PostgreSQL, whose JSON refuses NaN.

Both sequences leave the adjudicator with no disputed span (the annotators now agree, or only one
of them is counted), which once made ``model_favour`` return ``rate: NaN`` and every decision
answer 500.
"""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem, Annotation, Assignment
from annotator.services.adjudication import adjudication_submit, gold_merge_ready
from annotator.services.workspace import item_reopen, item_submit, span_relabel
from tests.annotator.helpers import msg

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def _assignment(user, message) -> Assignment:
    return Assignment.objects.get(annotator=user, message=message)


def test_a_decision_revised_after_the_item_changed_settles(require_postgres, study, members):
    gold_merge_ready(project=study)
    m = msg(study, "d1", 3)  # NAME "Alex" (annotator) vs LOCATION "Alex" (annotator2)
    item = AdjudicationItem.objects.get(message=m)
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(0, 4, "NAME")], version=item.version)

    a2 = item_reopen(assignment=_assignment(members["annotator2"], m), user=members["annotator2"], version=None)
    span_relabel(assignment=a2, user=members["annotator2"], version=None,
                 annotation_id=Annotation.objects.get(assignment=a2).pk, label="NAME")
    item_submit(assignment=a2, user=members["annotator2"], version=None)
    item.refresh_from_db()
    assert item.status == AdjudicationItem.Status.OPEN  # changed after decision

    decision = adjudication_submit(item=item, user=members["adjudicator"], spans=[(0, 4, "NAME")],
                                   version=item.version)
    item.refresh_from_db()
    assert item.status == AdjudicationItem.Status.SETTLED
    decision.refresh_from_db()
    assert decision.details["model_favour"]["disputed"] == 0
    assert decision.details["model_favour"]["rate"] is None  # no dispute: no rate, not NaN


def test_a_first_decision_while_an_annotator_has_the_item_reopened_settles(require_postgres, study, members):
    gold_merge_ready(project=study)
    m = msg(study, "d1", 2)  # EMAIL (annotator) vs nothing (annotator2)
    item_reopen(assignment=_assignment(members["annotator2"], m), user=members["annotator2"], version=None)
    item = AdjudicationItem.objects.get(message=m)
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=item.version)
    item.refresh_from_db()
    assert item.status == AdjudicationItem.Status.SETTLED
