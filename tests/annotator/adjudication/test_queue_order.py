"""The adjudication queue's order (risk, then dialogue order) read without joining every message
(issue 14 item 4): the same order as the join, page by page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.models import AdjudicationItem, Message
from annotator.selectors.adjudication import next_open_item, queue_page
from annotator.services.adjudication import gold_merge_ready
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("tie", [False, True])
def test_the_queue_is_in_risk_then_dialogue_order(study, tie):
    gold_merge_ready(project=study)
    items = AdjudicationItem.objects.filter(project=study, status="open")
    assert items.count() >= 3
    if tie:  # equal risk: dialogue and position decide, here against the order of the keys
        items.update(risk=2, risk_weight=5)
        Message.objects.filter(pk=msg(study, "d1", 2).pk).update(position=100)
        Message.objects.filter(pk=msg(study, "d1", 3).pk).update(position=99)
    joined = [i.pk for i in items.order_by("-risk", "-risk_weight", "message__dialogue_id", "message__position")]
    with CaptureQueriesContext(connection) as queries:
        paged = [row.pk for n in range(1, len(joined) + 1) for row in queue_page(study, page=n, per_page=1)[0]]
    assert paged == joined
    if tie:
        assert joined != sorted(joined)
    assert not any("JOIN" in q["sql"] and "OFFSET" in q["sql"] for q in queries)
    assert next_open_item(study).pk == joined[0]
    assert next_open_item(study, exclude=joined[0]).pk == joined[1]


def test_the_unfiltered_queue_is_counted_once_per_revision_not_per_page(study):
    """Issue 26: the pager's total of the open (or settled) queue is the cached queue count; a
    filtered queue is still counted, and both give the same total."""
    gold_merge_ready(project=study)
    n = AdjudicationItem.objects.filter(project=study, status="open").count()
    assert queue_page(study)[1] == n  # counts, caches the figures
    with CaptureQueriesContext(connection) as queries:
        assert queue_page(study)[1] == n
    assert not any("COUNT(" in q["sql"] and "annotator_adjudicationitem" in q["sql"] for q in queries)
    assert queue_page(study, q="d")[1] == AdjudicationItem.objects.filter(
        project=study, status="open", message__dialogue__external_id__icontains="d").count()
