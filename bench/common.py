"""Shared set-up for benchmarks: a dedicated PostgreSQL database and honest memory figures."""

from __future__ import annotations

import json
import os
import resource
import sys
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_BENCH_DB = "postgres://postgres@127.0.0.1:5432/blindspot_bench"


def setup_django(*, fresh: bool = True, broker: str | None = None) -> str:
    """Point Django at the bench database (``BENCH_DATABASE_URL``), recreate it if asked, migrate.
    Jobs run in process unless ``broker`` (a Redis URL) is given: then they go to real workers."""
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_BENCH_DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEBUG", "1")
    if broker:
        os.environ["REDIS_URL"] = broker
        # a queue of this database's own: two benches on one Redis never take each other's tasks
        # (a worker of one once took the other's run chunks and failed them: no such chunk here)
        os.environ["CELERY_TASK_DEFAULT_QUEUE"] = f"bench-{urlparse(url).path.lstrip('/')}"
    else:
        os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    parsed = urlparse(url)
    if parsed.scheme.startswith("postgres"):
        import psycopg

        name = parsed.path.lstrip("/")
        admin = parsed._replace(path="/postgres").geturl()
        with psycopg.connect(admin, autocommit=True) as conn:
            if fresh:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return url


def drop_database(url: str) -> None:
    """Drop the bench database at ``url`` (a bench at a million messages leaves gigabytes)."""
    import psycopg
    from django.db import connections

    connections.close_all()
    parsed = urlparse(url)
    with psycopg.connect(parsed._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parsed.path.lstrip("/")}" WITH (FORCE)')


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_generated_corpus(path: Path, messages: int, *, seed: int = 42) -> tuple[int, int]:
    """Write at least ``messages`` generated messages (``pipeline.synthetic``, seeded) to ``path``
    in the import format; return (dialogues, messages). The corpus the import, release and
    pipeline benches share, so their figures are on the same text."""
    from pipeline.corpus import dialogue_to_obj
    from pipeline.synthetic import generate_messages

    dialogues = generate_messages(messages, seed=seed)
    with open(path, "w", encoding="utf-8") as fh:
        for d in dialogues:
            fh.write(json.dumps(dialogue_to_obj(d), ensure_ascii=False) + "\n")
    return len(dialogues), sum(len(d.messages) for d in dialogues)
