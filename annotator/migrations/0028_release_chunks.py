"""Release chunks: a release's second opinion split into chunks of dialogues, one Celery
task each, so that every worker shares it as they share a run's detection."""

import annotator.models.fields
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0027_queue_counts'),
    ]

    operations = [
        migrations.CreateModel(
            name='ReleaseChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('inputs', models.CharField(max_length=500)),
                ('dialogue_pks', annotator.models.fields.JSONField(default=dict, help_text="The chunk's dialogues: their ids -> rows.")),
                ('message_count', models.PositiveIntegerField(default=0)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('done', 'Done'), ('failed', 'Failed')], default='pending', max_length=8)),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('result', annotator.models.fields.JSONField(blank=True, default=dict)),
                ('candidates', annotator.models.fields.JSONField(blank=True, default=list)),
                ('seconds', models.FloatField(default=0)),
                ('error', models.TextField(blank=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('worker', models.CharField(blank=True, help_text='The Celery worker that finished it.', max_length=200)),
                ('export', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='audit_chunks', to='annotator.export')),
            ],
            options={
                'ordering': ['export', 'index'],
                'constraints': [models.UniqueConstraint(fields=('export', 'index'), name='release_chunk_unique_index')],
            },
        ),
    ]
