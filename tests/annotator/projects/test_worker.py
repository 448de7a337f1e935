"""A real Celery worker, over Redis, writing into PostgreSQL."""

import pytest

from annotator import task_names as names
from tests.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis, pytest.mark.postgres]


# the task's name, and the name it had before annotator.<area>.<verb> (a message already queued)
@pytest.mark.parametrize("name", [names.PROJECTS_CORPUS_IMPORT, "annotator.tasks.corpus_import_job"])
def test_worker_imports_an_uploaded_corpus(celery_worker, project, corpus_bytes, settings, tmp_path, name):
    from annotator.celery import app
    from annotator.models import BackgroundJob, Message

    path = tmp_path / "upload.jsonl"
    path.write_bytes(corpus_bytes)
    job = BackgroundJob.objects.create(project=project, kind="import", params={"path": str(path), "name": "u.jsonl"})
    worker = celery_worker()
    app.send_task(name, args=[job.pk])
    wait_for(lambda: BackgroundJob.objects.get(pk=job.pk).is_finished, timeout=90, what=lambda: f"the import job\n{worker.output()}")
    job.refresh_from_db()
    assert job.status == "succeeded", job.error + worker.output()
    assert Message.objects.filter(project=project).count() == 6
    assert job.result["messages"] == 6
