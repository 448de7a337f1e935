"""Project-wide figures (dashboard counts, annotator statistics, the adjudication queue's counts,
a plan's exposure, the gold fingerprint) computed once per project revision, not per request.

Each of these aggregates reads every assignment or every decision of the project: hundreds of
milliseconds at corpus scale (115,620 messages, 234k assignments), on every page view and every
poll. They change only when the project is written to, and every write service leaves an
``AuditEvent`` (imports add dialogues; a plan, a submit, a merge, a decision, a reassignment, an
edit in the Django admin each record one). :func:`project_revision` reads the newest of them from
indexes (one query, no scan), and :func:`cached` keeps a figure under the revision it was
computed at: any audited write moves the revision and so invalidates every figure of the project,
without a list of keys to remember. A write that records no event (the active-time heartbeat)
shows with the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotator.models import AuditEvent, Dialogue, Project

T = TypeVar("T")
TIMEOUT = 24 * 3600  # a revision's figures are dropped by the cache a day later, or when it culls
_one_revision: ContextVar[dict[int, str] | None] = ContextVar("figures_one_revision", default=None)


@contextmanager
def one_revision() -> Iterator[None]:
    """Inside, each project's revision is read once and reused (a page that shows several cached
    figures read it once per figure: three times on the adjudication queue, 15 ms each at a
    million messages). For a GET request (``annotator.middleware.OneRevisionMiddleware``): a
    figure is never older than the revision at the request's first read of it."""
    token = _one_revision.set({})
    try:
        yield
    finally:
        _one_revision.reset(token)


def project_revision(project: Project) -> str:
    """What moves on every write to the project: its newest audit event, its dialogues (count
    and newest) and the settings the figures depend on; one query (the count reads the project's
    dialogues, about 33,000 at a million messages; the newest ones come from the primary keys)."""
    memo = _one_revision.get()
    if memo is not None and project.pk in memo:
        return memo[project.pk]
    newest_event = AuditEvent.objects.filter(project=OuterRef("pk")).order_by("-pk").values("pk")[:1]
    newest_dialogue = Dialogue.objects.filter(project=OuterRef("pk")).order_by("-pk").values("pk")[:1]
    dialogues = (Dialogue.objects.filter(project=OuterRef("pk")).order_by()
                 .values("project").annotate(n=Count("pk")).values("n"))
    row = (Project.objects.filter(pk=project.pk)
           .annotate(event=Coalesce(Subquery(newest_event, output_field=IntegerField()), 0),
                     n_dialogues=Coalesce(Subquery(dialogues, output_field=IntegerField()), 0),
                     last_dialogue=Coalesce(Subquery(newest_dialogue, output_field=IntegerField()), 0))
           .values_list("event", "n_dialogues", "last_dialogue", "overlap_k").get())
    created = project.created_at.timestamp() if project.created_at else 0
    revision = f"{project.pk}.{created:.6f}." + ".".join(str(v) for v in row)
    if memo is not None:
        memo[project.pk] = revision
    return revision


def cached(project: Project, name: str, compute: Callable[[], T], *, revision: str | None = None) -> T:
    """``compute()``, or what it returned before at the project's current revision."""
    key = f"figures:{name}:{revision or project_revision(project)}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=TIMEOUT)
    return value


def cached_many(project: Project, computes: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Several figures at one revision (one revision query for them all)."""
    revision = project_revision(project)
    return {name: cached(project, name, compute, revision=revision) for name, compute in computes.items()}
