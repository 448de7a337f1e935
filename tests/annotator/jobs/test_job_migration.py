"""The job-lifecycle migration keeps every existing row's meaning."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotator", "0007_export_gold_state_help_text")]
AFTER = [("annotator", "0009_job_lifecycle_fields")]


@pytest.mark.django_db(transaction=True)
def test_runs_and_exports_keep_their_state_through_the_migration():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    project = old.get_model("annotator", "Project").objects.create(name="P", slug="p")
    run = old.get_model("annotator", "DetectorRun").objects.create(
        project=project, detector="rules", status="cancelled", total_messages=40, done_messages=25)
    Export = old.get_model("annotator", "Export")
    built = Export.objects.create(project=project, kind="release", version=1, status="succeeded")
    queued = Export.objects.create(project=project, kind="gold", version=1, status="queued")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    run = new.get_model("annotator", "DetectorRun").objects.get(pk=run.pk)
    assert (run.status, run.progress_done, run.progress_total) == ("cancelled", 25, 40)
    Export = new.get_model("annotator", "Export")
    assert Export.objects.get(pk=built.pk).started_at == Export.objects.get(pk=built.pk).created_at
    assert Export.objects.get(pk=queued.pk).started_at is None

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)  # and back: the counts return to the old names
    old = executor.loader.project_state(BEFORE).apps
    assert old.get_model("annotator", "DetectorRun").objects.get(pk=run.pk).done_messages == 25
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes("annotator"))
