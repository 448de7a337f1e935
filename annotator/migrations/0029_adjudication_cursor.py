"""The adjudication queue by cursor (no OFFSET at corpus size): each item carries its message's dialogue and
position, filled here for the items there are (one UPDATE, SQLite and PostgreSQL alike), and one
index serves the queue's whole order, risk first, then dialogue order."""

import django.db.models.deletion
from django.db import migrations, models

BACKFILL = """
UPDATE annotator_adjudicationitem SET
    dialogue_id = (SELECT m.dialogue_id FROM annotator_message m WHERE m.id = annotator_adjudicationitem.message_id),
    "position" = (SELECT m."position" FROM annotator_message m WHERE m.id = annotator_adjudicationitem.message_id)
"""


def backfill(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute(BACKFILL)
        if schema_editor.connection.vendor == "postgresql":
            # check the new foreign key now: ALTER TABLE refuses a table with pending trigger events
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0028_release_chunks'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='adjudicationitem',
            name='adjudication_queue',
        ),
        migrations.AddField(
            model_name='adjudicationitem',
            name='dialogue',
            field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING,
                                    related_name='+', to='annotator.dialogue'),
        ),
        migrations.AddField(
            model_name='adjudicationitem',
            name='position',
            field=models.PositiveIntegerField(null=True, help_text="The message's position in its dialogue."),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='adjudicationitem',
            name='dialogue',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DO_NOTHING,
                                    related_name='+', to='annotator.dialogue'),
        ),
        migrations.AlterField(
            model_name='adjudicationitem',
            name='position',
            field=models.PositiveIntegerField(help_text="The message's position in its dialogue."),
        ),
        migrations.AlterModelOptions(
            name='adjudicationitem',
            options={'ordering': ['-risk', '-risk_weight', 'dialogue_id', 'position', 'id']},
        ),
        migrations.AddIndex(
            model_name='adjudicationitem',
            index=models.Index(fields=['project', 'status', '-risk', '-risk_weight', 'dialogue', 'position', 'id'],
                               name='adjudication_queue_order'),
        ),
    ]
