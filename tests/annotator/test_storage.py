"""Files through Django's storage API (annotator/storage.py): local directories by default, an
S3-compatible object store with BLINDSPOT_STORAGE_URL, so workers on other machines need no shared
disk. The S3 tests run against moto's S3 server (the ``s3`` fixture, tests/annotator/conftest.py),
started on 127.0.0.1 (a random port); without moto they skip, and under CI=true they fail instead.
The model-version registry on the same storage is tested in tests/annotator/tagger/test_model_store.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.urls import reverse

from annotator import model_store, storage
from annotator.models import Export
from annotator.services import exports as export_services
from annotator.services import releases as release_services
from annotator.services.exports import gold_export_build
from annotator.settings import object_storages
from tests.annotator.helpers import s3_objects

KEY = "test-release-key-0001"


@pytest.fixture(autouse=True)
def _surrogate_key(settings):
    settings.BLINDSPOT_SURROGATE_KEY = KEY
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


def _built(capture, start, **kwargs) -> Export:
    with capture(execute=True):
        export = start(**kwargs)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return export


# --- settings -------------------------------------------------------------------------------


def test_the_default_is_the_two_local_directories_and_follows_the_settings(settings, tmp_path):
    assert settings.STORAGES["exports"]["BACKEND"] == "annotator.storage.LocalDirStorage"
    assert storage.is_local(storage.exports_storage()) and storage.is_local(storage.models_storage())
    settings.BLINDSPOT_EXPORTS_DIR = tmp_path / "elsewhere"
    assert storage.exports_storage().location == str(tmp_path / "elsewhere")
    settings.BLINDSPOT_UPLOADS_DIR = tmp_path / "up"
    key = storage.upload_save(ContentFile(b"{}", name="c.jsonl"), ".jsonl")
    with storage.upload_path({"upload": key}) as path:
        assert path == tmp_path / "up" / key and path.read_bytes() == b"{}"
    with storage.upload_path({"path": "/given/c.jsonl"}) as path:  # the command line's own file
        assert path == Path("/given/c.jsonl")
    assert storage.work_dir(storage.exports_storage(), "p/gold-v001") == tmp_path / "elsewhere" / "p" / "gold-v001"
    # publishing and materialising are no-ops on local storage: the model directory is the model
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "models"
    assert model_store.model_materialise("demo/v1") == tmp_path / "models" / "demo" / "v1"
    config = {"model_path": "/anywhere/demo/v1", "model_dir": "/anywhere"}
    assert model_store.localise_tagger_config("tagger", config) == config


def test_a_storage_url_names_an_s3_bucket_a_prefix_and_options():
    found = object_storages("s3://corpus-files/blindspot/prod?endpoint_url=http://minio:9000&addressing_style=path",
                            access_key="AK", secret_key="SK")
    assert set(found) == {"exports", "models", "uploads"}
    exports = found["exports"]
    assert exports["BACKEND"] == "storages.backends.s3.S3Storage"
    assert exports["OPTIONS"]["bucket_name"] == "corpus-files"
    assert exports["OPTIONS"]["location"] == "blindspot/prod/exports"
    assert found["models"]["OPTIONS"]["location"] == "blindspot/prod/models"
    assert exports["OPTIONS"]["endpoint_url"] == "http://minio:9000"
    assert (exports["OPTIONS"]["access_key"], exports["OPTIONS"]["secret_key"]) == ("AK", "SK")
    assert object_storages("s3://b")["models"]["OPTIONS"]["location"] == "models"
    assert "access_key" not in object_storages("s3://b")["models"]["OPTIONS"]  # boto3's own chain
    assert object_storages("s3://b?verify=false")["models"]["OPTIONS"]["verify"] is False


@pytest.mark.parametrize(("url", "message"), [
    ("http://minio:9000/bucket", "must look like s3://"),
    ("s3:///prefix", "must look like s3://"),
    ("s3://bucket?endpoint=http://x", "unknown option"),
])
def test_a_bad_storage_url_is_a_clear_error(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        object_storages(url)


# --- an S3-compatible store (moto's server: the s3 fixture in tests/annotator/conftest.py) ----


@pytest.mark.django_db
def test_exports_and_releases_are_written_to_and_downloaded_from_s3(s3, settings, corpus, members, client,
                                                                   django_capture_on_commit_callbacks, tmp_path):
    gold = _built(django_capture_on_commit_callbacks, export_services.gold_export_start, project=corpus,
                  user=members["admin"])
    release = _built(django_capture_on_commit_callbacks, release_services.release_start, project=corpus,
                     user=members["admin"])
    # every listed file is in the bucket with the hash the record keeps; nothing stays on local disk
    for export, folder in ((gold, "gold-v001"), (release, "release-v001")):
        stored = s3_objects(s3, f"pfx/exports/test/{folder}/")
        assert set(stored) == {f["name"] for f in export.files}
        for f in export.files:
            assert hashlib.sha256(stored[f["name"]]).hexdigest() == f["sha256"], f["name"]
    mapping = s3_objects(s3, "pfx/exports/test/private/release-v001/")
    assert set(mapping) == {"mapping.jsonl", "candidates.jsonl", "leaks.private.json"}  # all private
    assert {json.loads(line)["original"] for line in mapping["mapping.jsonl"].splitlines()} == {
        "Maria", "maria.lopez@example.com", "d1", "d2"}  # and the keyed ids' originals
    assert "mapping.jsonl" not in s3_objects(s3, "pfx/exports/test/release-v001/")
    assert not settings.BLINDSPOT_EXPORTS_DIR.exists()
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))
    assert export_services.export_location(gold) == f"s3://{s3.bucket}/pfx/exports/test/gold-v001"

    # downloads stream from the store, for admins only
    client.force_login(members["admin"])
    response = client.get(reverse("export-download", args=["test", release.pk, "release.jsonl"]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = b"".join(response.streaming_content)
    assert body == s3_objects(s3, "pfx/exports/test/release-v001/")["release.jsonl"] and b"Maria" not in body
    response = client.get(reverse("release-mapping", args=["test", release.pk]))
    assert response.status_code == 200 and b"".join(response.streaming_content) == mapping["mapping.jsonl"]
    response = client.get(reverse("export-download", args=["test", gold.pk, "conll/gold.bio.conll"]))
    assert b"".join(response.streaming_content) == s3_objects(s3, "pfx/exports/test/gold-v001/conll/")["gold.bio.conll"]
    for name in ("annotator", "outsider"):
        client.force_login(members[name])
        response = client.get(reverse("export-download", args=["test", release.pk, "release.jsonl"]))
        assert response.status_code in (403, 404)
        assert client.get(reverse("release-mapping", args=["test", release.pk])).status_code in (403, 404)

    # a file gone from the store is a 404 with a reason, not a server error
    s3.delete_object(Bucket=s3.bucket, Key="pfx/exports/test/release-v001/leaks.json")
    client.force_login(members["admin"])
    assert client.get(reverse("export-download", args=["test", release.pk, "leaks.json"])).status_code == 404


@pytest.mark.django_db
def test_export_gold_command_copies_a_stored_export_out(s3, corpus, tmp_path):
    call_command("export_gold", "--project", "test", "--out", str(tmp_path / "copy"))
    export = Export.objects.get(project=corpus, kind="gold")
    for f in export.files:
        assert hashlib.sha256((tmp_path / "copy" / f["name"]).read_bytes()).hexdigest() == f["sha256"]


@pytest.mark.django_db
def test_a_rebuilt_export_replaces_what_an_earlier_attempt_left_in_the_store(s3, corpus, members,
                                                                             django_capture_on_commit_callbacks):
    gold = _built(django_capture_on_commit_callbacks, export_services.gold_export_start, project=corpus,
                  user=members["admin"])
    s3.put_object(Bucket=s3.bucket, Key="pfx/exports/test/gold-v001/stale-from-a-killed-attempt.txt", Body=b"x")
    Export.objects.filter(pk=gold.pk).update(status="failed")  # an admin retries it
    assert gold_export_build(export_id=gold.pk) == "built"
    gold.refresh_from_db()
    assert set(s3_objects(s3, "pfx/exports/test/gold-v001/")) == {f["name"] for f in gold.files}


@pytest.mark.django_db
def test_an_uploaded_corpus_is_stored_and_imported_from_the_store(s3, settings, members, client, corpus_bytes,
                                                                  django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.models import BackgroundJob, Message

    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/import/", {"file": SimpleUploadedFile("c.jsonl", corpus_bytes),
                                                   "spans_as": "gold"})
    assert response.status_code == 302
    job = BackgroundJob.objects.get(kind="import")
    assert job.status == "succeeded", job.error
    assert Message.objects.count() == 6
    assert s3_objects(s3, "pfx/uploads/") == {job.params["upload"]: corpus_bytes}  # kept for a retry
    assert not settings.BLINDSPOT_UPLOADS_DIR.exists()


@pytest.mark.django_db
def test_a_failed_build_leaves_no_staged_files_behind(s3, settings, corpus, members, monkeypatch,
                                                      django_capture_on_commit_callbacks, tmp_path):
    def broken(export, paths, key, step):
        paths["mapping"].write_text('{"original": "Maria"}\n', encoding="utf-8")
        raise RuntimeError("the worker lost its database connection")

    monkeypatch.setattr(release_services, "_deidentify", broken)
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        release_services.release_start(project=corpus, user=members["admin"])
    export = Export.objects.get(project=corpus, kind="release")
    assert export.status == "failed" and "lost its database connection" in export.error
    assert not any(p.is_file() for p in (tmp_path / "staging").rglob("*"))
    assert s3_objects(s3, "pfx/exports/") == {}
