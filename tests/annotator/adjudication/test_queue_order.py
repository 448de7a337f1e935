"""The adjudication queue's order (risk, then dialogue order) paged by cursor:
each item carries its message's dialogue and position, one index serves the order, and
a page deep in the queue reads its own rows, not every row before it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.models import AdjudicationItem, Assignment, Dialogue, Message
from annotator.selectors.adjudication import next_open_item, queue_page
from annotator.services.adjudication import gold_merge_ready, gold_remerge_message
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db

OLD_ORDER = ("-risk", "-risk_weight", "message__dialogue_id", "message__position")  # joined, as it was read


@pytest.fixture
def mixed(model_project):
    """An item for every message of the project, created in reverse dialogue order (so that the
    keys run against the queue's order), with risk and weight tied across dialogues and positions."""
    d3 = Dialogue.objects.create(project=model_project, external_id="d3", message_count=6)
    Message.objects.bulk_create(Message(project=model_project, dialogue=d3, position=p, speaker="s",
                                        text=f"Message {p} of the third dialogue") for p in range(6))
    messages = list(Message.objects.filter(project=model_project).order_by("-dialogue_id", "-position"))
    assert len({m.dialogue_id for m in messages}) == 3 and len(messages) >= 12
    AdjudicationItem.objects.bulk_create(
        AdjudicationItem.for_message(m, risk=(3, 2, 2, 0)[i % 4], risk_weight=(i // 4) % 2)
        for i, m in enumerate(messages))
    return model_project


def _walk(project, per_page, **filters) -> list[int]:
    """Every row, page after page by the "Next" cursor."""
    seen, page = [], queue_page(project, per_page=per_page, **filters)
    while True:
        seen += [row.pk for row in page["rows"]]
        if not page["has_next"]:
            return seen
        page = queue_page(project, per_page=per_page, after=page["next_key"], **filters)


def test_the_cursor_pages_the_old_order_both_ways(mixed):
    items = AdjudicationItem.objects.filter(project=mixed, status="open")
    joined = list(items.order_by(*OLD_ORDER).values_list("pk", flat=True))
    assert joined != sorted(joined)  # the keys do not decide it
    risks = list(items.order_by(*OLD_ORDER).values_list("risk", "risk_weight", "dialogue_id"))
    assert any(a[:2] == b[:2] and a[2] != b[2] for a, b in zip(risks, risks[1:], strict=False))  # ties across dialogues
    for per_page in (1, 3, len(joined), len(joined) + 5):
        assert _walk(mixed, per_page) == joined
    with CaptureQueriesContext(connection) as queries:
        _walk(mixed, 3)
    sql = [q["sql"] for q in queries]  # the keys in order, from the items alone; then the rows by key
    assert any("ORDER BY" in s for s in sql)
    assert not any("OFFSET" in s or ("ORDER BY" in s and "JOIN" in s) for s in sql)

    last = queue_page(mixed, per_page=3)
    while last["has_next"]:
        last = queue_page(mixed, per_page=3, after=last["next_key"])
    back, page = [r.pk for r in last["rows"]], last
    assert page["has_prev"]
    while page["has_prev"]:
        page = queue_page(mixed, per_page=3, before=page["prev_key"])
        back = [r.pk for r in page["rows"]] + back
        assert page["has_next"]
    assert back == joined and len(page["rows"]) == 3 and page["rows"][0].pk == joined[0]

    assert next_open_item(mixed).pk == joined[0]
    assert next_open_item(mixed, exclude=joined[0]).pk == joined[1]


def test_a_cursor_past_either_end_is_an_empty_page(mixed):
    total = AdjudicationItem.objects.filter(project=mixed, status="open").count()
    first = queue_page(mixed, per_page=total)
    assert not first["has_next"] and not first["has_prev"] and first["total"] == total
    end = queue_page(mixed, after=first["next_key"])
    start = queue_page(mixed, before=first["prev_key"])
    for page in (end, start, queue_page(mixed, after="0-0-9223372036854775807-0-0")):
        assert page["rows"] == [] and not page["has_next"] and not page["has_prev"]


@pytest.mark.parametrize("cursor", ["x", "1-2-3-4", "1-2-3-4-5-6", "1-2-3-4-", "-1-2-3-4-5", "1-2-3-4-5 ",
                                    "1-2-3-4-٣", "+1-2-3-4-5", "1-2-3-4-9223372036854775808", "1" * 20 + "-1-1-1-1"])
def test_a_malformed_cursor_is_a_404(mixed, cursor):
    with pytest.raises(Http404):
        queue_page(mixed, after=cursor)
    with pytest.raises(Http404):
        queue_page(mixed, before=cursor)


def test_filters_keep_working_with_the_cursor(study):
    m = msg(study, "d1", 2)
    Assignment.objects.filter(message=m).update(uncertain=True)
    Assignment.objects.filter(message=msg(study, "d1", 3)).update(comment="Is Joe a name here?")
    gold_merge_ready(project=study)
    items = AdjudicationItem.objects.filter(project=study, status="open")
    assert items.count() >= 3
    d1 = list(items.filter(message__dialogue__external_id="d1").order_by(*OLD_ORDER).values_list("pk", flat=True))
    assert len(d1) >= 2
    assert _walk(study, 1, q="d1") == d1
    assert _walk(study, 1, flag="uncertain") == [AdjudicationItem.objects.get(message=m).pk]
    page = queue_page(study, per_page=1, q="d1")
    assert page["total"] is None  # more than a page matches: not counted (it would read the queue)
    page = queue_page(study, per_page=1, q="d1", after=page["next_key"])
    assert page["rows"][0].pk == d1[1] and page["has_prev"]
    assert queue_page(study, q="d1")["total"] == len(d1)  # they fit on one page: counted there
    assert [r.pk for r in queue_page(study, per_page=1, q="d1", before=page["prev_key"])["rows"]] == d1[:1]


def test_the_unfiltered_queue_is_counted_once_per_revision_not_per_page(study):
    """The pager's total of the open (or settled) queue is the cached queue count."""
    gold_merge_ready(project=study)
    n = AdjudicationItem.objects.filter(project=study, status="open").count()
    assert queue_page(study)["total"] == n  # counts, caches the figures
    with CaptureQueriesContext(connection) as queries:
        page = queue_page(study, per_page=1)
        assert page["total"] == n
        queue_page(study, per_page=1, after=page["next_key"])
    assert not any("COUNT(" in q["sql"] and "annotator_adjudicationitem" in q["sql"] for q in queries)


def test_merged_and_requeued_items_carry_their_message_s_place(study):
    Message.objects.filter(pk=msg(study, "d1", 3).pk).update(position=99)  # an order the keys do not give
    gold_merge_ready(project=study)
    items = AdjudicationItem.objects.filter(project=study).select_related("message")
    assert items.count() >= 3
    for item in items:
        assert (item.dialogue_id, item.position) == (item.message.dialogue_id, item.message.position)
    agreed = msg(study, "d1", 0)  # both annotators agreed: gold, no item, until one flags it uncertain
    assert not AdjudicationItem.objects.filter(message=agreed).exists()
    Assignment.objects.filter(message=agreed).update(uncertain=True)
    assert gold_remerge_message(message=agreed) == "requeued"
    item = AdjudicationItem.objects.get(message=agreed)
    assert (item.dialogue_id, item.position) == (agreed.dialogue_id, 0)


# ----------------------------------------------------------------------------------- the page


def _url(project, **params) -> str:
    from urllib.parse import urlencode

    base = reverse("adjudication-queue", kwargs={"slug": project.slug})
    return f"{base}?{urlencode(params)}" if params else base


def _key(item) -> str:
    return f"{item.risk}-{item.risk_weight}-{item.dialogue_id}-{item.position}-{item.pk}"


def test_the_pager_links_are_cursors_with_a_real_href(client, members, mixed, monkeypatch):
    from functools import partial

    from annotator.selectors import adjudication

    monkeypatch.setattr(adjudication, "queue_page", partial(adjudication.queue_page, per_page=2))
    client.force_login(members["adjudicator"])
    joined = list(AdjudicationItem.objects.filter(project=mixed, status="open").order_by(*OLD_ORDER))
    body = client.get(_url(mixed, status="open")).content.decode()
    link = f"?after={_key(joined[1])}&amp;status=open"
    assert f'href="{link}" hx-get="{link}" hx-target="#rows">Next →' in body
    assert "← Previous" not in body and "page=" not in body and f"{len(joined)} items" in body
    body = client.get(_url(mixed) + link.replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    link = f"?before={_key(joined[2])}&amp;status=open"
    assert f'href="{link}" hx-get="{link}" hx-target="#rows">← Previous' in body
    assert f"?after={_key(joined[3])}&amp;status=open" in body
    body = client.get(_url(mixed, status="open", q="d", after=_key(joined[1]))).content.decode()
    assert f'href="?after={_key(joined[3])}&amp;status=open&amp;q=d"' in body  # the search stays on
    assert f'href="?before={_key(joined[2])}&amp;status=open&amp;q=d"' in body


def test_malformed_and_old_page_links(client, members, mixed):
    client.force_login(members["adjudicator"])
    assert client.get(_url(mixed, after="1-2-x")).status_code == 404
    assert client.get(_url(mixed, before="1-2-3-4-5-6"), HTTP_HX_REQUEST="true").status_code == 404
    past = client.get(_url(mixed, after="0-0-9223372036854775807-0-0", status="open"))
    assert past.status_code == 200 and "Back to its first page" in past.content.decode()
    old = client.get(_url(mixed, status="open", q="d3", page="1"))  # a bookmark of the first numbered page
    assert old.status_code == 200 and "Message 0 of the third dialogue" in old.content.decode()
    assert client.get(_url(mixed, page="2")).status_code == 404  # no numbered page past it


# ----------------------------------------------------------------------------------- at scale

KEYS = 'SELECT "annotator_adjudicationitem"."risk" AS "risk", '  # the keys' queries (values_list)
DEEP = 6_000  # open items; the old OFFSET read every key before a deep page (more than scan_check's 5,000)


def _item_nodes(plan: dict):
    if plan.get("Relation Name") == "annotator_adjudicationitem":
        yield plan
    for child in plan.get("Plans", []):
        yield from _item_nodes(child)


@pytest.mark.postgres
@pytest.mark.slow
def test_a_deep_page_reads_its_own_rows_from_the_index(require_postgres, model_project, members, client):
    """At 6,000 open items (ties in risk and weight over 60 dialogues), the page after
    the 5,000th item reads about a page of items, through ``adjudication_queue_order``, where the
    ``OFFSET`` read the 5,000 before it (EXPLAIN ANALYZE of every query the request sends)."""
    import json

    project = model_project
    dialogues = Dialogue.objects.bulk_create(
        Dialogue(project=project, external_id=f"big{n:03}", message_count=100) for n in range(DEEP // 100))
    messages = Message.objects.bulk_create(
        Message(project=project, dialogue=d, position=p, speaker="s", text=f"{d.external_id} #{p}")
        for d in dialogues for p in range(100))
    AdjudicationItem.objects.bulk_create(
        AdjudicationItem.for_message(m, risk=i % 4, risk_weight=(i // 7) % 5) for i, m in enumerate(messages))
    with connection.cursor() as cur:
        cur.execute("ANALYZE annotator_adjudicationitem, annotator_message, annotator_dialogue")
    ordered = AdjudicationItem.objects.filter(project=project, status="open").order_by(*AdjudicationItem.QUEUE_ORDER)
    cursor = _key(ordered[4_999])
    client.force_login(members["adjudicator"])
    client.get(_url(project), HTTP_HX_REQUEST="true")  # the queue's counts, kept per revision (KNOWN_SCANS)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(_url(project, after=cursor), HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    assert f"?after={_key(ordered[5_049])}&amp;status=open" in page.content.decode()
    visited, indexes = 0, set()
    with connection.cursor() as cur:
        for q in queries.captured_queries:
            if "annotator_adjudicationitem" not in q["sql"] or not q["sql"].startswith("SELECT"):
                continue
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + q["sql"])
            (plan,) = cur.fetchone()
            plan = json.loads(plan) if isinstance(plan, str) else plan
            for node in _item_nodes(plan[0]["Plan"]):
                if q["sql"].startswith(KEYS):  # the keys past the cursor (then their rows by primary key)
                    indexes.add(node.get("Index Name"))
                visited += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get(
                    "Actual Loops", 1)
    assert indexes == {"adjudication_queue_order"}, indexes
    assert visited <= 2 * 51, visited  # a page's keys and one more, then the page's rows; the OFFSET read 5,000
