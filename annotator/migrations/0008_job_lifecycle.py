"""One job lifecycle: BackgroundJob, Export and DetectorRun share JobFields.

Existing rows keep their meaning: every old status value ("queued", "running", "succeeded",
"failed", "cancelled") is a value of the shared JobStatus, so no status is rewritten; a run's
message counts are renamed (their values kept) to the shared progress fields; an export gains
``started_at``, filled from ``created_at`` for exports that had started, so a finished export
keeps a start time. The run's progress check is dropped and re-added around the rename, which
SQLite (table rebuild) and PostgreSQL (ALTER TABLE ... RENAME COLUMN) both do in place.
"""

from django.db import migrations, models
from django.db.models import F


def export_started_at(apps, schema_editor):
    Export = apps.get_model("annotator", "Export")
    Export.objects.exclude(status="queued").filter(started_at__isnull=True).update(started_at=F("created_at"))


class Migration(migrations.Migration):

    dependencies = [
        ("annotator", "0007_export_gold_state_help_text"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="detectorrun", name="run_progress_bounded"),
        migrations.RenameField(model_name="detectorrun", old_name="done_messages", new_name="progress_done"),
        migrations.RenameField(model_name="detectorrun", old_name="total_messages", new_name="progress_total"),
        migrations.AddConstraint(
            model_name="detectorrun",
            constraint=models.CheckConstraint(
                condition=models.Q(progress_done__lte=models.F("progress_total")), name="run_progress_bounded"
            ),
        ),
        migrations.AddField(
            model_name="export", name="started_at", field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(export_started_at, migrations.RunPython.noop),
    ]
