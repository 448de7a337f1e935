"""Which requests scan the corpus: every query a request sends, explained by PostgreSQL.

A page that must stay fast at a million messages may not read a whole corpus table. Each SELECT is
run again under ``EXPLAIN (ANALYZE, FORMAT JSON)``; a node over one of :data:`CORPUS_TABLES`
(messages and what grows with them) that *visited* more than :data:`MAX_ROWS` rows (the rows it
returned plus those its filter removed, over all its loops) is a scan, whether a ``Seq Scan`` or an
index-only count over every message of a project, which reads the corpus as surely. An index scan
under ``LIMIT 50`` visits 50 rows, whatever the planner first estimated; a deep ``OFFSET`` does not.
``scale_bench.py`` prints the scans of every page; tests/annotator/test_scale.py fails on them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

CORPUS_TABLES = frozenset({
    "annotator_message", "annotator_prediction", "annotator_assignment", "annotator_annotation",
    "annotator_goldspan", "annotator_messagesegment", "annotator_messageuncertainty",
    "annotator_adjudicationdecision", "annotator_adjudicationitem",
})
MAX_ROWS = 5000  # a page shows at most a few hundred rows; ten times that is already a scan
# a query read through a server-side cursor (``.iterator()``, a form's choices on PostgreSQL) is
# captured as the cursor's declaration: the SELECT after it is what runs
DECLARE = re.compile(r'^\s*DECLARE\s+"[^"]*"\s+NO SCROLL CURSOR\s+(?:WITH(?:OUT)? HOLD\s+)?FOR\s+', re.IGNORECASE)


def _nodes(plan: dict) -> Iterator[dict]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def plan_scans(plan: dict) -> list[str]:
    """The corpus scans in one EXPLAIN (ANALYZE, FORMAT JSON) plan, as "Seq Scan on t (n rows)"."""
    found = []
    for node in _nodes(plan):
        table = node.get("Relation Name")
        if table not in CORPUS_TABLES:
            continue
        visited = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
                   + node.get("Rows Removed by Index Recheck", 0)) * node.get("Actual Loops", 1)
        if visited > MAX_ROWS:
            found.append(f"{node['Node Type']} on {table} ({visited:,.0f} rows)")
    return found


def query_scans(captured: list[dict]) -> list[tuple[str, str]]:
    """(scan, sql) for every corpus scan among ``captured`` (``CaptureQueriesContext``'s queries)."""
    from django.db import connection

    out = []
    with connection.cursor() as cur:
        for q in captured:
            sql = DECLARE.sub("", q["sql"])
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
            (plan,) = cur.fetchone()
            plan = json.loads(plan) if isinstance(plan, str) else plan
            out.extend((scan, sql[:300]) for scan in plan_scans(plan[0]["Plan"]))
    return out


def request_scans(client, url: str, headers: dict | None = None) -> tuple[int, list[tuple[str, str]]]:
    """Ask for ``url``; its status and (scan, sql) for every corpus scan among its queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **(headers or {}))
    return response.status_code, query_scans(queries.captured_queries)
