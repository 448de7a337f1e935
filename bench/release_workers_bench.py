"""A release as Celery jobs on 1, then N real workers: does adding workers cut its time?

Imports ``--messages`` generated messages (their spans become an import run), then for each worker
count in ``--workers`` (default ``1 2``) starts that many fresh workers (one process each),
builds a release of the run (every dialogue, Presidio's second opinion as the project asks),
waits for it and prints its wall time, how long its own job took before the chunks began, and how
its chunks spread over the workers where the release was split (``ReleaseChunk``). Fresh workers each time, so every figure includes
loading spaCy and Presidio once per worker.

    nice -n 10 .venv/bin/python bench/release_workers_bench.py --messages 20000 --workers 1 2

Uses BENCH_DATABASE_URL (dropped and recreated, dropped at the end) and BENCH_REDIS_URL (default
redis://127.0.0.1:6379/15).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

from common import drop_database, setup_django
from scale_bench import start_workers, wait


def chunk_spread(export) -> str:
    """How many chunks each worker audited, and its seconds on them."""
    from annotator.models import ReleaseChunk

    count, seconds = Counter(), Counter()
    for worker, s in ReleaseChunk.objects.filter(export=export).values_list("worker", "seconds"):
        count[worker.split("@")[0]] += 1
        seconds[worker.split("@")[0]] += s
    return ", ".join(f"{w}: {count[w]} in {seconds[w]:.1f} s" for w in sorted(count)) or "one job"


def job_part(export, t0: float) -> str:
    """How long the release's own job took before its chunks began (the earliest chunk's start)."""
    from annotator.models import ReleaseChunk

    starts = [f.timestamp() - s for f, s in ReleaseChunk.objects.filter(export=export).values_list(
        "finished_at", "seconds")]
    return f"{min(starts) - t0:.1f} s" if starts else "all of it"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    broker = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
    db_url = setup_django(broker=broker)
    from annotate_bench import load_corpus

    from annotator.models import DetectorRun
    from annotator.services.releases import release_start

    try:
        project, _, _ = load_corpus(args.messages, slug="release-workers")
        run = DetectorRun.objects.get(project=project)
        for n in args.workers:
            workers = start_workers(n, db_url, broker)
            try:
                t0, started = time.perf_counter(), time.time()
                export = release_start(project=project, user=None, source="run", run=run, complete_only=False)
                wait(export, "the release")
                seconds = time.perf_counter() - t0
            finally:
                for w in workers:
                    w.terminate()
                    w.wait(30)
            print(f"release, {n} worker(s)  {seconds:6.1f} s  {export.manifest['messages']:,} messages, "
                  f"{export.report['candidates']['pending']:,} candidates; the job's own part {job_part(export, started)}; "
                  f"chunks: {chunk_spread(export)}; "
                  f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        drop_database(db_url)


if __name__ == "__main__":
    main()
