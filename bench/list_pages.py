"""List pages and admin statistics at scale, for ``annotate_bench.py --part pages``.

:func:`load_review_state` turns the bench's finished work into a reviewed project (gold for most
messages, the rest in the adjudication queue, exports, jobs, audit events), in SQL, because the
real merge would take as long as the bench; :func:`time_pages` then asks for every list page and
the Django admin's changelists as the role that uses them, ``n`` times each, and prints p50 / p95
against the 200 ms target. The first request of each page comes right after a
write to the project: it is timed apart as ``cold``, and its query count is printed (the N + 1
check).
"""

from __future__ import annotations

import time

TARGET_MS = 200


def load_review_state(project, run) -> None:
    """Gold for four messages in five, an adjudication item for the fifth (half open, half settled
    with a decision), five exports, sixty jobs and 50,000 audit events. Idempotent."""
    from django.db import connection

    from annotator.models import BackgroundJob, Export
    from annotator.selectors.exports import gold_state

    if Export.objects.filter(project=project).exists():
        _vacuum()
        return
    t0 = time.perf_counter()
    p = project.pk
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO annotator_adjudicationdecision (message_id, outcome, risk, model_favoured, notes, reply, "
            "details, decided_at) SELECT id, CASE WHEN mod(id, 10) = 5 THEN 'adjudicated' ELSE 'unanimous' END, 0, "
            "NULL, '', '', '{}', now() FROM annotator_message WHERE project_id = %s AND mod(id, 10) <> 0 ON CONFLICT DO NOTHING", [p])
        cur.execute(
            "INSERT INTO annotator_goldspan (message_id, start, \"end\", label, provenance, annotators, model_matched, "
            "decision_id, created_at) SELECT d.message_id, pr.start, pr.\"end\", pr.label, d.outcome, '[]', true, "
            "d.id, now() FROM annotator_adjudicationdecision d JOIN annotator_prediction pr "
            "ON pr.message_id = d.message_id AND pr.run_id = %s ON CONFLICT DO NOTHING", [run.pk])
        cur.execute(
            "INSERT INTO annotator_adjudicationitem (project_id, message_id, dialogue_id, position, status, risk, "
            "risk_weight, risk_details, version, decision_id, created_at, settled_at) "
            "SELECT m.project_id, m.id, m.dialogue_id, m.position, CASE WHEN mod(m.id, 10) = 0 THEN 'open' ELSE 'settled' END, mod(m.id, 4), "
            "mod(m.id, 97), '{}', 0, d.id, now(), CASE WHEN mod(m.id, 10) = 0 THEN NULL ELSE now() END "
            "FROM annotator_message m LEFT JOIN annotator_adjudicationdecision d ON d.message_id = m.id "
            "WHERE m.project_id = %s AND mod(m.id, 5) = 0 ON CONFLICT DO NOTHING", [p])
        cur.execute(
            "INSERT INTO annotator_auditevent (created_at, project_id, action, object_type, object_id, details) "
            "SELECT now() - make_interval(secs => g), %s, 'assignment.submit', 'Assignment', g::text, '{}' "
            "FROM generate_series(1, 50000) g", [p])
        cur.execute("ANALYZE")
    state = gold_state(project)
    for kind, version in [("gold", 1), ("gold", 2), ("gold", 3), ("release", 1), ("release", 2)]:
        Export.objects.create(project=project, kind=kind, version=version, status="succeeded",
                              params={"source": "gold"}, gold_state=state)
    BackgroundJob.objects.bulk_create(
        BackgroundJob(project=project, kind=kind, status="succeeded", params={"bench": True})
        for kind in ("import", "plan", "agreement", "circularity", "train", "other") for _ in range(10))
    print(f"review state        gold, adjudication items, exports, jobs, audit events ({time.perf_counter() - t0:.1f} s)")
    _vacuum()


def _vacuum() -> None:
    """VACUUM ANALYZE the bulk-loaded tables, as autovacuum does on a live database (it may be off
    on a test server): without it the visibility map is empty and no index-only scan is possible."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    t0 = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute("VACUUM (ANALYZE)")
    print(f"vacuum analyze      {time.perf_counter() - t0:.1f} s")


def _pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def pages(project, plan_id: int, run_id: int) -> list[tuple[str, str, str, dict]]:
    """(name, who, url, headers): every list page, the statistics and the admin's changelists;
    long lists also at a page in their middle."""
    from django.contrib import admin
    from django.urls import reverse

    from annotator import models as m

    def middle(qs, per_page):
        return max(1, qs.count() // per_page // 2)

    dialogues = middle(m.Dialogue.objects.filter(project=project), 50)
    open_items = m.AdjudicationItem.objects.filter(project=project, status="open")
    adjudication = middle(open_items, 50)
    # the adjudication queue pages by cursor too (annotator.selectors.ordered_keyset_page)
    order = [f.lstrip("-") for f in m.AdjudicationItem.QUEUE_ORDER]
    judged = "-".join(map(str, open_items.order_by(*m.AdjudicationItem.QUEUE_ORDER).values_list(*order)[
        (adjudication - 1) * 50 - 1])) if adjudication > 1 else ""
    mine = m.Assignment.objects.filter(project=project, annotator__username="ann1")
    queue = middle(mine, 50)
    # the queue pages by cursor (annotator.selectors.keyset_page): the row before its middle page
    cursor = "-".join(map(str, mine.order_by("order", "pk").values_list("order", "pk")[(queue - 1) * 50 - 1])) \
        if queue > 1 else ""
    per_page = admin.site._registry[m.Assignment].list_per_page
    changelist = middle(m.Assignment.objects.all(), per_page)
    # past its first pages the admin's list pages by cursor (annotator.admin.KeysetChangeList)
    older_than = m.Assignment.objects.order_by("-pk").values_list("pk", flat=True)[(changelist - 1) * per_page - 1]
    s = {"slug": project.slug}
    hx = {"HTTP_HX_REQUEST": "true"}
    u = lambda name, **kw: reverse(name, kwargs={**s, **kw})  # noqa: E731
    rows = [
        ("project list", "boss", reverse("project-list"), {}),
        ("dashboard (admin)", "boss", u("project-dashboard"), {}),
        ("dashboard counts (htmx)", "boss", u("project-dashboard"), hx),
        ("dashboard (annotator)", "ann1", u("project-dashboard"), {}),
        ("members", "boss", u("project-members"), {}),
        ("dialogues p1", "boss", u("dialogue-list"), {}),
        (f"dialogues p{dialogues}", "boss", u("dialogue-list") + f"?page={dialogues}", {}),
        ("runs", "boss", u("run-list"), {}),
        ("run detail", "boss", u("run-detail", run_id=run_id), {}),
        ("tagger versions", "boss", u("tagger"), {}),
        ("assignments & statistics", "boss", u("workspace-admin"), {}),
        ("statistics (htmx)", "boss", u("workspace-admin"), hx),
        ("plan detail", "boss", u("workspace-plan", plan_id=plan_id), {}),
        ("exports / releases", "boss", u("export-list"), {}),
        ("adjudication queue", "judge", u("adjudication-queue"), {}),
        (f"adjudication rows p{adjudication}", "judge", u("adjudication-queue") + f"?after={judged}", hx),
        ("agreement report", "judge", u("reports-agreement"), {}),
        ("detector report", "judge", u("reports-detectors"), {}),
        ("circularity report", "judge", u("reports-circularity"), {}),
        ("annotator queue list", "ann1", u("workspace-list"), {}),
        (f"annotator queue p{queue}", "ann1", u("workspace-list") + f"?after={cursor}", hx),
        ("admin index", "boss", reverse("admin:index"), {}),
    ]
    for model in (m.Project, m.Membership, m.Dialogue, m.Message, m.DetectorRun, m.Prediction, m.RunChunk,
                  m.MessageSegment, m.Assignment, m.Annotation, m.GoldSpan, m.AdjudicationDecision,
                  m.AdjudicationItem, m.AuditEvent, m.Export, m.BackgroundJob, m.AssignmentPlan):
        url = reverse(f"admin:annotator_{model._meta.model_name}_changelist")
        rows.append((f"admin {model._meta.model_name}", "boss", url, {}))
    url = reverse("admin:annotator_assignment_changelist")
    rows.append(("admin assignment filtered", "boss", f"{url}?project__id__exact={project.pk}&status__exact=done", {}))
    rows.append((f"admin assignment p{changelist}", "boss", f"{url}?after={older_than}", {}))
    rows.append(("admin message search", "boss",
                 reverse("admin:annotator_message_changelist") + "?q=zzzz-not-there", {}))
    return rows


def _touch(project) -> None:
    """What any write does to the project's figures: an audit event moves its revision
    (:mod:`annotator.selectors.figures`), as an annotator's submit does every few seconds."""
    from annotator.services.audit import audit_record

    audit_record(user=None, action="bench.touch", obj=project, project=project)


def time_pages(project, users: dict, n: int) -> list[tuple[str, float]]:
    """Ask for each page ``n`` times after a first request made right after a write to the project
    (``cold``: the figures cached per revision are computed again, as they are on a project where
    annotators are submitting); print and return p95 per page (of the warm requests)."""
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotator.dispatch import wait_idle
    from annotator.models import AssignmentPlan, DetectorRun

    plan = AssignmentPlan.objects.filter(project=project).order_by("pk").first()
    run = DetectorRun.objects.filter(project=project).order_by("pk").first()
    clients = {}
    for who in ("boss", "judge", "ann1"):
        clients[who] = Client()
        clients[who].force_login(users[who])
    print(f"\n{'page':<28} {'who':<6} {'queries':>7} {'cold ms':>8} {'p50 ms':>8} {'p95 ms':>8}  target {TARGET_MS} ms")
    out = []
    for name, who, url, headers in pages(project, plan.pk, run.pk):
        client = clients[who]
        reset_queries()  # the bench runs with DEBUG on: the log holds earlier queries
        _touch(project)
        t0 = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            r = client.get(url, **headers)
        cold = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        wait_idle()  # work the page queued (scoring a run) runs on, not during the next timings
        if (waited := time.perf_counter() - t0) > 0.5:
            print(f"{'':<28} {who:<6} (the first request queued background work: done {waited:.1f} s later)")
        if r.status_code not in (200, 204):
            print(f"{name:<28} {who:<6} HTTP {r.status_code} at {url}")
            continue
        ms = []
        for _ in range(n):
            t0 = time.perf_counter()
            client.get(url, **headers)
            ms.append((time.perf_counter() - t0) * 1000)
        p95 = _pct(ms, 95)
        print(f"{name:<28} {who:<6} {len(queries):>7} {cold:8.1f} {_pct(ms, 50):8.1f} {p95:8.1f}  "
              f"{'PASS' if p95 <= TARGET_MS else 'MISS'}", flush=True)
        out.append((name, p95))
    missed = [name for name, p95 in out if p95 > TARGET_MS]
    print(f"target p95 <= {TARGET_MS} ms on every list page: {'MET' if not missed else 'MISSED'}"
          + (f" ({len(missed)} missed: {', '.join(missed)})" if missed else ""))
    return out
