"""Celery tasks of this area: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.models import Export
from annotator.services.exports import gold_export_build
from annotator.services.releases import release_build, release_chunk_audit

BUILDERS = {Export.Kind.GOLD: gold_export_build, Export.Kind.RELEASE: release_build}


@shared_task(acks_late=True, reject_on_worker_lost=True, name=names.EXPORTS_BUILD)
def export_build_task(export_id: int) -> str:
    """Build a gold export or a release. Idempotent: a redelivered task rebuilds an unfinished
    export from an empty directory, or finds it built. Failures are recorded on the export and
    not retried (an admin starts a new version)."""
    kind = Export.objects.values_list("kind", flat=True).get(pk=export_id)
    return BUILDERS[kind](export_id=export_id)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, name=names.EXPORTS_RELEASE_CHUNK)
def release_chunk_task(self, chunk_id: int) -> str:
    """The second opinion on one chunk of a release's dialogues; the last chunk finishes the
    release. Idempotent: a redelivered chunk finds itself done or stores the same result again.
    A failure is recorded on the chunk and fails the release (not retried: an admin builds a new
    version), as a failed build does."""
    return release_chunk_audit(chunk_id=chunk_id, worker=self.request.hostname or "")
