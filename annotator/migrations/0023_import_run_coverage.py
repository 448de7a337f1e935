"""Imported runs record what they covered: a run imported before that gets the one
chunk a new import writes, holding the dialogues its file brought, so it is scored only on them.

Those dialogues are the project's with the run's file as their ``source``, created by the time the
run was (one transaction) and after the previous import run of the same file (a re-import with
"skip existing" adds only new dialogues)."""

from django.db import migrations
from django.db.models import Count


def backfill(apps, schema_editor):
    DetectorRun = apps.get_model("annotator", "DetectorRun")
    Dialogue = apps.get_model("annotator", "Dialogue")
    Message = apps.get_model("annotator", "Message")
    RunChunk = apps.get_model("annotator", "RunChunk")
    previous: dict[tuple[int, str], object] = {}
    for run in DetectorRun.objects.filter(source="import").order_by("created_at", "pk").iterator():
        source = (run.config or {}).get("file", "")
        key = (run.project_id, source)
        since, previous[key] = previous.get(key), run.created_at
        if RunChunk.objects.filter(run=run).exists():
            continue
        dialogues = Dialogue.objects.filter(project_id=run.project_id, source=source, created_at__lte=run.created_at)
        if since is not None:
            dialogues = dialogues.filter(created_at__gt=since)
        ids = list(dialogues.order_by("pk").values_list("pk", flat=True))
        messages = Message.objects.filter(dialogue_id__in=ids).aggregate(n=Count("pk"))["n"]
        RunChunk.objects.create(run=run, index=0, dialogue_ids=ids, message_count=messages, status="done",
                                finished_at=run.created_at)
        DetectorRun.objects.filter(pk=run.pk).update(total_chunks=1, done_chunks=1)


class Migration(migrations.Migration):

    dependencies = [
        ("annotator", "0022_run_chunk_messages_done"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
