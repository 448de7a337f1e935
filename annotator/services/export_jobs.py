"""Building a queued export of either kind, through the job lifecycle.

It sits above both writers (``exports.gold_export_write`` and ``releases.release_write``), so
neither module imports the other to dispatch on the kind.
"""

from __future__ import annotations

from annotator.models import Export
from annotator.selectors.exports import gold_state
from annotator.services import jobs
from annotator.services.audit import audit_record
from annotator.services.exports import (
    ExportError,
    export_discard_staging,
    export_progress,
    export_publish,
    gold_export_write,
)
from annotator.services.releases import release_write


def export_build(*, export_id: int) -> str:
    """Build a queued export (gold or release); idempotent, failures recorded on the record.

    Whatever stops the build (an error, Ctrl-C in a command building it here) marks the export
    failed with its error: it is never left "running"."""
    export = Export.objects.select_related("project", "source_run").get(pk=export_id)
    if export.status == Export.Status.SUCCEEDED:
        return "already built"
    jobs.job_start(export, redo_failed=True)  # a redelivered task rebuilds from an empty directory
    # What gold looks like before it is read: a change from here on makes the export stale.
    state = gold_state(export.project) if export.uses_gold else {}
    write = gold_export_write if export.kind == Export.Kind.GOLD else release_write
    try:
        fields = write(export, progress=lambda d, t: export_progress(export, d, t))
        export_publish(export)  # into the object store, where one is configured
    except ExportError as exc:
        _failed(export, exc)
        return "failed"
    except BaseException as exc:
        _failed(export, exc if isinstance(exc, KeyboardInterrupt | SystemExit) else f"{type(exc).__name__}: {exc}")
        raise
    jobs.job_finish(export, gold_state=state, **fields)
    audit_record(user=export.created_by, action=f"export.{export.kind}.built", obj=export,
                 project=export.project, version=export.version, publishable=fields.get("publishable"))
    return "built"


def _failed(export: Export, error: BaseException | str) -> None:
    export_discard_staging(export)
    jobs.job_fail(export, str(error) if isinstance(error, ExportError) else error)
    audit_record(user=export.created_by, action=f"export.{export.kind}.failed", obj=export,
                 project=export.project, error=jobs.error_text(error)[:500])
