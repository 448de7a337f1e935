"""The whole pipeline at MathEd-PII size, each step timed, the targets printed PASS/MISS.

    nice -n 10 .venv/bin/python bench/pipeline_bench.py [--messages 115620] [--workers 2]
        [--model PATH | --model-dir var/models --name synthetic] [--config JSON] [--audit-rate 0.1]

1. **import**: ``--messages`` generated messages (seed 42, as ``import_bench.py``) through the
   import service, in one transaction; the generator's own spans become an import run (the truth
   the simulated gold is made from). Target: <= 60 s.
2. **tagger run**: ``--workers`` real Celery workers (one process each, ``cores // workers``
   inference threads) are started on Redis with a queue of their own; the run is started and its
   chunks queued through the services the Runs page uses. Timed from starting the workers
   (interpreter, Django and model loading count) to the run's success; peak RSS is the largest sum
   over the workers' process trees. Target (item 2): 115,620 messages in <= 10 min on 2 cores
   (projected from the measured rate when ``--messages`` is smaller; start-up counted in full, so it
   errs slow), peak RSS <= 2.5 GB.
3. **plan**: k = 2 over three annotators, the tagger run's flagged messages plus an audit sample of
   ``--audit-rate`` of the unflagged ones (``flagged_audit``), built as a background job on the
   workers. Target (item 4): the request that starts it answers in <= 200 ms; the job's time is printed.
4. **simulated gold** (not a pipeline step, not timed as one): every message gets a decision and
   the generator's spans as gold, in SQL, as ``bench/list_pages.py`` does — the real annotation
   and merge would take people.
5. **release from gold**: surrogate mode, built as a job on the workers (stream, leak check,
   utility report, mapping table). Target: <= 60 s (``release_bench.py``'s).

Uses PostgreSQL (``BENCH_DATABASE_URL``, default
postgres://postgres@127.0.0.1:5432/blindspot_pipeline_bench, dropped and recreated) and Redis
(``BENCH_REDIS_URL``, default redis://127.0.0.1:6379/0). Needs a trained tagger: without
``--model`` it uses or trains one as ``bench/tagger_bench.py`` does. Figures are wall-clock: on a
shared machine say how loaded it was (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench.common import write_generated_corpus  # noqa: E402
from bench.deidentify_bench import tree_rss_mb  # noqa: E402
from bench.tagger_bench import ensure_model  # noqa: E402
from pipeline.parallel import threads_per_worker, usable_cores  # noqa: E402
from pipeline.tagger.training.config import DEFAULT_NUM_LAYERS  # noqa: E402

TARGET_MESSAGES = 115_620
TARGETS = {
    "import_s": 60,
    "tagger_s": 600,
    "rss_mb": 2.5 * 1024,
    "release_s": 60,
    "request_ms": 200,
}
BENCH_KEY = "pipeline-bench-key-not-secret"
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/blindspot_pipeline_bench"
ANNOTATORS = ("ann1", "ann2", "ann3")


def tree_pids(pid: int) -> list[int]:
    """``pid`` and all its descendants (those still there)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
        out.append(p)
    return out


def pss_mb(pids: list[int]) -> float:
    """Proportional set size of ``pids`` in MB: unlike a sum of RSS, pages a prefork worker's
    child shares with its parent count once."""
    total = 0
    for p in pids:
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next(
            (int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0
        )
    return total / 1024


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# --- workers ---------------------------------------------------------------------------------


class Workers:
    """``n`` Celery worker processes on their own queue; the peak RSS of all their processes is
    sampled every 0.1 s while :meth:`sampling` is on."""

    def __init__(self, n: int, queue: str, env: dict[str, str], log_dir: Path) -> None:
        self.queue, self.procs, self.logs = queue, [], []
        self.peak = self.peak_pss = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        for i in range(n):
            log = log_dir / f"worker-{i}.log"
            self.logs.append(log)
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "annotator",
                        "worker",
                        "-Q",
                        queue,
                        "-P",
                        "prefork",
                        "-c",
                        "1",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "-l",
                        "INFO",
                        "-n",
                        f"{queue}-{i}@%h",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=log.open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def output(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text()[-3000:]}" for log in self.logs if log.exists()
        )

    def check(self) -> None:
        dead = [p.pid for p in self.procs if p.poll() is not None]
        if dead:
            raise SystemExit(f"worker process(es) {dead} ended early:\n{self.output()}")

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not all(" ready." in log.read_text() for log in self.logs if log.exists()):
            self.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"the workers did not start in {timeout:.0f} s:\n{self.output()}")
            time.sleep(0.2)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(tree_rss_mb(p.pid) for p in self.procs))
            self.peak_pss = max(
                self.peak_pss, pss_mb([q for p in self.procs for q in tree_pids(p.pid)])
            )
            time.sleep(0.1)

    def sampling(self, on: bool) -> None:
        if on:
            self.peak = self.peak_pss = 0.0
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        elif self._thread is not None:
            self._stop.set()
            self._thread.join()

    def stop(self) -> None:
        self.sampling(False)
        for p in self.procs:  # each worker leads its own process group (start_new_session)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def wait_job(obj, workers: Workers, what: str, timeout: float = 3600) -> float:
    """Poll a job row (run, background job, export) until it finishes; its seconds from now."""
    t0 = last = time.perf_counter()
    while True:
        obj.refresh_from_db()
        if obj.is_finished:
            break
        if time.perf_counter() - last >= 60:  # a long step says how far it has got
            last = time.perf_counter()
            print(
                f"    {what}: {obj.progress_done:,} of {obj.progress_total:,} after {last - t0:.0f} s "
                f"(load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        workers.check()
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"{what} did not finish in {timeout:.0f} s:\n{workers.output()}")
        time.sleep(0.2)
    if obj.status != obj.Status.SUCCEEDED:
        raise SystemExit(f"{what} {obj.status}: {obj.error}\n{workers.output()}")
    return time.perf_counter() - t0


# --- steps -----------------------------------------------------------------------------------


def make_project():
    from django.contrib.auth import get_user_model

    from annotator.models import Role
    from annotator.services.projects import membership_set, project_create

    User = get_user_model()
    boss = User.objects.create_user("boss", password="bench-password-1")
    project = project_create(
        name="Pipeline bench",
        slug="pipeline-bench",
        user=boss,
        visibility_mode="randomized",
        overlap_k=2,
    )
    annotators = []
    for name in ANNOTATORS:
        user = User.objects.create_user(name, password="bench-password-1")
        membership_set(project=project, user=user, role=Role.ANNOTATOR, by=boss)
        annotators.append(user)
    return project, boss, annotators


def simulate_gold(project, truth_run_id: int) -> tuple[int, int]:
    """Every message decided, the generator's spans (the import run) as its gold."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO annotator_adjudicationdecision (message_id, outcome, risk, model_favoured, notes, details, "
            "decided_at) SELECT id, 'unanimous', 0, NULL, 'pipeline bench: simulated', '{}', now() "
            "FROM annotator_message WHERE project_id = %s ON CONFLICT DO NOTHING",
            [project.pk],
        )
        decisions = cur.rowcount
        cur.execute(
            'INSERT INTO annotator_goldspan (message_id, start, "end", label, provenance, annotators, model_matched, '
            "decision_id, created_at) SELECT d.message_id, pr.start, pr.\"end\", pr.label, d.outcome, '[]', false, "
            "d.id, now() FROM annotator_adjudicationdecision d JOIN annotator_prediction pr "
            "ON pr.message_id = d.message_id AND pr.run_id = %s "
            "JOIN annotator_message m ON m.id = d.message_id AND m.project_id = %s ON CONFLICT DO NOTHING",
            [truth_run_id, project.pk],
        )
        spans = cur.rowcount
        cur.execute("ANALYZE")
    return decisions, spans


# --- main ------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=TARGET_MESSAGES)
    parser.add_argument(
        "--workers", type=int, default=2, help="Celery worker processes for the jobs"
    )
    parser.add_argument(
        "--audit-rate",
        type=float,
        default=0.1,
        help="share of the unflagged messages drawn as the plan's audit sample",
    )
    parser.add_argument("--config", default="{}", help="tagger config (JSON) besides model_path")
    parser.add_argument("--model", help="a saved tagger version directory")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--name", default="synthetic")
    parser.add_argument("--layers", type=int, default=DEFAULT_NUM_LAYERS)
    parser.add_argument("--train-messages", type=int, default=3000)
    parser.add_argument("--train-seconds", type=float, default=0, help="0: train in full")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.workers < 1:
        parser.error("--messages and --workers must be at least 1")
    if not 0 < args.audit_rate <= 1:
        parser.error("--audit-rate must be in (0, 1]")
    try:
        args.config = json.loads(args.config)
    except json.JSONDecodeError as exc:
        parser.error(f"--config is not JSON: {exc}")
    if not isinstance(args.config, dict):
        parser.error("--config must be a JSON object")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = str(Path(ensure_model(args)).resolve())
    tmp = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    broker = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    os.environ.setdefault("BENCH_DATABASE_URL", DEFAULT_DB)
    os.environ["BLINDSPOT_EXPORTS_DIR"] = str(tmp / "exports")
    os.environ["BLINDSPOT_UPLOADS_DIR"] = str(tmp / "uploads")
    os.environ["BLINDSPOT_SURROGATE_KEY"] = BENCH_KEY
    from common import setup_django

    url = setup_django(fresh=True, broker=broker)
    from annotator.celery import app

    queue = f"pipeline-bench-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = queue
    threads = threads_per_worker(args.workers)
    # the workers run as in production (DEBUG off: no query log growing with every chunk)
    secret = os.environ.get("SECRET_KEY") or f"pipeline-bench-{uuid.uuid4().hex}"
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "DEBUG": "0", "SECRET_KEY": secret}
    print(
        f"database {url}; broker {broker} (queue {queue}); {args.workers} worker(s) x {threads} thread(s) "
        f"on {usable_cores()} usable cores; load average {os.getloadavg()[0]:.1f} at start\nmodel {model}",
        flush=True,
    )
    rows: dict[str, float] = {}
    started = time.perf_counter()
    workers = None
    try:
        from annotator.models import BackgroundJob, DetectorRun
        from annotator.selectors.runs import run_label_counts
        from annotator.services.assignments import plan_start
        from annotator.services.imports import corpus_import_file
        from annotator.services.releases import release_start
        from annotator.services.runs import run_enqueue, run_start

        # 1. import
        corpus = tmp / "corpus.jsonl"
        t0 = time.perf_counter()
        n_dialogues, n_messages = write_generated_corpus(corpus, args.messages)
        print(
            f"corpus: {n_dialogues:,} dialogues, {n_messages:,} messages, {corpus.stat().st_size / 1e6:.1f} MB "
            f"(generated in {time.perf_counter() - t0:.1f} s, not counted)",
            flush=True,
        )
        project, boss, annotators = make_project()
        t0 = time.perf_counter()
        result = corpus_import_file(project=project, path=corpus, user=boss, spans_as="run")
        rows["import_s"] = time.perf_counter() - t0
        print(
            f"1 import            {rows['import_s']:8.1f} s  {n_messages / rows['import_s']:,.0f} msg/s "
            f"({result.spans:,} generator spans as run #{result.run_id})",
            flush=True,
        )

        # 2. tagger run on real workers
        t0 = time.perf_counter()
        workers = Workers(args.workers, queue, env, tmp)
        workers.sampling(True)
        workers.wait_ready()
        ready_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        run = run_start(
            project=project,
            detector="tagger",
            config={**args.config, "model_path": model},
            user=boss,
        )
        queued = run_enqueue(run)
        rows["run_request_ms"] = 1000 * (time.perf_counter() - t1)
        wait_job(run, workers, f"tagger run {run.label}")
        rows["tagger_s"] = time.perf_counter() - t0
        workers.sampling(False)
        rows["rss_mb"], rows["pss_mb"] = workers.peak, workers.peak_pss
        run.refresh_from_db()
        spread = {}
        for name in run.chunks.values_list("worker", flat=True):
            spread[name.rsplit("@", 1)[0]] = spread.get(name.rsplit("@", 1)[0], 0) + 1
        rows["tagger_projected_s"] = rows["tagger_s"] * TARGET_MESSAGES / n_messages
        counts = ", ".join(f"{label} {n:,}" for label, n in run_label_counts(run))
        print(
            f"2 tagger run        {rows['tagger_s']:8.1f} s  {n_messages / rows['tagger_s']:,.0f} msg/s "
            f"(workers ready after {ready_s:.1f} s; {queued} chunks, by worker {sorted(spread.values())}; "
            f"{run.model_version}; {counts}); peak RSS of the workers {rows['rss_mb']:,.0f} MB "
            f"(PSS {rows['pss_mb']:,.0f} MB)",
            flush=True,
        )

        # 3. plan (k = 2, audit sample), a job on the workers
        t1 = time.perf_counter()
        job = plan_start(
            project=project,
            by=boss,
            strategy="flagged_audit",
            annotators=annotators,
            k=2,
            runs=[run.pk],
            audit_rate=args.audit_rate,
            seed=1,
        )
        rows["plan_request_ms"] = 1000 * (time.perf_counter() - t1)
        wait_job(job, workers, "the plan job")
        rows["plan_s"] = time.perf_counter() - t1
        job.refresh_from_db()
        from annotator.models import AssignmentPlan

        plan = AssignmentPlan.objects.get(pk=job.result["plan_id"])
        s = plan.summary
        print(
            f"3 plan (job)        {rows['plan_s']:8.1f} s  {job.result['assignments']:,} assignments "
            f"(flagged {s.get('flagged', '?')}, audit sample {s.get('audit_sampled', '?')}; "
            f"request {rows['plan_request_ms']:.0f} ms)",
            flush=True,
        )

        # 4. simulated gold (SQL)
        t1 = time.perf_counter()
        decisions, gold_spans = simulate_gold(project, result.run_id)
        print(
            f"4 simulated gold    {time.perf_counter() - t1:8.1f} s  {decisions:,} decisions, {gold_spans:,} gold "
            "spans (SQL; stands in for annotation and adjudication, not a pipeline step)",
            flush=True,
        )

        # 5. release from gold, a job on the workers
        t1 = time.perf_counter()
        export = release_start(project=project, user=boss, source="gold", mode="surrogate")
        rows["release_request_ms"] = 1000 * (time.perf_counter() - t1)
        wait_job(export, workers, "the release job")
        rows["release_s"] = time.perf_counter() - t1
        export.refresh_from_db()
        m = export.manifest
        print(
            f"5 release (gold)    {rows['release_s']:8.1f} s  {n_messages / rows['release_s']:,.0f} msg/s "
            f"({m.get('messages', 0):,} messages, {m.get('spans', 0):,} spans, {m.get('leaks')} leak(s), "
            f"publishable {export.publishable}; request {rows['release_request_ms']:.0f} ms)",
            flush=True,
        )
        rows["total_s"] = time.perf_counter() - started
        assert BackgroundJob.objects.filter(project=project, status="failed").count() == 0
        assert DetectorRun.objects.get(pk=run.pk).status == "succeeded"
    finally:
        if workers is not None:
            workers.stop()
        import redis

        redis.Redis.from_url(broker).delete(queue, *(f"{queue}\x06\x16{p}" for p in (3, 6, 9)))
        shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg()[0]
    scale = f" (projected from {n_messages:,})" if abs(n_messages - TARGET_MESSAGES) > 1000 else ""
    print(
        f"\nend to end {rows['total_s'] / 60:.1f} min for {n_messages:,} messages (corpus generation excluded); "
        f"load average {load:.1f} at the end — wall-clock figures on a machine that may be shared"
    )
    checks = [
        (
            rows["import_s"] <= TARGETS["import_s"] * n_messages / TARGET_MESSAGES,
            f"import of 115,620 messages <= 60 s: {rows['import_s'] * TARGET_MESSAGES / n_messages:.1f} s{scale}",
        ),
        (
            rows["tagger_projected_s"] <= TARGETS["tagger_s"],
            f"tagger run over 115,620 messages <= 10 min with {args.workers} workers: "
            f"{rows['tagger_projected_s'] / 60:.1f} min{scale}",
        ),
        (
            rows["rss_mb"] <= TARGETS["rss_mb"],
            f"tagger workers' peak RSS <= 2.5 GB: {rows['rss_mb']:,.0f} MB (summed over their processes; "
            f"PSS, shared pages once: {rows['pss_mb']:,.0f} MB)",
        ),
        (
            rows["plan_request_ms"] <= TARGETS["request_ms"],
            f"the plan is a background job; the request that starts it <= 200 ms: {rows['plan_request_ms']:.0f} ms "
            f"(job {rows['plan_s']:.1f} s)",
        ),
        (
            rows["release_s"] <= TARGETS["release_s"] * n_messages / TARGET_MESSAGES,
            f"release from gold of 115,620 messages <= 60 s: {rows['release_s'] * TARGET_MESSAGES / n_messages:.1f} s"
            f"{scale}",
        ),
    ]
    for ok, text in checks:
        print(f"{verdict(ok)}  {text}")
    print(
        f"(starting the run: {rows['run_request_ms']:.0f} ms; the release: {rows['release_request_ms']:.0f} ms — "
        "what the Runs and Releases pages spend in the request)"
    )
    print(json.dumps({k: round(v, 2) for k, v in rows.items()}))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
