"""Per-annotator assignment counts kept in the write's transaction: the queue's pager
and progress and the dashboard's counts read these instead of counting the assignment table.
Counted once here from the assignments that exist. The index of unfinished items finds an
annotator's next item without reading a finished queue to its end."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def backfill(apps, schema_editor):
    Assignment = apps.get_model("annotator", "Assignment")
    QueueCount = apps.get_model("annotator", "QueueCount")
    per = {}
    for project_id, annotator_id, status, n in (Assignment.objects.order_by()
                                                .values_list("project_id", "annotator_id", "status")
                                                .annotate(n=models.Count("pk"))):
        per.setdefault((project_id, annotator_id), {})[status] = n
    QueueCount.objects.bulk_create(QueueCount(project_id=p, annotator_id=a, **c) for (p, a), c in per.items())


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0026_scale_counters'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='QueueCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('pending', models.IntegerField(default=0)),
                ('in_progress', models.IntegerField(default=0)),
                ('done', models.IntegerField(default=0)),
                ('skipped', models.IntegerField(default=0)),
                ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotator.project')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('project', 'annotator'), name='queue_count_once')],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(condition=models.Q(("status__in", ["pending", "in_progress"])),
                               fields=["annotator", "project", "order"], name="assignment_open_queue"),
        ),
    ]
