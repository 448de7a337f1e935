"""A national corpus on one machine: every stage of a project at ``--messages``, on
PostgreSQL, with real Celery workers; prints each figure against its target.

1. import: generated messages (``pipeline.synthetic``) through the import service (their spans
   become an import run, the annotators' suggestions);
2. pre-label: a run of ``--detector`` (the tagger, with ``--tagger name/version`` under
   ``BLINDSPOT_MODELS_DIR``; without one the rules detector, and said so) on ``--workers``
   workers of one process each: messages/s, and each worker's peak RSS (recorded per chunk);
3. a sampling plan as a job: flagged by the run + an audit sample, k = 2, three annotators;
4. gold for 10 % of the dialogues: simulated annotators through the workspace services
   (``annotator.services.demo``), merged and adjudicated;
5. the agreement and circularity reports as jobs;
6. a release from gold and one from the run, as jobs;
7. every page (``annotate_bench.py --part pages``) once the project has finished work for every
   message (k = 2: two assignments a message), with the corpus scans any of them does
   (bench/scan_check.py); the database's size.

    nice -n 10 .venv/bin/python bench/scale_bench.py --messages 1000000 [--workers 2]
        [--detector tagger --tagger NAME/VERSION] [--page-requests 10] [--skip-gold] [--skip-pages]
        [--skip-releases] [--gold-dialogues N] [--keep]
        [--reuse [--pages-only | --reports-only | --releases-only [--release-sources gold,run]]]
        [--prelabel-only [--against-presidio [--presidio-config JSON]]] [--corpus FILE]

Uses BENCH_DATABASE_URL (dropped and recreated; dropped again at the end unless --keep) and
BENCH_REDIS_URL (default redis://127.0.0.1:6379/15) for the workers.

At a million messages on a small machine, measure in parts on one kept database: a first command
with ``--keep`` (e.g. ``--prelabel-only --keep``: the import and the run, about 8 min on two cores),
then later ones with ``--reuse`` (implies ``--keep``): the database is not recreated, and a stage
whose result is already there is not done again (the import and the run when the project holds
messages and a finished run; the plan when the run's sampling plan exists; the gold when any item
is finished; the pages' finished work when its plan exists), so a crash in a later stage does not
cost the build again; ``--pages-only`` then times the pages alone (no job, no worker), and
``--reports-only`` the two report jobs alone on the gold there is (after the pages' finished work,
gold on nine messages in ten: the reports' cost grows with the gold), and
``--releases-only`` the releases alone (``--release-sources gold`` or ``run`` for one of them).
``--skip-releases`` leaves out both releases (at 1M messages each is 45-55 min of Presidio CPU
on two cores). ``--gold-dialogues N`` simulates gold for N dialogues instead
of 10 % of them, and prints the seconds per submitted item (to compare the per-item cost at two
corpus sizes). Pass the same ``--messages`` with ``--reuse`` (the gold's true spans are generated
again from it).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections import defaultdict

from common import ROOT, drop_database, setup_django

TARGETS_S = {"import": 300, "pre-label": 1200, "plan": 120, "reports": 120, "release": 300}
TARGET_PAGE_MS, TARGET_RSS_MB = 100, 1536


def verdict(stage: str, seconds: float) -> str:
    return f"{seconds:7.1f} s  target <= {TARGETS_S[stage]} s  {'MET' if seconds <= TARGETS_S[stage] else 'MISSED'}"


def start_workers(n: int, db_url: str, broker: str) -> list[subprocess.Popen]:
    """``n`` workers of one process each, after dropping the tasks an earlier bench left queued on
    ``broker`` (they name rows of another database: a page's scoring job, a merge); returned once
    every one of them answers a ping (:func:`wait_ready`)."""
    import redis

    queue = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")  # the bench database's own (common.py)
    redis.Redis.from_url(broker).delete(queue, *(f"{queue}\x06\x16{p}" for p in (3, 6, 9)))
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": broker, "DEBUG": "0",
           "SECRET_KEY": "scale-bench-not-secret", "BLINDSPOT_SURROGATE_KEY": "scale-bench-not-secret",
           "OMP_NUM_THREADS": "1"}
    names = [f"scale{i}@{socket.gethostname()}" for i in range(n)]
    workers = [subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "annotator", "worker", "-P", "prefork", "-c", "1",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING", "-n", name],
        cwd=ROOT, env=env, start_new_session=True) for name in names]
    wait_ready(workers, names)
    return workers


def wait_ready(workers: list[subprocess.Popen], names: list[str], timeout: float = 120) -> None:
    """Until every worker answers a ping. A worker's start (Django, Celery, its pool process: about
    2 CPU-seconds each) is no part of the first job timed after it: a user's workers are running
    before a run starts, and a bench that counted it would charge it to whichever job came first."""
    from annotator.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(w.poll() is not None for w in workers):
            raise SystemExit("a Celery worker exited while starting (its output is above)")
        answered = {name for reply in app.control.ping(destination=names, timeout=1.0) for name in reply}
        if answered >= set(names):
            return
    raise SystemExit(f"the workers did not answer a ping in {timeout:.0f} s")


def workers_peak_mb(workers: list[subprocess.Popen]) -> list[float]:
    """Each worker's highest peak RSS (VmHWM) over its processes: every job it ran so far."""
    import psutil

    out = []
    for w in workers:
        procs = [psutil.Process(w.pid), *psutil.Process(w.pid).children(recursive=True)]
        peaks = []
        for proc in procs:
            with open(f"/proc/{proc.pid}/status") as f:
                peaks += [int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM")]
        out.append(max(peaks))
    return out


def workers_cpu(workers: list[subprocess.Popen]) -> float:
    """CPU seconds the workers' processes (each worker and its pool children) used so far."""
    import psutil

    total = 0.0
    for w in workers:
        for proc in [psutil.Process(w.pid), *psutil.Process(w.pid).children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def wait(obj, what: str, timeout: float = 7200) -> float:
    """Seconds until the job ``obj`` (a run, job or export) is finished; raises if it failed."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        obj.refresh_from_db()
        if obj.is_finished:
            if obj.status != "succeeded":
                raise SystemExit(f"{what} {obj.status}: {obj.error[:500]}")
            return time.perf_counter() - t0
        time.sleep(0.5)
    raise SystemExit(f"{what} did not finish in {timeout:.0f} s")


def prelabel(project, args, workers, detector=None, config=None):
    """A project run of ``detector`` (default ``--detector``) over the whole corpus: the run and
    (msg/s, msg per CPU-second of the workers)."""
    from annotator.models import RunChunk
    from annotator.services import runs

    detector, config = detector or args.detector, config or {}
    if detector == "tagger":
        if args.tagger:
            project.active_tagger = args.tagger
            project.save(update_fields=["active_tagger"])
        else:
            print("pre-label           no --tagger given: the rules detector stands in for the tagger")
            detector = "rules"
    t0 = time.perf_counter()
    run = runs.run_start(project=project, detector=detector, config=config)
    start_ms = (time.perf_counter() - t0) * 1000
    cpu0 = workers_cpu(workers)
    runs.run_enqueue(run)
    seconds = wait(run, "the run")
    cpu = workers_cpu(workers) - cpu0
    peaks = defaultdict(float)
    for worker, peak in RunChunk.objects.filter(run=run).values_list("worker", "peak_rss_mb"):
        peaks[worker] = max(peaks[worker], peak or 0)
    print(f"pre-label {detector:<9} {run.progress_total:,} messages, {run.total_chunks:,} chunks on {args.workers} "
          f"worker(s): {run.progress_total / seconds:,.0f} msg/s  {verdict('pre-label', seconds)}")
    print(f"                    run start (the request) {start_ms:.0f} ms; peak RSS per worker "
          + ", ".join(f"{w.split('@')[0]} {mb:.0f} MB" for w, mb in sorted(peaks.items()))
          + f"  target <= {TARGET_RSS_MB} MB {'MET' if max(peaks.values()) <= TARGET_RSS_MB else 'MISSED'}")
    per_cpu = run.progress_total / cpu if cpu else 0.0
    print(f"                    workers' CPU {cpu:.1f} s: {per_cpu:,.0f} msg per CPU-second")
    return run, (run.progress_total / seconds, per_cpu)


def against_presidio(project, args, workers, tagger_rates) -> None:
    """Presidio vanilla as a project run on the same corpus and workers, and the tagger's speed as
    a multiple of it (target >= 4x, wall and per CPU-second)."""
    config = {"preset": "vanilla", "reuse": False, **json.loads(args.presidio_config)}
    _, presidio_rates = prelabel(project, args, workers, detector="presidio", config=config)
    print(f"tagger / presidio   {tagger_rates[0] / presidio_rates[0]:.2f}x msg/s, "
          f"{tagger_rates[1] / presidio_rates[1]:.2f}x msg per CPU-second (presidio {config})")


def plan_and_gold(project, run, boss, args) -> None:
    from annotate_bench import PASSWORD
    from django.contrib.auth import get_user_model

    from annotator.management.commands.demo_setup import SIMULATED as PROFILES
    from annotator.models import Assignment, BackgroundJob, Role
    from annotator.services import demo
    from annotator.services.assignments import plan_start
    from annotator.services.projects import membership_set
    from pipeline.synthetic import generate_messages

    User = get_user_model()
    sims = []
    for name in PROFILES:
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User.objects.create_user(name, password=PASSWORD)
            membership_set(project=project, user=user, role=Role.ANNOTATOR)
        sims.append(user)
    done_plan = project.jobs.filter(kind=BackgroundJob.Kind.PLAN, status=BackgroundJob.Status.SUCCEEDED,
                                    params__strategy="flagged_audit").first()
    if done_plan is not None:
        print(f"plan (flagged+audit) reused: job {done_plan.pk}  {done_plan.result}")
    else:
        job = plan_start(project=project, by=boss, strategy="flagged_audit", annotators=sims, k=2, seed=1,
                         runs=[run.pk], audit_rate=0.05)
        print(f"plan (flagged+audit) {verdict('plan', wait(job, 'the plan job'))}  {job.result}", flush=True)
    if args.skip_gold:
        return
    if Assignment.objects.filter(project=project, status=Assignment.Status.DONE).exists():
        print("gold                reused: the project has finished items")
        return
    t0 = time.perf_counter()
    truth = {(d.id, m.index): m.spans for d in generate_messages(args.messages, seed=42) for m in d.messages}
    profiles = {u.pk: PROFILES[u.username] for u in sims}
    n_dialogues = args.gold_dialogues or project.dialogues.count() // 10
    t1 = time.perf_counter()
    done = demo.round_simulate(project=project, truth=truth, profiles=profiles, dialogues=n_dialogues)
    t2 = time.perf_counter()
    settled = demo.adjudicate_all_but(project=project, user=boss, truth=truth, keep_open=0)
    t3 = time.perf_counter()
    per_item = (t2 - t1) / done["submitted"] * 1000 if done["submitted"] else 0.0
    print(f"gold ({'10 % slice' if not args.gold_dialogues else f'{n_dialogues} dialogues'})   "
          f"{n_dialogues:,} dialogues: {done} {settled} ({t3 - t0:.0f} s: truth {t1 - t0:.0f} s, "
          f"items {t2 - t1:.1f} s = {per_item:.0f} ms per submitted item, merge and adjudication {t3 - t2:.1f} s)",
          flush=True)


def reports_and_releases(project, run, boss, args) -> None:
    """Each job asked for and waited on alone, so its time is its own; without gold, the run's release only."""
    from annotator.models import Project
    from annotator.services.releases import release_start
    from annotator.services.reports import agreement_request, circularity_request

    full = args.second_opinion == "project"  # the bench's project has the defaults; --reuse may find them changed
    Project.objects.filter(pk=project.pk).update(second_opinion_presidio=full, second_opinion_tagger=full)
    if not full:
        print("second opinion      the rules' structured identifiers alone (Presidio and the tagger switched off)")

    # the gold covers the messages the plan chose: releases of every dialogue, gold where there is some
    jobs = [] if args.skip_releases else [
        ("release (run)", lambda: release_start(project=project, user=boss, source="run", run=run,
                                                complete_only=False))]
    if not args.skip_gold:
        jobs[:0] = [
            ("agreement report", lambda: agreement_request(project=project, user=boss)),
            ("circularity report", lambda: circularity_request(project=project, user=boss, run=run)),
            *([] if args.skip_releases else [
                ("release (gold)", lambda: release_start(project=project, user=boss, complete_only=False))]),
        ]
    if args.releases_only:
        jobs = [(name, request) for name, request in jobs if name.startswith("release")]
    sources = {f"release ({source.strip()})" for source in args.release_sources.split(",")}
    jobs = [(name, request) for name, request in jobs if not name.startswith("release") or name in sources]
    for name, request in jobs:
        t0 = time.perf_counter()
        job = request()
        wait(job, name)
        print(f"{name:<19} {verdict('release' if 'release' in name else 'reports', time.perf_counter() - t0)}",
              flush=True)


def pages(project, users, args) -> None:
    from annotate_bench import load_work
    from django.db import connection
    from django.test import Client
    from list_pages import load_review_state, time_pages
    from list_pages import pages as page_list
    from scan_check import request_scans

    from annotator.models import Assignment, AssignmentPlan, DetectorRun

    import_run = DetectorRun.objects.filter(project=project).order_by("pk").first()
    if AssignmentPlan.objects.filter(project=project, params__bench=True).exists():
        print("finished work       reused: the bench's plan is there")
    else:
        load_work(project, users, project.dialogues.count())
    load_review_state(project, import_run)
    print(f"pages at            {project.messages.count():,} messages, "
          f"{Assignment.objects.filter(project=project).count():,} assignments")
    out = time_pages(project, users, args.page_requests)
    worst = max(p95 for _, p95 in out)
    print(f"worst page p95      {worst:.1f} ms  target <= {TARGET_PAGE_MS} ms "
          f"{'MET' if worst <= TARGET_PAGE_MS else 'MISSED'}")
    plan = AssignmentPlan.objects.filter(project=project).order_by("pk").first()
    clients = {}
    for name, who, url, headers in page_list(project, plan.pk, import_run.pk):
        clients.setdefault(who, Client()).force_login(users[who])
        for scan, sql in request_scans(clients[who], url, headers)[1]:
            print(f"corpus scan         {name}: {scan}: {sql[:160]}")
    with connection.cursor() as cur:
        cur.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        print(f"database size       {cur.fetchone()[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--detector", default="tagger")
    parser.add_argument("--tagger", default="", help="the tagger version to pre-label with: NAME/VERSION")
    parser.add_argument("--page-requests", type=int, default=10)
    parser.add_argument("--skip-gold", action="store_true", help="no simulated gold, reports or gold release")
    parser.add_argument("--prelabel-only", action="store_true", help="import and pre-label only (1 vs N workers)")
    parser.add_argument("--skip-pages", action="store_true", help="stop after the jobs (no finished work, no pages)")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the kept bench database: skip the stages whose results are there (implies --keep)")
    parser.add_argument("--skip-releases", action="store_true", help="no release from gold nor from the run")
    parser.add_argument("--pages-only", action="store_true",
                        help="with --reuse: no jobs (plan, gold, reports, releases), the pages only")
    parser.add_argument("--reports-only", action="store_true",
                        help="with --reuse: the agreement and circularity report jobs alone, on whatever gold is there "
                             "(after the pages' finished work: gold on nine messages in ten)")
    parser.add_argument("--releases-only", action="store_true",
                        help="with --reuse: the release from gold and the run's release alone (their workers' RSS)")
    parser.add_argument("--release-sources", default="gold,run",
                        help="which releases, comma-separated: gold, run (each is 45-55 CPU-minutes at 1M here)")
    parser.add_argument("--second-opinion", choices=("project", "rules"), default="project",
                        help="the releases' second opinion: the project's (the rules, Presidio tuned, the tagger when "
                             "there is one active) or the rules' structured identifiers alone (the project's Presidio "
                             "and tagger switched off): what Presidio's spaCy costs a release")
    parser.add_argument("--gold-dialogues", type=int, default=0,
                        help="simulate gold for this many dialogues instead of 10 %% of them")
    parser.add_argument("--corpus", help="import this corpus file (import format) instead of --messages generated ones")
    parser.add_argument("--against-presidio", action="store_true",
                        help="with --prelabel-only: then Presidio vanilla as a project run on the same corpus and workers")
    parser.add_argument("--presidio-config", default="{}",
                        help='more Presidio config, JSON: {"fast": false} is Presidio as shipped')
    args = parser.parse_args()
    broker = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
    t_all = time.perf_counter()
    db_url = setup_django(fresh=not args.reuse, broker=broker)
    print(f"load average        {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    try:
        stages(args, db_url, broker)
    finally:
        if not (args.keep or args.reuse):
            drop_database(db_url)  # a million messages leave gigabytes
    print(f"load average        {' '.join(f'{x:.1f}' for x in os.getloadavg())}; total {time.perf_counter() - t_all:.0f} s")


def load_file(path: str):
    """The corpus file ``path`` (import format) through the file import service: the project, the
    import's result and its seconds (``--corpus``: real text instead of generated)."""
    from annotator.services.imports import corpus_import_file
    from annotator.services.projects import project_create

    project = project_create(name="Scale bench", slug="scale-bench", visibility_mode="randomized", overlap_k=2)
    t0 = time.perf_counter()
    result = corpus_import_file(project=project, path=path)
    seconds = time.perf_counter() - t0
    print(f"corpus              {result.dialogues:,} dialogues, {result.messages:,} messages from {path}")
    return project, result, seconds


def reused(args):
    """With ``--reuse``: the kept bench database's project, users and finished pre-label run
    (each None where it is not there)."""
    from django.contrib.auth import get_user_model

    from annotator.models import DetectorRun, Project

    project = Project.objects.filter(slug="scale-bench").first() if args.reuse else None
    if project is None or not project.messages.exists():
        return None, None, None
    users = {u.username: u for u in get_user_model().objects.all()}
    import_run = DetectorRun.objects.filter(project=project).order_by("pk").first()
    run = (DetectorRun.objects.filter(project=project, status=DetectorRun.Status.SUCCEEDED)
           .exclude(pk=import_run.pk).order_by("pk").first())
    print(f"reusing             {project.dialogues.count():,} dialogues, {project.messages.count():,} messages"
          + (f"; run {run.pk} ({run.detector}, {run.progress_total:,} messages)" if run else "; no finished run"))
    return project, users, run


def stages(args, db_url: str, broker: str) -> None:
    from annotate_bench import add_annotators, add_reviewers, load_corpus

    project, users, run = reused(args)
    if project is None:
        if args.corpus:
            project, _, import_s = load_file(args.corpus)
        else:
            project, _, import_s = load_corpus(args.messages, slug="scale-bench")
        print(f"import              {verdict('import', import_s)}", flush=True)
        users = add_annotators(project)
        add_reviewers(project, users)
    boss = users["boss"]
    if args.pages_only and run is not None:
        pages(project, users, args)
        return
    workers = start_workers(args.workers, db_url, broker)
    try:
        if run is None:
            run, rates = prelabel(project, args, workers)
            if args.prelabel_only and args.against_presidio:
                against_presidio(project, args, workers, rates)
        if args.prelabel_only:
            return
        if args.releases_only:
            print("releases only       (the reports skipped)", flush=True)
        elif args.reports_only:
            from annotator.models import AdjudicationDecision

            print(f"reports against     {AdjudicationDecision.objects.filter(message__project=project).count():,} "
                  "gold messages", flush=True)
            args.skip_releases = True
        else:
            plan_and_gold(project, run, boss, args)
        reports_and_releases(project, run, boss, args)
        peaks = workers_peak_mb(workers)
        print(f"workers' peak RSS   {', '.join(f'{mb:.0f} MB' for mb in peaks)} over every job above  "
              f"target <= {TARGET_RSS_MB} MB {'MET' if max(peaks) <= TARGET_RSS_MB else 'MISSED'}")
    finally:
        for w in workers:
            w.terminate()
            w.wait(30)
    if not (args.skip_pages or args.reports_only or args.releases_only):
        pages(project, users, args)


if __name__ == "__main__":
    main()
