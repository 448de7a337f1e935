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

On a project where annotators are submitting, the revision moves every few seconds, so nearly
every admin page would compute its figures again: seconds each at a million messages. With
workers, a page therefore shows a figure's newest value (a few seconds old) and a worker computes
the current one (stale-while-revalidate, as HTTP caches do): requests never wait for a scan.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotator import task_names as names
from annotator.dispatch import enqueue, has_broker
from annotator.models import AuditEvent, Dialogue, Project

T = TypeVar("T")
TIMEOUT = 24 * 3600  # a revision's figures are dropped by the cache a day later, or when it culls
LATEST_TIMEOUT = 7 * 24 * 3600  # the newest value of a figure, served while a worker computes the next
REFRESH_SECONDS = 10  # a figure is computed again at most this often while pages ask for it
# a newest value older than this is not served: no worker took its refresh (all busy with long
# jobs, or none running), and the request computes the figure itself, slow but never stale for long
MAX_STALE_SECONDS = 120
_FIGURES: dict[str, Callable[..., Any]] = {}
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
    revision = f"{_identity(project)}." + ".".join(str(v) for v in row)
    if memo is not None:
        memo[project.pk] = revision
    return revision


def figure(fn: Callable[..., T]) -> Callable[..., T]:
    """Register ``fn(project, **params)`` as a project figure: :func:`cached` serves it and a
    worker may compute it again (:func:`refresh`) by its registered name alone."""
    _FIGURES[_path(fn)] = fn
    return fn


def cached(project: Project, fn: Callable[..., T], *, revision: str | None = None, **params: Any) -> T:
    """``fn(project, **params)`` (a :func:`figure`; ``params`` JSON-able) as computed at the
    project's current revision, or, when that is not computed yet:

    - with workers (a broker), the newest value computed at any revision, while a worker computes
      it at this one (at most one such job per figure every :data:`REFRESH_SECONDS`): a page never
      scans the corpus because an annotator just submitted. A figure never computed before (or
      dropped by the cache), or whose newest value is older than :data:`MAX_STALE_SECONDS` (no
      worker got to it), is computed in the request;
    - without workers (the embedded default, tests), computed here and now, as it always was.
    """
    name = _name(fn, params)
    revision = revision or project_revision(project)
    value = cache.get(_key(name, revision))
    if value is not None:
        return value
    latest = cache.get(_latest_key(project, name)) if has_broker() else None
    if latest is None or time.time() - latest[2] > MAX_STALE_SECONDS:
        return _store(project, name, revision, fn(project, **params))
    if cache.add(_refreshing_key(project, name), revision, timeout=REFRESH_SECONDS):
        enqueue(names.PROJECTS_FIGURE_REFRESH, project.pk, _path(fn), params)
    return latest[1]


def refresh(*, project_id: int, path: str, params: dict[str, Any]) -> bool:
    """Compute figure ``path`` of a project at its current revision (the job :func:`cached`
    queues). False when there was nothing to do: the project is gone or a page computed it."""
    module = path.rpartition(".")[0]
    if path not in _FIGURES and module.startswith("annotator.selectors."):
        importlib.import_module(module)  # a worker that has not imported it yet: it registers its figures
    fn = _FIGURES.get(path)
    if fn is None:
        raise ValueError(f"{path!r} is not a registered project figure")
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return False
    name, revision = _name(fn, params), project_revision(project)
    if cache.get(_key(name, revision)) is not None:
        return False
    _store(project, name, revision, fn(project, **params))
    return True


def _path(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _name(fn: Callable, params: dict[str, Any]) -> str:
    return ":".join([_path(fn), *(f"{k}={params[k]}" for k in sorted(params))])


def _key(name: str, revision: str) -> str:
    return f"figures:{name}:{revision}"


def _identity(project: Project) -> str:
    """The project's id and creation time: a project made later under a reused id (a fresh
    database, the same cache) is another project."""
    created = project.created_at.timestamp() if project.created_at else 0
    return f"{project.pk}.{created:.6f}"


def _latest_key(project: Project, name: str) -> str:
    return f"figures:{name}:{_identity(project)}:latest"


def _refreshing_key(project: Project, name: str) -> str:
    return f"figures:{name}:{_identity(project)}:refreshing"


def _store(project: Project, name: str, revision: str, value: T) -> T:
    cache.set(_key(name, revision), value, timeout=TIMEOUT)
    cache.set(_latest_key(project, name), (revision, value, time.time()), timeout=LATEST_TIMEOUT)
    return value
