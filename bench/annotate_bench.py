"""Time the annotation workspace on a MathEd-PII-sized project in PostgreSQL.

1. Loads 115,620 generated messages (the import service; the corpus's spans become a detector
   run, whose predictions aware annotators see as suggestions) and three annotators' finished
   work: a plan giving every message to two of them (k = 2, randomized blind/aware), all
   submitted, suggestions accepted in the aware condition.
2. Server time over >= 1,000 requests each (Django test client, in-process, so the figure is
   the time Django spends on the request): "open next item" (the queue redirect plus the item
   page), "add / accept span" and "submit". Target: p95 <= 50 ms for the first two.
3. Twenty annotators at once: threads with their own sessions against gunicorn on 127.0.0.1
   for about a minute, each adding spans, accepting suggestions, submitting, and on purpose
   repeating some requests with a stale version (a double click, a second tab). Target: zero
   errors, zero lost and zero duplicated spans.
4. Every list page, the admin's statistics and the Django admin's changelists, with the project
   reviewed (gold for most messages, the rest in the adjudication queue; bench/list_pages.py),
   each asked for as the role that uses it. Target: p95 <= 200 ms each.

    .venv/bin/python bench/annotate_bench.py [--messages 115620] [--requests 1000] [--seconds 60]
        [--part all|workspace|pages] [--page-requests 20] [--reuse]

Uses BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/blindspot_bench), which it
drops and recreates.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from common import ROOT, setup_django

PASSWORD = "bench-password-1"
N_CONCURRENT = 20


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def line(name, ms):
    return (f"{name:<26} n={len(ms):>5}  median {statistics.median(ms):6.1f} ms  p95 {pct(ms, 95):6.1f} ms  "
            f"p99 {pct(ms, 99):6.1f} ms  max {max(ms):6.1f} ms")


def first_word(text: str) -> tuple[int, int] | None:
    from pipeline.text import tokenize

    for tok in tokenize(text):
        if tok.text[0].isalnum():
            return tok.start, tok.end
    return None


# ----------------------------------------------------------------------------------- loading

def load(n_messages: int):
    """The corpus, three annotators and their finished work (k = 2 over every message)."""
    project, result, _ = load_corpus(n_messages)
    users = add_annotators(project)
    load_work(project, users, result.dialogues)
    return project, users


def load_corpus(n_messages: int, slug: str = "annotate-bench"):
    """``n_messages`` generated messages imported by the import service, their spans as a run that
    annotators see as suggestions; the project, the import's result and its seconds."""
    from annotator.models import DetectorRun, Prediction
    from annotator.services.imports import corpus_import
    from annotator.services.projects import project_create
    from pipeline.synthetic import generate_messages
    from pipeline.types import Dialogue

    t0 = time.perf_counter()
    dialogues = generate_messages(n_messages, seed=42)
    extra = sum(len(d.messages) for d in dialogues) - n_messages
    if extra > 0:  # trim the last dialogue so the corpus has exactly n_messages
        last = dialogues[-1]
        dialogues[-1] = Dialogue(last.id, last.messages[: len(last.messages) - extra], anchor=last.anchor, meta=last.meta)
    project = project_create(name="Annotate bench", slug=slug, visibility_mode="randomized", overlap_k=2)
    t1 = time.perf_counter()
    result = corpus_import(project=project, dialogues=dialogues, source="bench.jsonl", spans_as="run")
    import_s = time.perf_counter() - t1
    del dialogues
    run = DetectorRun.objects.get(project=project)
    project.suggestion_runs.add(run)
    print(f"corpus              {result.dialogues:,} dialogues, {n_messages:,} messages, "
          f"{Prediction.objects.filter(run=run).count():,} predictions ({time.perf_counter() - t0:.1f} s, "
          f"import {import_s:.1f} s)")
    return project, result, import_s


def add_annotators(project) -> dict:
    from django.contrib.auth import get_user_model

    from annotator.models import Role
    from annotator.services.projects import membership_set

    User = get_user_model()
    users = {}
    for name in ["ann1", "ann2", "ann3", "timer", *[f"conc{i:02d}" for i in range(N_CONCURRENT)]]:
        users[name] = User.objects.create_user(name, password=PASSWORD)
        membership_set(project=project, user=users[name], role=Role.ANNOTATOR)
    return users


def load_work(project, users, n_dialogues: int) -> None:
    """ann1-3's finished work: a plan giving every message to two of them, all submitted,
    suggestions accepted in the aware condition."""
    from django.db import connection

    from annotator.models import DetectorRun

    run = DetectorRun.objects.filter(project=project).order_by("pk").first()
    # The plan is computed by the same pure algorithm plan_create uses; 231,240 rows go in with
    # COPY (bulk_create would spend minutes here on a loaded machine).
    t0 = time.perf_counter()
    from annotator.models import AssignmentPlan, Message, QueueCount
    from pipeline import assignment as algo

    three = [users[n].pk for n in ("ann1", "ann2", "ann3")]
    items = [algo.Item(dialogue_id=d, position=p, message_id=m)
             for m, d, p in Message.objects.filter(project=project).values_list("pk", "dialogue_id", "position")]
    made = algo.make_plan(items, three, strategy="dialogues", n_dialogues=n_dialogues, k=2, seed=1,
                          mode="randomized")
    plan = AssignmentPlan.objects.create(project=project, seed=1, summary={"assignments": len(made.pairs)},
                                         params={"strategy": "dialogues", "k": 2, "bench": True})
    plan_s = time.perf_counter() - t0
    order = Counter()
    with connection.cursor() as cur:
        columns = ("public_id, project_id, plan_id, annotator_id, message_id, condition, status, \"order\", "
                   "version, no_pii, uncertain, comment, active_seconds, undo_log, created_at, started_at, submitted_at, "
                   "inclusion_probability")
        with cur.copy(f"COPY annotator_assignment ({columns}) FROM STDIN") as copy:
            for pair in made.pairs:
                n = order[pair.annotator]
                order[pair.annotator] += 1
                copy.write_row((uuid.uuid4(), project.pk, plan.pk, pair.annotator, pair.item.message_id,
                                pair.condition, "done", n, 3, False, False, "", 4 + n % 40, "[]",
                                "now", "now", "now", 1.0))
        cur.execute("ANALYZE annotator_assignment")
        cur.execute(
            "INSERT INTO annotator_annotation (assignment_id, start, \"end\", label, condition, origin, "
            "prediction_id, comment, created_at, updated_at) "
            "SELECT a.id, p.start, p.\"end\", p.label, a.condition, "
            "CASE WHEN a.condition = 'aware' THEN 'accepted_model' ELSE 'added' END, "
            "CASE WHEN a.condition = 'aware' THEN p.id END, '', now(), now() "
            "FROM annotator_assignment a JOIN annotator_prediction p ON p.message_id = a.message_id "
            "WHERE a.plan_id = %s AND p.run_id = %s", [plan.pk, run.pk])
        n_annotations = cur.rowcount
        cur.execute("UPDATE annotator_assignment SET no_pii = true WHERE plan_id = %s AND NOT EXISTS "
                    "(SELECT 1 FROM annotator_annotation n WHERE n.assignment_id = annotator_assignment.id)",
                    [plan.pk])
        cur.execute("ANALYZE")
    QueueCount.recount(project.pk)  # COPY went around the counters' writers
    print(f"finished work       {len(made.pairs):,} assignments for 3 annotators (plan computed in {plan_s:.1f} s), "
          f"{n_annotations:,} annotations ({time.perf_counter() - t0:.1f} s)")


def give(project, users, names, n_items, *, seed):
    """``n_items`` messages to each of ``names``, randomized blind/aware (k = 3: a third annotator)."""
    from annotator.models import Assignment, Message
    from annotator.services.assignments import plan_create

    ids = list(Message.objects.filter(project=project).order_by("pk").values_list("dialogue_id", flat=True).distinct())
    rng = random.Random(seed)
    rng.shuffle(ids)
    # pick enough whole dialogues for everybody
    per_dialogue = Message.objects.filter(project=project, dialogue_id=ids[0]).count() or 30
    n_dialogues = max(1, (n_items * len(names)) // per_dialogue + len(names))
    plan_create(project=project, strategy="dialogues", n_dialogues=n_dialogues, k=3, seed=seed,
                annotators=[users[n] for n in names])
    # trim each queue to n_items
    for n in names:
        keep = list(Assignment.objects.filter(annotator=users[n]).order_by("order").values_list("pk", flat=True)[:n_items])
        Assignment.objects.filter(annotator=users[n]).exclude(pk__in=keep).delete()


# ----------------------------------------------------------------------------------- latency

def latency(project, user, n_requests: int):
    from django.test import Client
    from django.urls import reverse

    from annotator.models import Assignment

    client = Client()
    client.force_login(user)
    hx = {"HTTP_HX_REQUEST": "true"}
    queue_url = reverse("workspace-queue", kwargs={"slug": project.slug})
    times = defaultdict(list)
    failures = Counter()
    texts = {str(pid): t for pid, t in Assignment.objects.filter(annotator=user).values_list("public_id", "message__text")}
    pending_re = re.compile(r'data-cmd="accept" data-for="s(\d+)"')
    version_re = re.compile(r'id="item"[^>]*data-version="(\d+)"')
    while min(len(times["open next item"]), len(times["add / accept span"])) < n_requests:
        t0 = time.perf_counter()
        r = client.get(queue_url)
        t1 = time.perf_counter()
        if r.status_code != 302 or "/item/" not in r["Location"]:
            failures["queue empty"] += 1
            break
        item_url = r["Location"]
        page = client.get(item_url)
        t2 = time.perf_counter()
        times["queue redirect"].append((t1 - t0) * 1000)
        times["item page"].append((t2 - t1) * 1000)
        times["open next item"].append((t2 - t0) * 1000)
        body = page.content.decode()
        version = int(version_re.search(body).group(1))
        public_id = item_url.rstrip("/").rsplit("/", 1)[-1]
        for pid in pending_re.findall(body):
            t0 = time.perf_counter()
            r = client.post(item_url + "suggestions/accept/", {"version": version, "prediction": pid}, **hx)
            times["add / accept span"].append((time.perf_counter() - t0) * 1000)
            times["accept"].append(times["add / accept span"][-1])
            if r.status_code == 200:
                version += 1
            else:
                failures[f"accept {r.status_code}"] += 1
        spans = first_word(texts[public_id])
        if spans and "data-focus=\"a" not in body and not pending_re.search(body):
            t0 = time.perf_counter()
            r = client.post(item_url + "spans/add/", {"version": version, "start": spans[0], "end": spans[1],
                                                      "label": "NAME"}, **hx)
            times["add / accept span"].append((time.perf_counter() - t0) * 1000)
            times["add"].append(times["add / accept span"][-1])
            if r.status_code == 200:
                version += 1
            elif r.status_code == 422:  # overlaps an accepted suggestion: fine
                pass
            else:
                failures[f"add {r.status_code}"] += 1
        t0 = time.perf_counter()
        r = client.post(item_url + "submit/", {"version": version}, **hx)
        times["submit"].append((time.perf_counter() - t0) * 1000)
        if r.status_code != 200:
            if "undecided" not in r.content.decode() and "no PII" not in r.content.decode():
                failures[f"submit {r.status_code}"] += 1
            client.post(item_url + "no-pii/", {"version": version, "value": "on"}, **hx)
            client.post(item_url + "submit/", {"version": version + 1}, **hx)
    return times, failures


# ----------------------------------------------------------------------------------- concurrency

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db_url: str):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": db_url, "DEBUG": "1"}  # pooled connections (DB_POOL_*)
    env.pop("REDIS_URL", None)
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "annotator.wsgi", "-b", f"127.0.0.1:{port}",
         "-w", "3", "-k", "gthread", "--threads", "8", "--log-level", "warning", "--timeout", "60"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("gunicorn did not start")


class Annotator(threading.Thread):
    """One annotator in a browser: their own session, one request at a time, like the page's JS."""

    def __init__(self, base, slug, username, texts, deadline, seed):
        super().__init__(daemon=True)
        self.base, self.slug, self.username, self.texts, self.deadline = base, slug, username, texts, deadline
        self.rng = random.Random(seed)
        self.expected = Counter()  # assignment public id -> spans the server said it saved
        self.errors: list[str] = []
        self.requests = 0
        self.conflicts = 0
        self.items = 0
        self.times: list[float] = []

    def req(self, method, url, **kw):
        import requests

        t0 = time.perf_counter()
        try:
            r = self.session.request(method, url, timeout=30, **kw)
        except requests.RequestException as exc:
            self.errors.append(f"{method} {url}: {exc}")
            return None
        finally:
            self.requests += 1
            self.times.append((time.perf_counter() - t0) * 1000)
        if r.status_code >= 500:
            self.errors.append(f"{method} {url}: HTTP {r.status_code}")
        return r

    def post(self, url, data):
        headers = {"X-CSRFToken": self.session.cookies.get("csrftoken", ""), "HX-Request": "true",
                   "Referer": self.base + "/"}
        return self.req("POST", url, data=data, headers=headers, allow_redirects=False)

    def run(self):
        import requests

        self.session = requests.Session()
        login = self.base + "/accounts/login/"
        self.req("GET", login)
        self.post(login, {"username": self.username, "password": PASSWORD, "next": "/"})
        queue = f"{self.base}/p/{self.slug}/queue/"
        version_re = re.compile(r'id="item"[^>]*data-version="(\d+)"')
        pending_re = re.compile(r'data-cmd="accept" data-for="s(\d+)"')
        while time.time() < self.deadline:
            r = self.req("GET", queue, allow_redirects=True)
            if r is None or "/item/" not in r.url:
                break
            item = r.url
            public_id = item.rstrip("/").rsplit("/", 1)[-1]
            m = version_re.search(r.text)
            if not m:
                self.errors.append(f"no item fragment at {item}")
                break
            version = int(m.group(1))
            for pid in pending_re.findall(r.text):
                resp = self.post(item + "suggestions/accept/", {"version": version, "prediction": pid})
                if resp is not None and resp.status_code == 200:
                    version += 1
                    self.expected[public_id] += 1
                elif resp is not None and resp.status_code == 422:
                    # overlaps one of this annotator's spans: reject it instead
                    resp = self.post(item + "suggestions/reject/", {"version": version, "prediction": pid})
                    if resp is not None and resp.status_code == 200:
                        version += 1
                elif resp is not None:
                    self.errors.append(f"accept: HTTP {resp.status_code} {resp.text[:80]}")
            word = first_word(self.texts[public_id])
            if word and self.expected[public_id] == 0:
                data = {"version": version, "start": word[0], "end": word[1], "label": "NAME"}
                resp = self.post(item + "spans/add/", data)
                if resp is not None and resp.status_code == 200:
                    version += 1
                    self.expected[public_id] += 1
                elif resp is not None and resp.status_code != 422:
                    self.errors.append(f"add: HTTP {resp.status_code} {resp.text[:80]}")
                if self.rng.random() < 0.3:  # the same request again from a stale tab: must be a 409
                    again = self.post(item + "spans/add/", data)
                    if again is not None and again.status_code == 409:
                        self.conflicts += 1
                    elif again is not None:
                        self.errors.append(f"stale add: HTTP {again.status_code}, expected 409")
            if self.expected[public_id] == 0:
                resp = self.post(item + "no-pii/", {"version": version, "value": "on"})
                if resp is not None and resp.status_code == 200:
                    version += 1
            resp = self.post(item + "submit/", {"version": version})
            if resp is None or resp.status_code != 200:
                self.errors.append(f"submit: HTTP {getattr(resp, 'status_code', None)} {getattr(resp, 'text', '')[:80]}")
                break
            if self.rng.random() < 0.3:  # a double submit: harmless
                twice = self.post(item + "submit/", {"version": version})
                if twice is None or twice.status_code != 200:
                    self.errors.append(f"double submit: HTTP {getattr(twice, 'status_code', None)}")
            self.items += 1


def concurrency(project, users, db_url, seconds):
    from annotator.models import Annotation, Assignment

    names = [f"conc{i:02d}" for i in range(N_CONCURRENT)]
    texts = {str(pid): text for pid, text in Assignment.objects.filter(annotator__username__in=names)
             .values_list("public_id", "message__text")}
    proc, base = start_server(db_url)
    try:
        deadline = time.time() + seconds
        threads = [Annotator(base, project.slug, n, texts, deadline, seed=i) for i, n in enumerate(names)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 120)
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    expected = Counter()
    for t in threads:
        expected.update(t.expected)
    stored = Counter(str(pid) for pid in Annotation.objects.filter(assignment__annotator__username__in=names)
                     .exclude(origin="rejected_model").values_list("assignment__public_id", flat=True))
    keys = Counter(Annotation.objects.filter(assignment__annotator__username__in=names)
                   .values_list("assignment_id", "start", "end", "label", "origin"))
    lost = sum(max(0, expected[k] - stored[k]) for k in expected)
    extra = sum(max(0, stored[k] - expected[k]) for k in stored)
    duplicated = sum(n - 1 for n in keys.values() if n > 1)
    errors = [e for t in threads for e in t.errors]
    return {
        "wall": wall, "requests": sum(t.requests for t in threads), "items": sum(t.items for t in threads),
        "spans": sum(expected.values()), "conflicts": sum(t.conflicts for t in threads), "errors": errors,
        "lost": lost, "extra": extra, "duplicated": duplicated,
        "times": [x for t in threads for x in t.times],
        "done": Assignment.objects.filter(annotator__username__in=names, status="done").count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=115_620)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--reuse", action="store_true",
                        help="Keep the loaded corpus and finished work of an earlier run; measure again.")
    parser.add_argument("--part", choices=["all", "workspace", "pages"], default="all",
                        help="workspace: steps 2-3 only; pages: step 4 only (the list pages).")
    parser.add_argument("--page-requests", type=int, default=20, help="Timed requests per list page.")
    args = parser.parse_args()
    t_all = time.perf_counter()
    db_url = setup_django(fresh=not args.reuse)
    print(f"database            {db_url}")
    print(f"load average        {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")

    from django.contrib.auth import get_user_model

    from annotator.models import Assignment, Project

    project = Project.objects.filter(slug="annotate-bench").first() if args.reuse else None
    if project is None:
        project, users = load(args.messages)
    else:
        users = {u.username: u for u in get_user_model().objects.all()}
        Assignment.objects.filter(project=project, plan__params__bench__isnull=True).delete()
        print(f"reusing             {project.messages.count():,} messages, "
              f"{Assignment.objects.filter(project=project).count():,} finished assignments")
    if args.part != "workspace":  # first: the workspace step's submits merge items into gold
        list_pages(project, users, args.page_requests)
    if args.part != "pages":
        workspace(project, users, db_url, args)
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")


def add_reviewers(project, users) -> None:
    """An admin (``boss``, also the Django admin's superuser) and an adjudicator (``judge``)."""
    from django.contrib.auth import get_user_model

    from annotator.models import Role
    from annotator.services.projects import membership_set

    User = get_user_model()
    for name, role in (("boss", Role.ADMIN), ("judge", Role.ADJUDICATOR)):
        if name not in users:
            users[name] = User.objects.create_user(name, password=PASSWORD, is_staff=name == "boss",
                                                   is_superuser=name == "boss")
            membership_set(project=project, user=users[name], role=role)


def list_pages(project, users, n_requests: int) -> None:
    from list_pages import load_review_state, time_pages

    from annotator.models import DetectorRun

    add_reviewers(project, users)
    load_review_state(project, DetectorRun.objects.filter(project=project).order_by("pk").first())
    print(f"load average        {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    time_pages(project, users, n_requests)


def workspace(project, users, db_url, args) -> None:
    give(project, users, ["timer"], args.requests + 200, seed=11)
    give(project, users, [f"conc{i:02d}" for i in range(N_CONCURRENT)], 400, seed=12)

    times, failures = latency(project, users["timer"], args.requests)
    print()
    for name in ("open next item", "queue redirect", "item page", "add / accept span", "accept", "add", "submit"):
        if times[name]:
            print(line(name, times[name]))
    p95_open, p95_edit = pct(times["open next item"], 95), pct(times["add / accept span"], 95)
    print(f"target p95 <= 50 ms  open next item {'MET' if p95_open <= 50 else 'MISSED'} ({p95_open:.1f} ms), "
          f"add / accept span {'MET' if p95_edit <= 50 else 'MISSED'} ({p95_edit:.1f} ms)")
    if failures:
        print(f"latency-run failures {dict(failures)}")

    print()
    c = concurrency(project, users, db_url, args.seconds)
    print(f"concurrent          {N_CONCURRENT} annotators, {c['wall']:.0f} s, {c['requests']:,} requests "
          f"({c['requests'] / c['wall']:.0f}/s), {c['items']:,} items submitted ({c['done']:,} done in the database)")
    print(f"                    client-side latency median {statistics.median(c['times']):.0f} ms, "
          f"p95 {pct(c['times'], 95):.0f} ms")
    print(f"                    {c['spans']:,} spans saved, {c['conflicts']} stale-tab repeats answered 409")
    print(f"                    errors {len(c['errors'])}, lost spans {c['lost']}, unexpected spans {c['extra']}, "
          f"duplicated spans {c['duplicated']}")
    for e in c["errors"][:10]:
        print(f"                    ! {e}")
    ok = not c["errors"] and not c["lost"] and not c["extra"] and not c["duplicated"]
    print(f"target zero errors / lost / duplicated  {'MET' if ok else 'MISSED'}")
    print(f"load average        {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
