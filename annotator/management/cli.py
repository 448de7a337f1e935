"""Small helpers the management commands share: look-ups that fail with one line, and a
terminal progress line for background work (detector runs, release builds)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from django.core.management.base import CommandError

from annotator.models import Project
from pipeline.parallel import usable_cores


def project_or_error(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"No project with slug {slug!r} (create one with: manage.py create_project NAME --slug SLUG).")
    return project


def json_object_or_error(raw: str, *, option: str = "--config") -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{option} is not valid JSON: {exc.msg} (column {exc.colno}).") from None
    if not isinstance(value, dict):
        raise CommandError(f"{option} must be a JSON object, e.g. '{{\"preset\": \"tuned\"}}'.")
    return value


def add_workers_argument(parser) -> None:
    parser.add_argument("--workers", type=int, default=None,
                        help="Processes to run the detector in, each loading it once; the output is the same "
                             f"for any number (default: every usable core, {usable_cores()} here).")


def workers_or_error(value: int | None) -> int:
    """``--workers``: how many processes a command runs its detector in; default every usable core."""
    if value is None:
        return usable_cores()
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CommandError(f"--workers must be a whole number of processes, at least 1 (got {value!r}); "
                           f"leave it out to use every usable core ({usable_cores()} here).")
    return value


def runs_in_this_process() -> bool:
    """True without a broker: queued tasks then run in this process and die with it, so a
    command must wait for them (the web server, by contrast, keeps running)."""
    from annotator.celery import app

    return bool(app.conf.task_always_eager)


class Progress:
    """One progress line: rewritten in place on a terminal, else printed per 10 % step."""

    def __init__(self, stdout, unit: str):
        self.stdout, self.unit, self.tty, self.shown = stdout, unit, stdout.isatty(), -1

    def update(self, done: int, total: int, *, finished: bool = False) -> None:
        percent = int(100 * done / total) if total else (100 if finished else 0)
        line = f"  {percent:3d}%  {done:,}/{total:,} {self.unit}"
        if self.tty:
            self.stdout.write("\r" + line, ending="\n" if finished else "")
            self.stdout.flush()
        elif percent // 10 != self.shown // 10 or (finished and percent != self.shown):
            self.stdout.write(line)
        self.shown = percent


def follow(stdout, poll: Callable[[], tuple[int, int, bool]], *, unit: str, interval: float = 0.5) -> None:
    """Print progress until ``poll()`` says finished: ``(done, total, finished)``."""
    bar = Progress(stdout, unit)
    while True:
        done, total, finished = poll()
        if total or finished:  # nothing to show while it is still queued
            bar.update(done, total, finished=finished)
        if finished:
            return
        time.sleep(interval)


@contextmanager
def quiet_task_logs():
    """Celery logs a failing in-process task with its traceback; the command reports the error
    recorded on the run or export in one line instead."""
    logger = logging.getLogger("celery.app.trace")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
