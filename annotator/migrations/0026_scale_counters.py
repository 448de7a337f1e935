"""A national corpus (a million messages): dialogues keep their message count, so a run is planned without
counting the message table in the request; a run's chunks record the worker's peak memory."""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Dialogue = apps.get_model("annotator", "Dialogue")
    Message = apps.get_model("annotator", "Message")
    counts = Message.objects.filter(dialogue_id=models.OuterRef("pk")).order_by().values("dialogue_id")
    Dialogue.objects.update(message_count=models.functions.Coalesce(
        models.Subquery(counts.annotate(n=models.Count("pk")).values("n")), 0))


class Migration(migrations.Migration):
    dependencies = [("annotator", "0025_api_tokens")]

    operations = [
        migrations.AddField(
            model_name="dialogue", name="message_count",
            field=models.PositiveIntegerField(
                default=0, help_text="Its messages, kept by the import that writes them: a run is planned from "
                                     "these counters instead of counting the message table in the request."),
        ),
        migrations.AddField(
            model_name="runchunk", name="peak_rss_mb",
            field=models.FloatField(
                blank=True, null=True, help_text="The worker process's peak resident memory when it finished the "
                                                 "chunk: flat across a run when chunks stream."),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
