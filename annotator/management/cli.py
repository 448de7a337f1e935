"""Small helpers the management commands share: look-ups that fail with one line, and a
terminal progress line for background work (detector runs, release builds)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from annotator.models import Project


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


def runs_in_this_process() -> bool:
    """True without a broker: queued tasks then run in this process and die with it, so a
    command must wait for them (the web server, by contrast, keeps running)."""
    from annotator.celery import app

    return bool(app.conf.task_always_eager)


def follow(stdout, poll: Callable[[], tuple[int, int, bool]], *, unit: str, interval: float = 0.5) -> None:
    """Print progress until ``poll()`` says finished: ``(done, total, finished)``.

    On a terminal one line is rewritten in place; otherwise a line is printed per 10 % step.
    """
    tty = stdout.isatty()
    shown = -1
    while True:
        done, total, finished = poll()
        if not total and not finished:  # queued, not started yet
            time.sleep(interval)
            continue
        percent = int(100 * done / total) if total else (100 if finished else 0)
        line = f"  {percent:3d}%  {done:,}/{total:,} {unit}"
        if tty:
            stdout.write("\r" + line, ending="")
            stdout.flush()
        elif percent // 10 != shown // 10 or finished and percent != shown:
            stdout.write(line)
        shown = percent
        if finished:
            if tty:
                stdout.write("")
            return
        time.sleep(interval)
